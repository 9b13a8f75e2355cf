"""Versions side by side over HTTP (issue 37, points 2 and 3): two ICD-10-CM years, two
v3-ActCode versions and two SNOMED CT versions in one server, each addressable by version
(``$lookup``, ``$validate-code``, ``$expand``, ``$compare``), checked against ``wb.diff``,
``wb.impact`` and the releases' own files; a version that is not loaded is named with the
ones that are.

The releases are the session's (``icd_years_wb``) and ``test_impact``'s (``sct_wb``): their
providers are shared with this module's Workbench, never loaded again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from http_support import assert_outcome, exactly, params, served_fixtures, values

from tests import snomed_rf2
from tests.icd10cm_years import xml_codes
from tests.test_diff import act_files  # noqa: F401  (v3-ActCode's two versions)
from tests.test_impact import OLD_SCT, sct_wb  # noqa: F401  (the two SNOMED CT versions)
from workbench import Workbench

ICD = "http://hl7.org/fhir/sid/icd-10-cm"
ACT = "http://terminology.hl7.org/CodeSystem/v3-ActCode"
SCT = "http://snomed.info/sct"
NEW_SCT = snomed_rf2.VERSION
REPLACED_BY = "900000000000526001"
#: value sets of one code system, one version of the value set per version of the system
YEAR_VS = "http://example.org/fhir/ValueSet/icd-10-cm-year"
ACT_VS = "http://example.org/fhir/ValueSet/act-code-version"
ACT_ALL = "http://example.org/fhir/ValueSet/act-code-all"
#: (code system, the value set pinned to each version, the older, the newer version)
PAIRS = [(ICD, YEAR_VS, "2025", "2026"), (ACT, ACT_VS, "2018-08-12", "9.0.0")]
#: a value set of all of each code system, in no version
ALL = {ICD: f"{ICD}?fhir_vs", ACT: ACT_ALL}
#: the newer version against the older: 2026 retired some seven-character extensions;
#: 9.0.0 of v3-ActCode kept every code of 2018-08-12
RELATION = {ICD: "overlapping", ACT: "subset"}


def _pinned(url: str, system: str, version: str) -> dict[str, Any]:
    """Version ``version`` of value set ``url``: all of ``system`` in that very version."""
    return {
        "resourceType": "ValueSet",
        "url": url,
        "version": version,
        "status": "active",
        "compose": {"include": [{"system": system, "version": version}]},
    }


@pytest.fixture(scope="module")
def wb(
    icd_years_wb: Workbench,
    sct_wb: Workbench,  # noqa: F811
    act_files: dict[str, Path],  # noqa: F811
) -> Workbench:
    bench = Workbench()
    for source, url, versions in (
        (icd_years_wb, ICD, ("2021", "2025", "2026")),
        (sct_wb, SCT, (OLD_SCT, NEW_SCT)),
    ):
        for version in versions:  # the latest added is the default
            bench.terminology.add_provider(source.terminology.require_codesystem(url, version))
    for path in act_files.values():
        bench.load(path, progress=False)
    for system, vs, old, new in PAIRS:
        bench.load([_pinned(vs, system, old), _pinned(vs, system, new)])
    everything = _pinned(ACT_ALL, ACT, "1")
    del everything["compose"]["include"][0]["version"]
    bench.load(everything)
    return bench


server, http = served_fixtures()


def _concepts(concepts: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for c in concepts:
        found |= {c["code"], *_concepts(c.get("concept", []))}
    return found


@pytest.fixture(scope="module")
def file_codes(
    icd_years: dict[str, Path],
    act_files: dict[str, Path],  # noqa: F811
) -> dict[str, set[str]]:
    """Each version's codes read straight from its own file (ICD-10-CM: the year's XML,
    without the seven-character extensions; v3-ActCode: the package's JSON)."""
    found = {year: xml_codes(icd_years[year]) for year in ("2025", "2026")}
    for version, path in act_files.items():
        found[version] = _concepts(json.loads(path.read_text())["concept"])
    return found


def _get(http: httpx.Client, path: str, **query: Any) -> dict[str, Any]:
    response = http.get(path, params=query)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _property(body: dict[str, Any], code: str) -> list[Any]:
    return [
        next(v for k, v in part.items() if k.startswith("value"))
        for p in body["parameter"]
        if p["name"] == "property"
        for part in p["part"][1:]
        if p["part"][0].get("valueCode") == code
    ]


@pytest.mark.parametrize(("system", "vs", "old", "new"), PAIRS)
def test_each_version_answers_lookup_and_validate_code(
    wb: Workbench, http: httpx.Client, system: str, vs: str, old: str, new: str
) -> None:
    diff = wb.diff(system, old, new)
    added = str(diff.added["code"].iat[0])
    for version, known in ((old, False), (new, True)):
        found = http.get(
            "/CodeSystem/$lookup", params={"system": system, "code": added, "version": version}
        )
        assert found.status_code == (200 if known else 404), found.text
        by_system = _get(
            http, "/CodeSystem/$validate-code", url=system, code=added, version=version
        )
        assert values(by_system, "result") == [known]
        for name in ("systemVersion", "system-version"):
            pin = version if name == "systemVersion" else f"{system}|{version}"
            in_vs = _get(
                http, "/ValueSet/$validate-code", url=ALL[system], system=system,
                code=added, **{name: pin},
            )  # fmt: skip
            assert values(in_vs, "result") == [known], (name, in_vs)
            assert values(in_vs, "version") == [version], (name, in_vs)  # the one checked
    if len(diff.display_changed):
        row = diff.display_changed.iloc[0]
        for version, display in ((old, row["from_display"]), (new, row["to_display"])):
            got = _get(
                http, "/CodeSystem/$lookup", system=system, code=row["code"], version=version
            )
            assert values(got, "display") == [display] and values(got, "version") == [version]


@pytest.mark.parametrize(("system", "vs", "old", "new"), PAIRS)
def test_each_version_expands(
    wb: Workbench, http: httpx.Client, system: str, vs: str, old: str, new: str
) -> None:
    for version in (old, new):
        size = len(wb.concepts(system, version))
        pinned = _get(http, "/ValueSet/$expand", url=vs, valueSetVersion=version, count=1)
        assert (pinned["version"], pinned["expansion"]["total"]) == (version, size)
        chosen = _get(
            http,
            "/ValueSet/$expand",
            url=ALL[system],
            count=1,
            **{"system-version": f"{system}|{version}"},
        )
        assert chosen["expansion"]["total"] == size
        used = [p for p in chosen["expansion"]["parameter"] if p["name"] == "used-codesystem"]
        assert used[0]["valueUri"] == f"{system}|{version}"


def _codes(body: dict[str, Any], name: str) -> set[str]:
    found = values(body, name)
    return set(found[0].split(",")) if found else set()


@pytest.mark.parametrize(("system", "vs", "old", "new"), PAIRS)
def test_compare_of_two_versions_is_the_diff(
    wb: Workbench,
    http: httpx.Client,
    file_codes: dict[str, set[str]],
    system: str,
    vs: str,
    old: str,
    new: str,
) -> None:
    query = {"thisUrl": vs, "thisVersion": old, "otherUrl": vs, "otherVersion": new}
    got = _get(http, "/ValueSet/$compare", **query)
    assert values(got, "result") == [RELATION[system]]
    assert values(got, "performed-expansion") == [True]
    missing, extra = _codes(got, "missing-codes"), _codes(got, "extra-codes")
    for url in (vs, system):  # the value set's diff, and the code system's
        diff = wb.diff(url, old, new)
        assert (missing, extra) == (set(diff.removed["code"]), set(diff.added["code"]))
    before, after = file_codes[old], file_codes[new]
    # ICD-10-CM's XML lists no seven-character extensions: compare what it lists
    assert extra & after == after - before and missing & before == before - after
    assert len(_codes(got, "common-codes")) == len(wb.concepts(system, old)) - len(missing)
    assert f"{vs}|{old}" in values(got, "message")[0]


ICD_LOADED = "the loaded versions are '2026', '2025', '2021'"
ACT_LOADED = "the loaded versions are '2018-08-12', '9.0.0'"


@pytest.mark.parametrize(
    ("path", "query", "status", "code", "text"),
    [
        (
            "/CodeSystem/$lookup",
            {"system": ICD, "code": "A00.0", "version": "2019"},
            404,
            "not-found",
            ICD_LOADED,
        ),
        (
            "/CodeSystem/$lookup",
            {"system": ACT, "code": "_ActAccountCode", "version": "2.0"},
            404,
            "not-found",
            ACT_LOADED,
        ),
        (
            "/ValueSet/$expand",
            {"url": f"{ICD}?fhir_vs", "system-version": f"{ICD}|2019"},
            404,
            "not-found",
            "Valid versions: 2026 or 2025 or 2021",
        ),
        (
            "/ValueSet/$compare",
            {"thisUrl": ACT_VS, "thisVersion": "2.0", "otherUrl": ACT_VS},
            404,
            "not-found",
            "the loaded versions are '2018-08-12', '9.0.0'",
        ),
    ],
)
def test_a_version_that_is_not_loaded_is_named_with_the_loaded_ones(
    http: httpx.Client, path: str, query: dict[str, str], status: int, code: str, text: str
) -> None:
    assert_outcome(http.get(path, params=query), status, code, text)


@pytest.mark.parametrize(
    ("path", "query", "status", "code", "text"),
    [
        (  # tx.fhir.org's text (tx-ecosystem e1)
            "/ValueSet/$expand",
            {"url": YEAR_VS, "valueSetVersion": "2019"},
            404,
            "not-found",
            f"A definition for the value Set '{YEAR_VS}|2019' could not be found",
        ),
        (  # operation-api.md 7.2's text
            "/ValueSet/$validate-code",
            {"url": YEAR_VS, "valueSetVersion": "2019", "system": ICD, "code": "A00.0"},
            400,
            "invalid",
            f"ValueSet {YEAR_VS}|2019 not found",
        ),
    ],
)
def test_a_value_set_version_not_loaded_keeps_the_text_and_names_the_loaded_ones(
    http: httpx.Client, path: str, query: dict[str, str], status: int, code: str, text: str
) -> None:
    """The text the specs fix stays exact; the loaded versions are the diagnostics."""
    (issue,) = assert_outcome(http.get(path, params=query), status, code, exactly(text))["issue"]
    assert issue["diagnostics"] == "the loaded versions are '2025', '2026'"


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("/CodeSystem/$validate-code", {"url": ICD, "code": "A00.0", "version": "2019"}),
        (
            "/ValueSet/$validate-code",
            {"url": f"{ICD}?fhir_vs", "system": ICD, "code": "A00.0", "systemVersion": "2019"},
        ),
    ],
)
def test_validating_in_a_version_not_loaded_is_a_result_naming_the_loaded_ones(
    http: httpx.Client, path: str, query: dict[str, str]
) -> None:
    got = _get(http, path, **query)
    assert values(got, "result") == [False]
    message = values(got, "message")[0]
    assert "2019" in message and "Valid versions: 2026 or 2025 or 2021" in message


# --- point 3: the server answers what the impact report says --------------------------

#: the $lookup properties the cases read
WANTED = ["inactive", "billable", "child"]
#: (system, from, to, the codes or None, change): a SNOMED CT code retired with a
#: one-to-one replacement; every ICD-10-CM code of the XML that became a header
IMPACT_CASES = [
    (SCT, OLD_SCT, NEW_SCT, ["307530000"], "retired"),
    (ICD, "2025", "2026", None, "became-header"),
]


def _headers(wb: Workbench, file_codes: dict[str, set[str]]) -> list[str]:
    """The codes of both years' XML that the 2026 impact says became headers."""
    codes = pd.Series(sorted(file_codes["2025"] & file_codes["2026"]))
    frame = wb.impact(codes, system=ICD, from_version="2025", to_version="2026").frame
    return sorted(frame.loc[frame["change"] == "became-header", "code"])


@pytest.mark.parametrize(("system", "old", "new", "codes", "change"), IMPACT_CASES)
def test_the_server_answers_what_the_impact_says(
    wb: Workbench,
    http: httpx.Client,
    file_codes: dict[str, set[str]],
    system: str,
    old: str,
    new: str,
    codes: list[str] | None,
    change: str,
) -> None:
    codes = codes or _headers(wb, file_codes)
    data = pd.Series([*codes, *codes, None])
    frame = wb.impact(data, system=system, from_version=old, to_version=new).frame
    assert len(codes) > 0 and frame["code"].tolist() == codes
    assert set(frame["change"]) == {change} and set(frame["rows"]) == {2}
    for row in frame.itertuples():
        _check(http, system, old, new, row, file_codes.get(new, set()))


def _check(http: httpx.Client, system: str, old: str, new: str, row: Any, listed: set[str]) -> None:
    """One code of the impact frame against the server's $lookup, $validate-code and (for
    a replacement) $translate on the implicit historical-association ConceptMap;
    ``listed``: the codes of the newer version's own file."""
    code = row.code
    lookup = {
        v: _get(http, "/CodeSystem/$lookup", system=system, code=code, version=v, property=WANTED)
        for v in (old, new)
    }
    checked = {
        v: _get(http, "/CodeSystem/$validate-code", url=system, code=code, version=v)
        for v in (old, new)
    }
    assert values(checked[old], "result") == [True] and not values(checked[old], "inactive")
    if row.change == "retired":
        assert values(checked[new], "inactive") == [True]
        assert _property(lookup[old], "inactive") == [False]
        assert _property(lookup[new], "inactive") == [True]
        mapped = _get(
            http,
            "/ConceptMap/$translate",
            url=f"{new}?fhir_cm={REPLACED_BY}",
            system=system,
            code=code,
        )
        targets = [
            part["valueCoding"]["code"]
            for p in mapped["parameter"]
            if p["name"] == "match"
            for part in p["part"]
            if part["name"] == "concept"
        ]
        assert targets == [row.replacement] and row.relation == "REPLACED BY"
    else:  # a leaf, billable, in the older year; a header with children in the newer
        assert _property(lookup[old], "billable") == [True] and not _property(lookup[old], "child")
        assert _property(lookup[new], "billable") == [False]
        assert tuple(sorted(_property(lookup[new], "child"))) == row.children
        assert set(row.children) <= listed  # each a code of the newer year's XML


# --- bad input: $compare on real versions ---------------------------------------------

BOTH_YEARS = {
    "resourceType": "ValueSet",
    "status": "active",
    "compose": {"include": [{"system": ICD, "version": y} for y in ("2025", "2026")]},
}


@pytest.mark.parametrize(
    ("this", "result", "expanded", "says"),
    [
        ((("thisUrl", {"valueUri": YEAR_VS}), ("thisVersion", {"valueString": "2025"})), "same",
         False, "the same codes"),  # itself
        ((("thisValueSet", {"resource": BOTH_YEARS}),), "indeterminate", True,
         "196330 codes, more than the 100000"),  # two years: too costly
    ],
)  # fmt: skip
def test_compare_with_itself_and_too_costly(
    http: httpx.Client,
    this: tuple[tuple[str, dict[str, Any]], ...],
    result: str,
    expanded: bool,
    says: str,
) -> None:
    body = params(
        *this, ("otherUrl", {"valueUri": YEAR_VS}), ("otherVersion", {"valueString": "2025"})
    )
    response = http.post("/ValueSet/$compare", json=body)
    assert response.status_code == 200, response.text  # indeterminate is no error
    got = response.json()
    assert values(got, "result") == [result]
    assert values(got, "performed-expansion") == [expanded]
    assert says in values(got, "message")[0], values(got, "message")
