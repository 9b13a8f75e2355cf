"""ICD-10-CM loaded from the CMS tabular XML shipped in ``simple-icd-10-cm``: the codes (seven-
character extensions included, checked against the package's official code list), the store in
the release cache, the Workbench API and the server."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest
from http_support import served_fixtures, values

from workbench import Workbench
from workbench.errors import DuplicateCanonicalError
from workbench.releases.icd10cm.provider import Icd10cmProvider
from workbench.terminology.concept_check import CheckOptions
from workbench.terminology.requests import ValidateRequest
from workbench.terminology.validate.plain import Plain, plain_member
from workbench.terminology.validate.whole import WholeSystem

ICD = "http://hl7.org/fhir/sid/icd-10-cm"
ISA_VS = "http://example.org/vs/cholera"
ALL = f"{ICD}?fhir_vs"


def _data() -> Path:
    # located without importing the package (its import warns about a deprecated API)
    spec = importlib.util.find_spec("simple_icd_10_cm")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "data"


@pytest.fixture(scope="module")
def xml() -> Path:
    found = sorted(_data().glob("*tabular*.xml"))
    assert found, "simple-icd-10-cm ships no tabular XML"
    return found[0]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("icd-cache")


@pytest.fixture(scope="module")
def wb(xml: Path, cache: Path) -> Workbench:
    bench = Workbench()
    summary = bench.load_release(xml, cache_dir=cache, progress=False)
    assert summary.imported and summary.kind == "icd10cm"
    bench.load(
        {
            "resourceType": "ValueSet",
            "url": ISA_VS,
            "status": "active",
            "compose": {
                "include": [
                    {
                        "system": ICD,
                        "filter": [{"property": "concept", "op": "is-a", "value": "A00"}],
                    }
                ]
            },
        }
    )
    return bench


server, http = served_fixtures()


# --- the codes ---------------------------------------------------------------------------


def test_every_code_of_the_official_code_list(wb: Workbench) -> None:
    """Every code the tabular list defines (seven-character extensions generated from its
    sevenChrDef, with the placeholder X and the S06 exception) and no other: the package's
    code list of the same release, undotted."""
    codes = wb.concepts(ICD)["code"]
    listed = set((_data() / "code-list-April-2026.txt").read_text().split())
    assert set(codes.str.replace(".", "", regex=False)) == listed
    assert codes.is_unique


def test_loaded_and_listed(wb: Workbench) -> None:
    listed = wb.codesystems
    row = listed[listed["url"] == ICD]
    assert len(row) == 1 and row.iloc[0]["version"] == "2026"


@pytest.mark.parametrize(
    ("url", "code", "result", "display"),
    [
        (ALL, "A00.0", True, "Cholera due to Vibrio cholerae 01, biovar cholerae"),
        (ALL, "A00.7", False, None),
        # chapters and blocks are abstract: members, taken unless abstract=false (issue 22, a2)
        (ALL, "1", True, None),
        (ALL, "A00-A09", True, None),
        (
            ALL,
            "S52.521A",
            True,
            "Torus fracture of lower end of right radius, initial encounter for closed fracture",
        ),
        (
            ALL,
            "T36.0X1A",
            True,
            "Poisoning by penicillins, accidental (unintentional), initial encounter",
        ),
        (ALL, "S00.00XA", True, "Unspecified superficial injury of scalp, initial encounter"),
        (ALL, "S06.1X7A", True, None),
        (ALL, "S06.1X7D", False, None),  # "7th characters D and S do not apply" (S06)
        (ALL, "S52.521Z", False, None),
        (ALL, "S52521A", False, None),  # codes are dotted
        (f"{ICD}?fhir_vs=isa/S52.521", "S52.521D", True, None),
        (f"{ICD}?fhir_vs=isa/S52.521", "S52.522A", False, None),
        (ISA_VS, "A00.1", True, None),
        (ISA_VS, "A00", True, None),
        (ISA_VS, "A01.0", False, None),
    ],
)
def test_validate_code(
    wb: Workbench, url: str, code: str, result: bool, display: str | None
) -> None:
    found = wb.validate_code(url, code=code, system=ICD)
    assert found.result is result
    if display is not None:
        assert found.display == display


def test_lookup_and_subsumes(wb: Workbench) -> None:
    found = wb.lookup(ICD, "A00.0")
    assert found.display.startswith("Cholera due to Vibrio cholerae 01")
    assert ("parent", "A00") in found.properties
    assert ("billable", True) in found.properties
    seventh = wb.lookup(ICD, "S52.521A")
    assert ("parent", "S52.521") in seventh.properties
    assert ("billable", True) in seventh.properties and ("kind", "extension") in seventh.properties
    assert ("billable", False) in wb.lookup(ICD, "S52.521").properties
    assert wb.subsumes(ICD, "A00-A09", "A00.0") == "subsumes"
    assert wb.subsumes(ICD, "A00.0", "A00") == "subsumed-by"
    assert wb.subsumes(ICD, "S52", "S52.521A") == "subsumes"


def test_frames(wb: Workbench) -> None:
    concepts = wb.concepts(ICD)
    assert len(concepts) == 98_466
    assert list(concepts.columns[:7]) == [
        "code",
        "display",
        "definition",
        "parents",
        "abstract",
        "inactive",
        "status",
    ]
    row = concepts.set_index("code").loc["T36.0X1A"]
    assert row["parents"] == ["T36.0X1"] and bool(row["billable"]) and row["kind"] == "extension"
    assert int(concepts["billable"].sum()) == 74_719
    groupers = concepts[concepts["abstract"]]
    assert set(groupers["kind"]) == {"chapter", "block"}
    assert {"1", "A00-A09"} <= set(groupers["code"])
    designations = wb.designations(ICD)
    assert list(designations.columns) == ["code", "language", "use_system", "use_code", "value"]
    assert "Classical cholera" in set(designations[designations["code"] == "A00.0"]["value"])


def test_validate_column_matches_rows(wb: Workbench) -> None:
    codes = pd.Series(["A00.0", "A00.9", "A01.0", "nope", "S52.521A"])
    report = wb.validate_column(codes, ISA_VS, system=ICD)
    singles = [wb.validate_code(ISA_VS, code=c, system=ICD).result for c in codes]
    assert list(report["result"]) == singles == [True, True, False, False, False]
    everything = wb.validate_column(codes, ALL, system=ICD)
    assert list(everything["result"]) == [True, True, True, False, True]


@pytest.mark.parametrize("abstract", [False, True])
@pytest.mark.parametrize("url", [ALL, ISA_VS])
def test_validate_column_equals_validate_code_on_every_row(
    wb: Workbench, url: str, abstract: bool
) -> None:
    """Members answered from the expansion entries (``plain_entries``) say what the full
    check says: result, message, display, issue and system, row for row."""
    codes = [
        *wb.concepts(ICD)["code"].iloc[::997].tolist(),
        *["A00", "A00.0", "A00.1", "A00.9", "1", "A00-A09", "A01.0", "nope", " A00.0"],
    ]
    report = wb.validate_column(pd.Series(codes), url, system=ICD, abstract=abstract)
    for code, row in zip(codes, report.itertuples(index=False), strict=True):
        single = wb.validate_code(url, code=code, system=ICD, abstract=abstract)
        got = [None if pd.isna(v) else v for v in row]
        expected = [single.result, single.message, single.display, single.issue, single.system]
        assert got == expected, code


@pytest.mark.parametrize("abstract", [False, True])
def test_whole_system_read_column_wise_says_what_the_expansion_says(
    wb: Workbench, abstract: bool
) -> None:
    """Against ``?fhir_vs`` the engine's batch reads the store's columns (``WholeSystem``)
    instead of the expansion: its plainly valid members (with their displays) are exactly
    those ``plain_member`` finds member by member in the expansion."""
    compiled = wb.terminology.compiled(ALL)
    request = ValidateRequest(valueset=ALL, options=CheckOptions(abstract=abstract))
    check = wb.terminology.coding_check(request)
    members = check.plain_members()
    assert isinstance(members.systems[ICD], WholeSystem)
    expected = {}
    for system, code in compiled.member_index():
        found = plain_member(compiled.contains(system, code), code, check.opts)
        if found is not None:
            expected[code] = found
    keys = list(compiled.member_index())
    codes = np.array([c for _, c in keys] + ["nope", " A00.0"], dtype=object)
    hit, displays, versions, outside = members.lookup(ICD, codes)
    assert outside.tolist()[-2:] == [True, True] and not outside[:-2].any()
    got = {c: Plain(d, v) for c, h, d, v in zip(codes, hit, displays, versions, strict=True) if h}
    assert got == expected
    assert len(expected) == (98_466 if abstract else len(expected))
    assert members.lookup(ICD + "x", codes[:3])[0].tolist() == [False] * 3


def test_first_validate_column_reads_no_concepts(xml: Path, cache: Path) -> None:
    """The first ``validate_column`` against ``?fhir_vs`` in a fresh Workbench answers from
    the store's columns: no concept is made for a plainly valid code, and the columns are
    not turned into Python lists (only the few codes checked in full make concepts)."""
    fresh = Workbench()
    fresh.load_release(xml, cache_dir=cache, progress=False)
    codes = fresh.concepts(ICD)["code"]
    sample = pd.Series([*codes.iloc[::7].tolist(), "nope", " A00.0", "A00"])
    provider = fresh.terminology.codesystem(ICD)
    assert isinstance(provider, Icd10cmProvider)
    report = fresh.validate_column(sample, ALL, system=ICD, abstract=False)
    selectable = int((~fresh.concepts(ICD)["abstract"].iloc[::7]).sum())
    assert int(report["result"].sum()) == selectable + 1  # and A00
    issues = [None if pd.isna(v) else v for v in report["issue"].iloc[-3:]]
    assert issues == ["unknown-code", "unknown-code", None]
    assert "_columns" not in provider._table.__dict__
    assert len(provider._table._made) < 100  # the codes checked in full: abstract, unknown


@pytest.mark.parametrize("grouper", ["1", "A00-A09"])
def test_grouper_valid_only_when_abstract_allowed(wb: Workbench, grouper: str) -> None:
    assert not wb.validate_code(ALL, code=grouper, system=ICD, abstract=False).result
    assert wb.validate_code(ALL, code=grouper, system=ICD, abstract=True).result
    assert wb.validate_code(ALL, code=grouper, system=ICD).result  # left out: taken (a2)


# --- the store -----------------------------------------------------------------------------


def test_reopened_from_the_cache_fast(wb: Workbench, xml: Path, cache: Path) -> None:
    other = Workbench()
    started = time.perf_counter()
    summary = other.load_release(xml, cache_dir=cache, progress=False)
    assert not summary.imported and summary.concepts == 98_466
    assert Path(summary.cache).parent == cache
    assert time.perf_counter() - started < 8  # the import parses the XML: 10+ s here
    assert other.validate_code(ALL, code="S52.521A", system=ICD).result


def test_a_version_clash_changes_nothing(wb: Workbench, xml: Path, tmp_path: Path) -> None:
    before = wb.codesystems.copy()
    fresh = tmp_path / "cache"
    with pytest.raises(DuplicateCanonicalError, match=r"icd-10-cm\|2026 is already loaded"):
        wb.load_release(xml, cache_dir=fresh, progress=False)
    assert not fresh.exists()  # refused before anything was imported
    assert wb.codesystems.equals(before)


def test_another_version_side_by_side(wb: Workbench, xml: Path, cache: Path) -> None:
    other = Workbench()
    other.load_release(xml, cache_dir=cache, progress=False)
    summary = other.load_release(xml, cache_dir=cache, version="2026-april", progress=False)
    assert summary.version == "2026-april" and not summary.imported
    found = other.validate_code(ALL, code="A00.0", system=ICD, version="2026-april")
    assert found.result and found.version == "2026-april"


# --- HTTP --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "code", "result"),
    [
        (ALL, "S52.521A", True),
        (ALL, "S06.1X7D", False),
        (f"{ICD}?fhir_vs=isa/T36.0X1", "T36.0X1S", True),
        (f"{ICD}?fhir_vs=isa/T36.0X1", "T36.0X2S", False),
        (ISA_VS, "A00.1", True),
    ],
)
def test_http_validate_code(http: httpx.Client, url: str, code: str, result: bool) -> None:
    body = http.get(
        "/ValueSet/$validate-code", params={"url": url, "code": code, "system": ICD}
    ).json()
    assert values(body, "result") == [result]


def test_http_lookup(http: httpx.Client) -> None:
    body = http.get("/CodeSystem/$lookup", params={"system": ICD, "code": "T36.0X1A"}).json()
    assert values(body, "display") == [
        "Poisoning by penicillins, accidental (unintentional), initial encounter"
    ]
    assert values(body, "version") == ["2026"]
    props = {
        (p["part"][0]["valueCode"], next(v for k, v in p["part"][1].items() if k != "name"))
        for p in body["parameter"]
        if p["name"] == "property"
    }
    assert {("parent", "T36.0X1"), ("billable", True), ("kind", "extension")} <= props


def test_http_expand_isa(http: httpx.Client) -> None:
    body = http.get("/ValueSet/$expand", params={"url": f"{ICD}?fhir_vs=isa/S52.521"}).json()
    codes = {c["code"] for c in body["expansion"]["contains"]}
    assert codes == {"S52.521"} | {f"S52.521{c}" for c in "ADGKPS"}
    shown = {c["code"]: c["display"] for c in body["expansion"]["contains"]}
    assert shown["S52.521S"] == "Torus fracture of lower end of right radius, sequela"


def test_http_subsumes(http: httpx.Client) -> None:
    body = http.get(
        "/CodeSystem/$subsumes", params={"system": ICD, "codeA": "S50-S59", "codeB": "S52.521A"}
    ).json()
    assert values(body, "outcome") == ["subsumes"]
