"""SNOMED CT implicit ConceptMaps (``?fhir_cm={refsetId}``) from the historical association
refsets of a loaded release: in Python, in column translation and over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
import snomed_rf2
from http_support import TOKEN, assert_outcome, client

from workbench import Workbench
from workbench.terminology.conceptmap import ConceptMapNotFoundError

SCT = "http://snomed.info/sct"
REPLACED_BY, SAME_AS, WAS_A, POSSIBLY = (
    "900000000000526001",
    "900000000000527005",
    "900000000000528000",
    "900000000000523009",
)
OLD, ASTHMA = "307530000", "195967001"  # inactive "Old heart attack"; asthma (active)
ROWS = [
    (REPLACED_BY, OLD, "22298006", "1"),
    (REPLACED_BY, ASTHMA, "64572001", "0"),  # an inactive row is no mapping
    (SAME_AS, OLD, "57054005", "1"),
    (WAS_A, OLD, "56265001", "1"),
    (POSSIBLY, OLD, "22298006", "1"),
    (POSSIBLY, OLD, "57054005", "1"),
]


def cm(refset: str, base: str = SCT) -> str:
    return f"{base}?fhir_cm={refset}"


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory) -> Workbench:
    release = snomed_rf2.write(
        tmp_path_factory.mktemp("rf2"), edit=snomed_rf2.association_file(ROWS)
    )
    bench = Workbench()
    bench.load_release(release, cache_dir=tmp_path_factory.mktemp("cache"), progress=False)
    return bench


@pytest.fixture(scope="module")
def http(wb: Workbench) -> Iterator[httpx.Client]:
    with wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        yield session


CASES = [
    # (url, code, reverse, result, [(equivalence, code, display)])
    (cm(REPLACED_BY), OLD, False, True, [("equivalent", "22298006", "Myocardial infarction")]),
    (cm(REPLACED_BY), ASTHMA, False, False, []),
    (
        cm(SAME_AS),
        OLD,
        False,
        True,
        [("equal", "57054005", "Acute myocardial infarction")],
    ),
    (cm(WAS_A), OLD, False, True, [("wider", "56265001", "Heart disease")]),
    (
        cm(POSSIBLY),
        OLD,
        False,
        True,
        [
            ("inexact", "22298006", "Myocardial infarction"),
            ("inexact", "57054005", "Acute myocardial infarction"),
        ],
    ),
    # the edition URI may stand before the ?
    (
        cm(REPLACED_BY, snomed_rf2.VERSION),
        OLD,
        False,
        True,
        [("equivalent", "22298006", "Myocardial infarction")],
    ),
    # reverse: what did 22298006 replace?
    (cm(REPLACED_BY), "22298006", True, True, [("equivalent", OLD, "Old heart attack")]),
    (cm(REPLACED_BY), "64572001", True, False, []),
]


@pytest.mark.parametrize(("url", "code", "reverse", "result", "matches"), CASES)
def test_python(
    wb: Workbench,
    url: str,
    code: str,
    reverse: bool,
    result: bool,
    matches: list[tuple[str, str, str]],
) -> None:
    t = wb.translate(code, system=SCT, url=url, reverse=reverse)
    assert t.result is result
    assert [(m.equivalence, m.code, m.display) for m in t.match_list] == matches
    assert all(m.system == SCT and m.source == f"{url}|{snomed_rf2.VERSION}" for m in t.match_list)
    assert (t.message is None) is result


def _http_matches(body: dict[str, Any]) -> tuple[bool, list[tuple[str, str, str]]]:
    result = next(p["valueBoolean"] for p in body["parameter"] if p["name"] == "result")
    out = []
    for p in body["parameter"]:
        if p["name"] == "match":
            parts = {q["name"]: q for q in p["part"]}
            coding = parts["concept"]["valueCoding"]
            out.append((parts["equivalence"]["valueCode"], coding["code"], coding["display"]))
    return result, out


@pytest.mark.parametrize(("url", "code", "reverse", "result", "matches"), CASES)
def test_http(
    http: httpx.Client,
    url: str,
    code: str,
    reverse: bool,
    result: bool,
    matches: list[tuple[str, str, str]],
) -> None:
    params = {"url": url, "code": code, "system": SCT, "reverse": str(reverse).lower()}
    response = http.get("/ConceptMap/$translate", params=params)
    assert response.status_code == 200, response.text
    assert _http_matches(response.json()) == (result, matches)


@pytest.mark.parametrize(
    "url",
    [
        cm("123456789"),  # not an association refset of the release
        cm(REPLACED_BY, "http://snomed.info/sct/11000172109/version/20250315"),  # another edition
        f"{SCT}?fhir_cm=",
    ],
)
def test_unknown_implicit_maps(wb: Workbench, http: httpx.Client, url: str) -> None:
    with pytest.raises(ConceptMapNotFoundError, match=url.replace("?", r"\?")):
        wb.translate(OLD, url=url)
    response = http.get("/ConceptMap/$translate", params={"url": url, "code": OLD})
    assert_outcome(response, 404, "not-found", "ConceptMap .*fhir_cm")


def test_mappings_frame_and_columns(wb: Workbench) -> None:
    rows = wb.mappings(cm(POSSIBLY))
    assert rows[["source_code", "target_code", "equivalence"]].values.tolist() == [
        [OLD, "22298006", "inexact"],
        [OLD, "57054005", "inexact"],
    ]
    data = pd.DataFrame({"code": [OLD, ASTHMA, None, "22298006", OLD]}, dtype=object)
    out = wb.translate_column(data, cm(REPLACED_BY), code="code", system=SCT)
    assert out["target_code"].tolist() == ["22298006", None, None, None, "22298006"]
    assert out["target_display"].tolist()[0] == "Myocardial infarction"
    assert out["result"].astype(object).fillna("NA").tolist() == [True, False, "NA", False, True]
    for code, row in zip(data["code"], out.itertuples(index=False), strict=True):
        if code is not None:
            assert bool(row.result) is wb.translate(code, system=SCT, url=cm(REPLACED_BY)).result


def test_the_fixture_release_without_edits(tmp_path: Path) -> None:
    """The generator's own association rows (one active REPLACED BY)."""
    bench = Workbench()
    bench.load_release(snomed_rf2.write(tmp_path / "rf2"), cache_dir=tmp_path / "c", progress=False)
    t = bench.translate(OLD, url=cm(REPLACED_BY))
    assert [(m.equivalence, m.code) for m in t.match_list] == [("equivalent", "22298006")]


# --- map refsets ------------------------------------------------------------------------------

CTV3, ICD10 = "900000000000497000", "447562003"
NOT_SPECIFIED, NOT_MAPPABLE = "447561005", "447556008"
AGE_RULE = "IFA 445518008 | Age at onset of clinical finding (observable entity) | < 12.0 years"
SIMPLE = [(CTV3, "22298006", "X200E"), (CTV3, "57054005", "X200F")]
EXTENDED = [
    (ICD10, "22298006", 1, 1, "TRUE", "ALWAYS I21.9", "I21.9", NOT_SPECIFIED, "1"),
    (ICD10, ASTHMA, 1, 1, AGE_RULE, "IF AGE < 12 CHOOSE J45.0", "J45.0", NOT_SPECIFIED, "1"),
    (ICD10, ASTHMA, 1, 2, "OTHERWISE TRUE", "ALWAYS J45.9", "J45.9", NOT_SPECIFIED, "1"),
    (ICD10, "271737000", 1, 1, "TRUE", "CANNOT BE CLASSIFIED", "", NOT_MAPPABLE, "1"),
    (ICD10, "56265001", 1, 1, "TRUE", "ALWAYS I51.9", "I51.9", NOT_SPECIFIED, "0"),
]
ICD10_SYSTEM = "http://hl7.org/fhir/sid/icd-10"


@pytest.fixture(scope="module")
def maps_wb(tmp_path_factory: pytest.TempPathFactory) -> Workbench:
    release = snomed_rf2.write(
        tmp_path_factory.mktemp("rf2-maps"), edit=snomed_rf2.map_files(SIMPLE, EXTENDED)
    )
    bench = Workbench()
    bench.load_release(release, cache_dir=tmp_path_factory.mktemp("cache"), progress=False)
    return bench


MAP_CASES = [
    # (refset, code, reverse, result, [(equivalence, system, code)])
    (CTV3, "22298006", False, True, [("equivalent", "http://read.info/ctv3", "X200E")]),
    (CTV3, "X200F", True, True, [("equivalent", SCT, "57054005")]),
    (CTV3, "64572001", False, False, []),
    (ICD10, "22298006", False, True, [("relatedto", ICD10_SYSTEM, "I21.9")]),
    (
        ICD10,
        ASTHMA,
        False,
        True,
        [("relatedto", ICD10_SYSTEM, "J45.0"), ("relatedto", ICD10_SYSTEM, "J45.9")],
    ),
    (ICD10, "271737000", False, False, [("unmatched", None, None)]),
    (ICD10, "56265001", False, False, []),  # its only row is inactive
]


@pytest.mark.parametrize(("refset", "code", "reverse", "result", "matches"), MAP_CASES)
def test_map_refsets(
    maps_wb: Workbench,
    refset: str,
    code: str,
    reverse: bool,
    result: bool,
    matches: list[tuple[str, str | None, str | None]],
) -> None:
    t = maps_wb.translate(code, url=cm(refset), reverse=reverse)
    assert t.result is result
    assert [(m.equivalence, m.system, m.code) for m in t.match_list] == matches


def test_map_refset_rules_are_comments_and_members_stay(maps_wb: Workbench) -> None:
    rows = maps_wb.mappings(cm(ICD10))
    asthma = rows[rows["source_code"] == ASTHMA]
    assert asthma["comment"].tolist() == [
        f"map group 1, priority 1, rule {AGE_RULE}, advice IF AGE < 12 CHOOSE J45.0",
        "map group 1, priority 2, rule OTHERWISE TRUE, advice ALWAYS J45.9",
    ]
    assert set(rows["source_code"]) == {"22298006", ASTHMA, "271737000"}
    members = maps_wb.expand(f"{SCT}?fhir_vs=refset/{CTV3}").frame["code"]
    assert set(members) == {"22298006", "57054005"}


def test_map_refset_over_http(maps_wb: Workbench) -> None:
    with maps_wb.serve(port=0, token=TOKEN) as handle, client(handle.url) as session:
        response = session.get(
            "/ConceptMap/$translate", params={"url": cm(ICD10), "code": ASTHMA, "system": SCT}
        )
        assert response.status_code == 200, response.text
        matches = [p for p in response.json()["parameter"] if p["name"] == "match"]
        codes = [
            next(q["valueCoding"]["code"] for q in m["part"] if q["name"] == "concept")
            for m in matches
        ]
        assert codes == ["J45.0", "J45.9"]
        out = maps_wb.translate_column(
            pd.Series(["22298006", ASTHMA, "271737000", None], dtype=object), cm(ICD10), system=SCT
        )
        assert out["target_code"].tolist() == ["I21.9", "J45.0", None, None]
        assert out["matches"].tolist() == [1, 2, 1, 0]
