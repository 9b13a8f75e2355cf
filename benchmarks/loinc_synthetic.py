"""Write a synthetic LOINC release with the shape and size of a real one, in the exact layout
(``LoincTable/Loinc.csv`` with its 40 columns, ``AccessoryFiles/…``: parts, primary part
links, answer lists and their links, the component hierarchy, consumer names, two linguistic
variants), every field quoted, UTF-8, LF line ends.

Default size: 100,000 terms, 60,000 parts (6 primary links per term), 5,000 answer lists of
5 answers, a hierarchy of 3 levels of groupers above the components, 50,000 consumer names,
German and Chinese variants of 50,000 terms each. The content is random: codes, names.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

LOINC_HEADER = [
    "LOINC_NUM",
    "COMPONENT",
    "PROPERTY",
    "TIME_ASPCT",
    "SYSTEM",
    "SCALE_TYP",
    "METHOD_TYP",
    "CLASS",
    "VersionLastChanged",
    "CHNG_TYPE",
    "DefinitionDescription",
    "STATUS",
    "CONSUMER_NAME",
    "CLASSTYPE",
    "FORMULA",
    "EXMPL_ANSWERS",
    "SURVEY_QUEST_TEXT",
    "SURVEY_QUEST_SRC",
    "UNITSREQUIRED",
    "RELATEDNAMES2",
    "SHORTNAME",
    "ORDER_OBS",
    "HL7_FIELD_SUBFIELD_ID",
    "EXTERNAL_COPYRIGHT_NOTICE",
    "EXAMPLE_UNITS",
    "LONG_COMMON_NAME",
    "EXAMPLE_UCUM_UNITS",
    "STATUS_REASON",
    "STATUS_TEXT",
    "CHANGE_REASON_PUBLIC",
    "COMMON_TEST_RANK",
    "COMMON_ORDER_RANK",
    "HL7_ATTACHMENT_STRUCTURE",
    "EXTERNAL_COPYRIGHT_LINK",
    "PanelType",
    "AskAtOrderEntry",
    "AssociatedObservations",
    "VersionFirstReleased",
    "ValidHL7AttachmentRequest",
    "DisplayName",
]
AXES = ("COMPONENT", "PROPERTY", "TIME", "SYSTEM", "SCALE", "METHOD")
PROPERTY_OF = {"TIME": "TIME_ASPCT", "SCALE": "SCALE_TYP", "METHOD": "METHOD_TYP"}
VARIANT_HEADER = [
    "LOINC_NUM",
    "COMPONENT",
    "PROPERTY",
    "TIME_ASPCT",
    "SYSTEM",
    "SCALE_TYP",
    "METHOD_TYP",
    "CLASS",
    "SHORTNAME",
    "LONG_COMMON_NAME",
    "RELATEDNAMES2",
    "LinguisticVariantDisplayName",
]
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "kappa",
    "sigma",
    "omega",
    "serum",
    "plasma",
    "blood",
    "urine",
    "mass",
    "moles",
]


def check_digit(number: int) -> str:
    """A LOINC-shaped code ``number-digit`` (the digit is LOINC's mod 10, Luhn-like)."""
    digits = [int(c) for c in str(number)][::-1]
    total = sum(d if i % 2 else sum(divmod(2 * d, 10)) for i, d in enumerate(digits))
    return f"{number}-{(10 - total % 10) % 10}"


def _writer(path: Path, header: list[str]) -> tuple[object, csv.DictWriter[str]]:
    path.parent.mkdir(parents=True, exist_ok=True)
    stream = path.open("w", encoding="utf-8", newline="")
    writer = csv.DictWriter(stream, header, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writeheader()
    return stream, writer


def _name(rng: random.Random, n: int = 3) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def write(
    root: Path, *, terms: int = 100_000, parts: int = 60_000, lists: int = 5_000, seed: int = 7
) -> Path:
    """Write the release into ``root`` and return it."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    # parts: per axis a pool; components are most of them
    pools: dict[str, list[tuple[str, str]]] = {a: [] for a in AXES}
    sizes = {"COMPONENT": parts - 600, "PROPERTY": 100, "TIME": 100, "SYSTEM": 200}
    sizes.update({"SCALE": 20, "METHOD": 180})
    number = 1000
    for axis in AXES:
        for i in range(sizes[axis]):
            number += 1
            pools[axis].append((f"LP{check_digit(number)}", f"{axis.lower()} {i} {_name(rng, 2)}"))
    stream, part_file = _writer(
        root / "AccessoryFiles/PartFile/Part.csv",
        ["PartNumber", "PartTypeName", "PartName", "PartDisplayName", "Status"],
    )
    for axis, pool in pools.items():
        for code, name in pool:
            part_file.writerow(
                {
                    "PartNumber": code,
                    "PartTypeName": axis,
                    "PartName": name,
                    "PartDisplayName": name.title(),
                    "Status": "ACTIVE",
                }
            )
    stream.close()  # type: ignore[attr-defined]
    # terms, their links, consumer names, variants
    files = {
        "loinc": _writer(root / "LoincTable/Loinc.csv", LOINC_HEADER),
        "links": _writer(
            root / "AccessoryFiles/PartFile/LoincPartLink_Primary.csv",
            [
                "LoincNumber",
                "LongCommonName",
                "PartNumber",
                "PartName",
                "PartCodeSystem",
                "PartTypeName",
                "LinkTypeName",
                "Property",
            ],
        ),
        "consumer": _writer(
            root / "AccessoryFiles/ConsumerName/ConsumerName.csv", ["LoincNumber", "ConsumerName"]
        ),
        "de": _writer(
            root / "AccessoryFiles/LinguisticVariants/deDE15LinguisticVariant.csv", VARIANT_HEADER
        ),
        "zh": _writer(
            root / "AccessoryFiles/LinguisticVariants/zhCN5LinguisticVariant.csv", VARIANT_HEADER
        ),
    }
    codes: list[str] = []
    component_of: list[str] = []
    for i in range(terms):
        code = check_digit(10_000 + i)
        codes.append(code)
        chosen = {axis: rng.choice(pools[axis]) for axis in AXES}
        component_of.append(chosen["COMPONENT"][0])
        long_name = f"{chosen['COMPONENT'][1]} [{chosen['PROPERTY'][1]}] in {chosen['SYSTEM'][1]}"
        status = "DEPRECATED" if i % 97 == 0 else "ACTIVE"
        files["loinc"][1].writerow(
            {
                "LOINC_NUM": code,
                "COMPONENT": chosen["COMPONENT"][1],
                "PROPERTY": chosen["PROPERTY"][1],
                "TIME_ASPCT": chosen["TIME"][1],
                "SYSTEM": chosen["SYSTEM"][1],
                "SCALE_TYP": chosen["SCALE"][1],
                "METHOD_TYP": chosen["METHOD"][1] if i % 3 == 0 else "",
                "CLASS": rng.choice(["CHEM", "HEM/BC", "MICRO", "SURVEY.X", "PANEL.Y"]),
                "VersionLastChanged": rng.choice(["2.78", "2.79", "2.80"]),
                "CHNG_TYPE": "MIN",
                "DefinitionDescription": _name(rng, 8) if i % 10 == 0 else "",
                "STATUS": status,
                "CLASSTYPE": str(rng.randint(1, 4)),
                "UNITSREQUIRED": "N",
                "RELATEDNAMES2": "; ".join(rng.choice(WORDS) for _ in range(6)),
                "SHORTNAME": long_name[:40],
                "ORDER_OBS": rng.choice(["Both", "Observation", "Order"]),
                "LONG_COMMON_NAME": long_name,
                "COMMON_TEST_RANK": "0",
                "COMMON_ORDER_RANK": "0",
                "VersionFirstReleased": "2.50",
            }
        )
        for axis in AXES:
            if axis == "METHOD" and i % 3:
                continue
            part, part_name = chosen[axis]
            files["links"][1].writerow(
                {
                    "LoincNumber": code,
                    "LongCommonName": long_name,
                    "PartNumber": part,
                    "PartName": part_name,
                    "PartCodeSystem": "http://loinc.org",
                    "PartTypeName": axis,
                    "LinkTypeName": "Primary",
                    "Property": f"http://loinc.org/property/{PROPERTY_OF.get(axis, axis)}",
                }
            )
        if i % 2 == 0:
            files["consumer"][1].writerow({"LoincNumber": code, "ConsumerName": long_name.title()})
            files["de"][1].writerow(
                {
                    "LOINC_NUM": code,
                    "COMPONENT": "Komponente",
                    "LONG_COMMON_NAME": f"{long_name} (de)",
                }
            )
            files["zh"][1].writerow({"LOINC_NUM": code, "COMPONENT": "成分", "PROPERTY": "浓度"})
    for stream, _ in files.values():
        stream.close()  # type: ignore[attr-defined]
    (root / "LoincTable/MapTo.csv").write_text(
        '"LOINC","MAP_TO","COMMENT"\n'
        + "".join(f'"{codes[i]}","{codes[i + 1]}",""\n' for i in range(0, terms - 1, 97)),
        encoding="utf-8",
    )
    languages = root / "AccessoryFiles/LinguisticVariants/LinguisticVariants.csv"
    languages.write_text(
        '"ID","ISO_LANGUAGE","ISO_COUNTRY","LANGUAGE_NAME","PRODUCER"\n'
        '"15","de","DE","German (GERMANY)","synthetic"\n'
        '"5","zh","CN","Chinese (CHINA)","synthetic"\n',
        encoding="utf-8",
    )
    # answer lists
    stream, answers = _writer(
        root / "AccessoryFiles/AnswerFile/AnswerList.csv",
        [
            "AnswerListId",
            "AnswerListName",
            "AnswerListOID",
            "ExtDefinedYN",
            "ExtDefinedAnswerListCodeSystem",
            "ExtDefinedAnswerListLink",
            "AnswerStringId",
            "LocalAnswerCode",
            "LocalAnswerCodeSystem",
            "SequenceNumber",
            "DisplayText",
            "ExtCodeId",
            "ExtCodeDisplayName",
            "ExtCodeSystem",
            "ExtCodeSystemVersion",
            "ExtCodeSystemCopyrightNotice",
            "SubsequentTextPrompt",
            "Description",
            "Score",
        ],
    )
    link_stream, answer_links = _writer(
        root / "AccessoryFiles/AnswerFile/LoincAnswerListLink.csv",
        [
            "LoincNumber",
            "LongCommonName",
            "AnswerListId",
            "AnswerListName",
            "AnswerListLinkType",
            "ApplicableContext",
        ],
    )
    for j in range(lists):
        list_code = f"LL{check_digit(100 + j)}"
        for k in range(5):
            answers.writerow(
                {
                    "AnswerListId": list_code,
                    "AnswerListName": f"list {j}",
                    "AnswerListOID": f"1.3.6.1.4.1.12009.10.1.{j}",
                    "ExtDefinedYN": "N",
                    "AnswerStringId": f"LA{check_digit(1000 + j * 5 + k)}",
                    "SequenceNumber": str(k + 1),
                    "DisplayText": f"answer {k} of {j}",
                }
            )
        answer_links.writerow(
            {
                "LoincNumber": codes[j * 7 % terms],
                "AnswerListId": list_code,
                "AnswerListName": f"list {j}",
                "AnswerListLinkType": "EXAMPLE",
            }
        )
    stream.close()  # type: ignore[attr-defined]
    link_stream.close()  # type: ignore[attr-defined]
    # the component hierarchy: root > 10 classes > 100 groups > components > terms
    stream, tree = _writer(
        root / "AccessoryFiles/ComponentHierarchyBySystem/ComponentHierarchyBySystem.csv",
        ["PATH_TO_ROOT", "SEQUENCE", "IMMEDIATE_PARENT", "CODE", "CODE_TEXT"],
    )
    top = f"LP{check_digit(900_000)}"
    tree.writerow({"SEQUENCE": "1", "CODE": top, "CODE_TEXT": "{component}"})
    classes = [f"LP{check_digit(900_001 + i)}" for i in range(10)]
    groups = [f"LP{check_digit(900_100 + i)}" for i in range(100)]
    for i, code in enumerate(classes):
        tree.writerow(
            {
                "PATH_TO_ROOT": top,
                "SEQUENCE": str(i + 1),
                "IMMEDIATE_PARENT": top,
                "CODE": code,
                "CODE_TEXT": f"class {i}",
            }
        )
    for i, code in enumerate(groups):
        parent = classes[i % 10]
        tree.writerow(
            {
                "PATH_TO_ROOT": f"{top}.{parent}",
                "SEQUENCE": str(i + 1),
                "IMMEDIATE_PARENT": parent,
                "CODE": code,
                "CODE_TEXT": f"group {i}",
            }
        )
    for i, (code, name) in enumerate(pools["COMPONENT"]):
        group = groups[i % 100]
        path = f"{top}.{classes[(i % 100) % 10]}.{group}"
        tree.writerow(
            {
                "PATH_TO_ROOT": path,
                "SEQUENCE": str(i + 1),
                "IMMEDIATE_PARENT": group,
                "CODE": code,
                "CODE_TEXT": name,
            }
        )
    for i, (code, component) in enumerate(zip(codes, component_of, strict=True)):
        tree.writerow(
            {
                "PATH_TO_ROOT": "…",
                "SEQUENCE": str(i + 1),
                "IMMEDIATE_PARENT": component,
                "CODE": code,
                "CODE_TEXT": code,
            }
        )
    stream.close()  # type: ignore[attr-defined]
    return root
