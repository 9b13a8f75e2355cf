"""A small hand-made SNOMED CT RF2 Snapshot release, written by the tests.

The files have the exact RF2 names, headers and columns (UTF-8, tab-separated, CRLF line
ends as SNOMED International ships them). The content is a tiny invented sample using real
concept identifiers: a hierarchy under Clinical finding, body structures and morphologies,
attribute relationships (one grouped), a concrete value, US and GB English language refsets
with a dialect difference, an inactive concept with a REPLACED BY association, a simple
refset, MRCM domain and range rules and a module dependency refset.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from workbench.releases.kinds import Loaded
from workbench.releases.snomed.codesystem import SnomedCT
from workbench.releases.snomed.provider import SnomedProvider

TIME = "20250131"
CORE = "900000000000207008"
META = "900000000000012004"
FSN = "900000000000003001"
SYN = "900000000000013009"
US = "900000000000509007"
GB = "900000000000508004"
PREFERRED = "900000000000548007"
ACCEPTABLE = "900000000000549004"
PRIMITIVE = "900000000000074008"
DEFINED = "900000000000073002"
INFERRED = "900000000000011006"
EXISTENTIAL = "900000000000451002"
CASE = "900000000000448009"
VERSION = f"http://snomed.info/sct/{CORE}/version/{TIME}"

# code: (FSN, preferred synonym, defined, active, parents)
CONCEPTS: dict[str, tuple[str, str, bool, bool, tuple[str, ...]]] = {
    "138875005": ("SNOMED CT Concept (SNOMED RT+CTV3)", "SNOMED CT Concept", False, True, ()),
    "404684003": ("Clinical finding (finding)", "Clinical finding", False, True, ("138875005",)),
    "64572001": ("Disease (disorder)", "Disease", False, True, ("404684003",)),
    "49601007": (
        "Disorder of cardiovascular system (disorder)",
        "Disorder of cardiovascular system",
        True,
        True,
        ("64572001",),
    ),
    "56265001": ("Heart disease (disorder)", "Heart disease", True, True, ("49601007",)),
    "22298006": (
        "Myocardial infarction (disorder)",
        "Myocardial infarction",
        True,
        True,
        ("56265001",),
    ),
    "57054005": (
        "Acute myocardial infarction (disorder)",
        "Acute myocardial infarction",
        True,
        True,
        ("22298006",),
    ),
    "195967001": ("Asthma (disorder)", "Asthma", False, True, ("64572001",)),
    "271737000": ("Anemia (disorder)", "Anemia", False, True, ("64572001",)),
    "307530000": ("Old heart attack (disorder)", "Old heart attack", False, False, ()),
    "123037004": ("Body structure (body structure)", "Body structure", False, True, ("138875005",)),
    "80891009": (
        "Heart structure (body structure)",
        "Heart structure",
        False,
        True,
        ("123037004",),
    ),
    "39607008": ("Lung structure (body structure)", "Lung structure", False, True, ("123037004",)),
    "49755003": (
        "Morphologically abnormal structure (morphologic abnormality)",
        "Morphologically abnormal structure",
        False,
        True,
        ("123037004",),
    ),
    "55641003": ("Infarct (morphologic abnormality)", "Infarct", False, True, ("49755003",)),
    "4147007": ("Mass (morphologic abnormality)", "Mass", False, True, ("49755003",)),
    "373873005": (
        "Pharmaceutical / biologic product (product)",
        "Pharmaceutical / biologic product",
        False,
        True,
        ("138875005",),
    ),
    "322236009": (
        "Product containing precisely paracetamol 500 milligram/1 each oral tablet (clinical drug)",
        "Paracetamol 500 mg oral tablet",
        True,
        True,
        ("373873005",),
    ),
    "900000000000441003": (
        "SNOMED CT Model Component (metadata)",
        "SNOMED CT Model Component",
        False,
        True,
        ("138875005",),
    ),
    "410662002": (
        "Concept model attribute (attribute)",
        "Concept model attribute",
        False,
        True,
        ("900000000000441003",),
    ),
    "116680003": ("Is a (attribute)", "Is a", False, True, ("410662002",)),
    "363698007": ("Finding site (attribute)", "Finding site", False, True, ("410662002",)),
    "116676008": (
        "Associated morphology (attribute)",
        "Associated morphology",
        False,
        True,
        ("410662002",),
    ),
    "1142135004": (
        "Has presentation strength numerator value (attribute)",
        "Has presentation strength numerator value",
        False,
        True,
        ("410662002",),
    ),
    "723264001": (
        "Lateralizable body structure reference set (foundation metadata concept)",
        "Lateralizable body structure reference set",
        False,
        True,
        ("900000000000441003",),
    ),
    "900000000000526001": (
        "REPLACED BY association reference set (foundation metadata concept)",
        "REPLACED BY association reference set",
        False,
        True,
        ("900000000000441003",),
    ),
}

# (source, type, destination, group)
ATTRIBUTES = [
    ("56265001", "363698007", "80891009", 0),
    ("22298006", "363698007", "80891009", 1),
    ("22298006", "116676008", "55641003", 1),
    ("57054005", "363698007", "80891009", 1),
    ("57054005", "116676008", "55641003", 1),
    ("195967001", "363698007", "39607008", 0),
]
CONCRETE = [("322236009", "1142135004", "#500", 1)]
REFSET_MEMBERS = [("723264001", "39607008"), ("723264001", "80891009")]
# (refset, source, target, active)
ASSOCIATIONS = [
    ("900000000000526001", "307530000", "22298006", "1"),
    ("900000000000526001", "195967001", "64572001", "0"),
]
# extra (code, term, type, {refset: acceptability}) beyond each concept's FSN and synonym
EXTRA_DESCRIPTIONS = [
    ("271737000", "Anaemia", SYN, {GB: PREFERRED, US: ACCEPTABLE}),
    ("22298006", "Heart attack", SYN, {GB: ACCEPTABLE, US: ACCEPTABLE}),
    ("22298006", "Cardiac infarction", SYN, {}),
]
GB_NOT_PREFERRED = {"271737000"}


def _lines(header: str, rows: list[list[str]]) -> str:
    return "\r\n".join(["\t".join(header.split()), *("\t".join(r) for r in rows)]) + "\r\n"


def files() -> dict[str, str]:
    """The release's files: relative path -> text."""
    concepts, descriptions, language, relationships = [], [], [], []
    desc_id = 1000
    lang_id = 0

    def language_rows(description: str, acceptability: dict[str, str]) -> None:
        nonlocal lang_id
        for refset, value in acceptability.items():
            lang_id += 1
            language.append(
                [
                    f"00000000-0000-4000-8000-{lang_id:012d}",
                    TIME,
                    "1",
                    CORE,
                    refset,
                    description,
                    value,
                ]
            )

    for code, (fsn, pt, defined, active, _parents) in CONCEPTS.items():
        concepts.append(
            [code, TIME, "1" if active else "0", CORE, DEFINED if defined else PRIMITIVE]
        )
        for term, type_id in ((fsn, FSN), (pt, SYN)):
            desc_id += 1
            did = f"{desc_id}011"
            descriptions.append([did, TIME, "1", CORE, code, "en", type_id, term, CASE])
            gb = ACCEPTABLE if (code in GB_NOT_PREFERRED and type_id == SYN) else PREFERRED
            language_rows(did, {US: PREFERRED, GB: gb})
    for code, term, type_id, acceptability in EXTRA_DESCRIPTIONS:
        desc_id += 1
        did = f"{desc_id}011"
        descriptions.append([did, TIME, "1", CORE, code, "en", type_id, term, CASE])
        language_rows(did, acceptability)
    # an inactive description
    descriptions.append(["9999011", TIME, "0", CORE, "4147007", "en", SYN, "Tumour mass", CASE])
    rel_id = 100
    for code, (_fsn, _pt, _defined, _active, parents) in CONCEPTS.items():
        for parent in parents:
            rel_id += 1
            relationships.append(
                [
                    f"{rel_id}025",
                    TIME,
                    "1",
                    CORE,
                    code,
                    parent,
                    "0",
                    "116680003",
                    INFERRED,
                    EXISTENTIAL,
                ]
            )
    for source, type_id, destination, group in ATTRIBUTES:
        rel_id += 1
        relationships.append(
            [
                f"{rel_id}025",
                TIME,
                "1",
                CORE,
                source,
                destination,
                str(group),
                type_id,
                INFERRED,
                EXISTENTIAL,
            ]
        )
    # an inactive relationship that must be ignored
    relationships.append(
        [
            "99999025",
            TIME,
            "0",
            CORE,
            "195967001",
            "80891009",
            "0",
            "363698007",
            INFERRED,
            EXISTENTIAL,
        ]
    )
    concrete = [
        [f"{i + 1}026", TIME, "1", CORE, s, v, str(g), t, INFERRED, EXISTENTIAL]
        for i, (s, t, v, g) in enumerate(CONCRETE)
    ]
    members = [
        [f"10000000-0000-4000-8000-{i:012d}", TIME, "1", CORE, r, c]
        for i, (r, c) in enumerate(REFSET_MEMBERS)
    ]
    associations = [
        [f"20000000-0000-4000-8000-{i:012d}", TIME, a, CORE, r, s, t]
        for i, (r, s, t, a) in enumerate(ASSOCIATIONS)
    ]
    domain = [
        [
            "30000000-0000-4000-8000-000000000001",
            TIME,
            "1",
            META,
            "723561005",
            "363698007",
            "404684003",
            "1",
            "0..*",
            "0..1",
            "723597001",
            "723596005",
        ],
        [
            "30000000-0000-4000-8000-000000000002",
            TIME,
            "1",
            META,
            "723561005",
            "116676008",
            "404684003",
            "1",
            "0..*",
            "0..1",
            "723597001",
            "723596005",
        ],
        [
            "30000000-0000-4000-8000-000000000003",
            TIME,
            "1",
            META,
            "723561005",
            "1142135004",
            "373873005",
            "1",
            "0..*",
            "0..1",
            "723597001",
            "723596005",
        ],
        [  # a reference set as the domain: its members (like 723264001 for Laterality)
            "30000000-0000-4000-8000-000000000004",
            TIME,
            "1",
            META,
            "723561005",
            "1142135004",
            "723264001",
            "1",
            "0..*",
            "0..1",
            "723598006",
            "723596005",
        ],
        [  # a domain concept this release lacks: it cannot judge
            "30000000-0000-4000-8000-000000000005",
            TIME,
            "1",
            META,
            "723561005",
            "116676008",
            "999999001",
            "1",
            "0..*",
            "0..1",
            "723598006",
            "723596005",
        ],
    ]
    range_ = [
        [
            "40000000-0000-4000-8000-000000000001",
            TIME,
            "1",
            META,
            "723562003",
            "363698007",
            "<< 123037004 |Body structure|",
            "<< 404684003: [0..*] { [0..1] 363698007 = << 123037004 }",
            "723597001",
            "723596005",
        ],
        [
            "40000000-0000-4000-8000-000000000002",
            TIME,
            "1",
            META,
            "723562003",
            "116676008",
            "<< 49755003 |Morphologically abnormal structure|",
            "<< 404684003: [0..*] { [0..1] 116676008 = << 49755003 }",
            "723597001",
            "723596005",
        ],
        [
            "40000000-0000-4000-8000-000000000003",
            TIME,
            "1",
            META,
            "723562003",
            "1142135004",
            "dec(>#0..)",
            "<< 373873005: [0..*] { [0..1] 1142135004 = dec(>#0..) }",
            "723597001",
            "723596005",
        ],
    ]
    dependency = [
        [
            "50000000-0000-4000-8000-000000000001",
            TIME,
            "1",
            CORE,
            "900000000000534007",
            META,
            TIME,
            TIME,
        ],
    ]
    t, r = "Snapshot/Terminology", "Snapshot/Refset"
    return {
        f"{t}/sct2_Concept_Snapshot_INT_{TIME}.txt": _lines(
            "id effectiveTime active moduleId definitionStatusId", concepts
        ),
        f"{t}/sct2_Description_Snapshot-en_INT_{TIME}.txt": _lines(
            "id effectiveTime active moduleId conceptId languageCode typeId term "
            "caseSignificanceId",
            descriptions,
        ),
        f"{t}/sct2_Relationship_Snapshot_INT_{TIME}.txt": _lines(
            "id effectiveTime active moduleId sourceId destinationId relationshipGroup typeId "
            "characteristicTypeId modifierId",
            relationships,
        ),
        f"{t}/sct2_RelationshipConcreteValues_Snapshot_INT_{TIME}.txt": _lines(
            "id effectiveTime active moduleId sourceId value relationshipGroup typeId "
            "characteristicTypeId modifierId",
            concrete,
        ),
        f"{r}/Language/der2_cRefset_LanguageSnapshot-en_INT_{TIME}.txt": _lines(
            "id effectiveTime active moduleId refsetId referencedComponentId acceptabilityId",
            language,
        ),
        f"{r}/Content/der2_Refset_SimpleSnapshot_INT_{TIME}.txt": _lines(
            "id effectiveTime active moduleId refsetId referencedComponentId", members
        ),
        f"{r}/Content/der2_cRefset_AssociationSnapshot_INT_{TIME}.txt": _lines(
            "id effectiveTime active moduleId refsetId referencedComponentId targetComponentId",
            associations,
        ),
        f"{r}/Metadata/der2_cissccRefset_MRCMAttributeDomainSnapshot_INT_{TIME}.txt": _lines(
            "id effectiveTime active moduleId refsetId referencedComponentId domainId grouped "
            "attributeCardinality attributeInGroupCardinality ruleStrengthId contentTypeId",
            domain,
        ),
        f"{r}/Metadata/der2_ssccRefset_MRCMAttributeRangeSnapshot_INT_{TIME}.txt": _lines(
            "id effectiveTime active moduleId refsetId referencedComponentId rangeConstraint "
            "attributeRule ruleStrengthId contentTypeId",
            range_,
        ),
        f"{r}/Metadata/der2_ssRefset_ModuleDependencySnapshot_INT_{TIME}.txt": _lines(
            "id effectiveTime active moduleId refsetId referencedComponentId "
            "sourceEffectiveTime targetEffectiveTime",
            dependency,
        ),
    }


def write(root: Path, *, as_zip: bool = False, edit: dict[str, str] | None = None) -> Path:
    """Write the release under ``root`` (a folder, or ``root/release.zip``); ``edit`` replaces
    or adds files (relative path -> text). Returns the folder or zip path."""
    content = {**files(), **(edit or {})}
    top = f"SnomedCT_Test_{TIME}"
    if as_zip:
        root.mkdir(parents=True, exist_ok=True)
        path = root / "release.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, text in content.items():
                zf.writestr(f"{top}/{name}", text.encode("utf-8"))
        return path
    for name, text in content.items():
        target = root / top / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))
    return root / top


def concept_file(text: str) -> dict[str, str]:
    """An ``edit`` replacing the concept file."""
    return {f"Snapshot/Terminology/sct2_Concept_Snapshot_INT_{TIME}.txt": text}


def association_file(rows: list[tuple[str, str, str, str]]) -> dict[str, str]:
    """An ``edit`` replacing the association refset with ``(refset, source, target, active)``
    rows."""
    lines = [
        [f"21000000-0000-4000-8000-{i:012d}", TIME, a, CORE, r, s, t]
        for i, (r, s, t, a) in enumerate(rows)
    ]
    return {
        f"Snapshot/Refset/Content/der2_cRefset_AssociationSnapshot_INT_{TIME}.txt": _lines(
            "id effectiveTime active moduleId refsetId referencedComponentId targetComponentId",
            lines,
        )
    }


def map_files(
    simple: list[tuple[str, str, str]],
    extended: list[tuple[str, str, int, int, str, str, str, str, str]],
) -> dict[str, str]:
    """An ``edit`` adding a simple map refset file (``(refset, source, mapTarget)`` rows) and
    an extended map refset file (``(refset, source, mapGroup, mapPriority, mapRule,
    mapAdvice, mapTarget, correlationId, active)`` rows)."""
    simple_lines = [
        [f"22000000-0000-4000-8000-{i:012d}", TIME, "1", CORE, r, s, t]
        for i, (r, s, t) in enumerate(simple)
    ]
    extended_lines = []
    for i, (r, s, g, p, rule, advice, t, c, a) in enumerate(extended):
        uuid = f"23000000-0000-4000-8000-{i:012d}"
        extended_lines.append(
            [uuid, TIME, a, CORE, r, s, str(g), str(p), rule, advice, t, c, "447637006"]
        )
    base = "id effectiveTime active moduleId refsetId referencedComponentId"
    return {
        f"Snapshot/Refset/Map/der2_sRefset_SimpleMapSnapshot_INT_{TIME}.txt": _lines(
            f"{base} mapTarget", simple_lines
        ),
        f"Snapshot/Refset/Map/der2_iisssccRefset_ExtendedMapSnapshot_INT_{TIME}.txt": _lines(
            f"{base} mapGroup mapPriority mapRule mapAdvice mapTarget correlationId mapCategoryId",
            extended_lines,
        ),
    }


def opened(loaded: Loaded) -> tuple[SnomedCT, bool]:
    """The ``SnomedCT`` a release kind's ``load`` opened, and whether it imported it now."""
    provider = loaded.provider
    assert isinstance(provider, SnomedProvider)
    return provider.sct, loaded.imported
