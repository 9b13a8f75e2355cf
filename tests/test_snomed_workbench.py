"""SNOMED CT through the Workbench and over HTTP: load_release, validate-code (codes and
post-coordinated expressions), $lookup, $subsumes, $expand of ECL and implicit value sets,
frames, bulk validation of a column against an ECL value set, and bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
import snomed_rf2
from http_support import assert_outcome, served_fixtures, values
from test_snomed_ecl import ECL_CASES

from workbench import Workbench
from workbench.errors import ExpressionSyntaxError, ReleaseFormatError, WorkbenchError

SCT = "http://snomed.info/sct"
ECL_VS = f"{SCT}?fhir_vs=ecl/<< 49601007"
CARDIO = {"49601007", "56265001", "22298006", "57054005"}


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return snomed_rf2.write(tmp_path_factory.mktemp("rf2"))


@pytest.fixture(scope="module")
def wb(release: Path, tmp_path_factory: pytest.TempPathFactory) -> Workbench:
    bench = Workbench()
    bench.load_release(release, cache_dir=tmp_path_factory.mktemp("cache"), progress=False)
    bench.load(
        {
            "resourceType": "ValueSet",
            "url": "http://example.org/vs/heart",
            "status": "active",
            "compose": {
                "include": [
                    {
                        "system": SCT,
                        "filter": [
                            {
                                "property": "constraint",
                                "op": "=",
                                "value": "< 404684003 : 363698007 = << 80891009",
                            }
                        ],
                    }
                ]
            },
        },
        progress=False,
    )
    return bench


server, http = served_fixtures()


# --- Python ----------------------------------------------------------------------------


def test_load_release_summary_and_listing(wb: Workbench, release: Path, tmp_path: Path) -> None:
    summary = Workbench().load_release(release, cache_dir=tmp_path, progress=False)
    text = str(summary)
    assert SCT in text and snomed_rf2.VERSION in text
    listed = wb.codesystems
    row = listed[listed["url"] == SCT].iloc[0]
    assert row["version"] == snomed_rf2.VERSION


def test_concepts_and_designations_frames(wb: Workbench) -> None:
    concepts = wb.concepts(SCT)
    assert len(concepts) == len(snomed_rf2.CONCEPTS)
    assert concepts.set_index("code").loc["22298006", "display"] == "Myocardial infarction"
    designations = wb.designations(SCT)
    assert "Heart attack" in set(designations[designations["code"] == "22298006"]["value"])


@pytest.mark.parametrize(
    ("url", "code", "result", "reason"),
    [
        (ECL_VS, "22298006", True, None),
        (ECL_VS, "195967001", False, "not-in-vs"),
        (ECL_VS, "123456789", False, "unknown-code"),
        (f"{SCT}?fhir_vs=isa/56265001", "57054005", True, None),
        (f"{SCT}?fhir_vs=refset/723264001", "39607008", True, None),
        (f"{SCT}?fhir_vs=refset/723264001", "22298006", False, "not-in-vs"),
        (f"{SCT}?fhir_vs", "195967001", True, None),
        ("http://example.org/vs/heart", "57054005", True, None),
        ("http://example.org/vs/heart", "195967001", False, "not-in-vs"),
    ],
)
def test_validate_code(
    wb: Workbench, url: str, code: str, result: bool, reason: str | None
) -> None:
    found = wb.validate_code(url, code=code, system=SCT)
    assert found.result is result and found.issue == reason, found


def test_validate_code_display_and_dialect(wb: Workbench) -> None:
    ok = wb.validate_code(ECL_VS, code="22298006", system=SCT, display="Heart attack")
    assert ok.result and ok.display == "Myocardial infarction"
    wrong = wb.validate_code(ECL_VS, code="22298006", system=SCT, display="Stroke")
    assert not wrong.result and wrong.issue == "invalid-display"


def test_inactive_code_names_its_replacement(wb: Workbench) -> None:
    found = wb.validate_in_codesystem(SCT, "307530000")
    assert found.result and found.issue == "inactive"
    assert "REPLACED BY 22298006" in str(found.message)


@pytest.mark.parametrize(
    ("code", "result", "text"),
    [
        ("56265001 : 363698007 = 80891009", True, None),
        ("64572001 : { 363698007 = 80891009, 116676008 = 55641003 }", True, None),
        ("64572001 : 363698007 = 322236009", False, "outside its MRCM range"),
        ("322236009 : 363698007 = 80891009", False, "not allowed on the focus concept"),
        ("64572001 : 363698007 = 999999001", False, "999999001 is not in"),
        ("307530000 : 363698007 = 80891009", False, "is inactive"),
    ],
)
def test_post_coordinated_expressions(
    wb: Workbench, code: str, result: bool, text: str | None
) -> None:
    found = wb.validate_in_codesystem(SCT, code)
    assert found.result is result, found
    if text:
        assert text in str(found.message)
    in_vs = wb.validate_code(ECL_VS, code="56265001 : 363698007 = 80891009", system=SCT)
    assert in_vs.result


@pytest.mark.parametrize(
    ("version", "found"),
    [
        (snomed_rf2.VERSION, True),
        (f"{SCT}/{snomed_rf2.CORE}", True),
        (f"{SCT}/{snomed_rf2.CORE}/version/20240101", False),
        (f"{SCT}/449080006", False),
    ],
)
def test_versions_and_editions(wb: Workbench, version: str, found: bool) -> None:
    result = wb.validate_in_codesystem(SCT, "22298006", version=version)
    assert result.result is found, result
    if not found:
        assert result.issue == "unknown-system"


def test_malformed_expression_is_an_error(wb: Workbench) -> None:
    with pytest.raises(ExpressionSyntaxError, match="does not parse at line 1, column 22"):
        wb.validate_in_codesystem(SCT, "64572001 : 363698007 80891009")


def test_lookup_and_subsumes(wb: Workbench) -> None:
    found = wb.lookup(SCT, "22298006")
    assert found.display == "Myocardial infarction"
    assert ("parent", "56265001") in found.properties
    assert wb.subsumes(SCT, "49601007", "57054005") == "subsumes"


def test_lookup_of_an_expression(wb: Workbench, http: httpx.Client) -> None:
    """Before: a post-coordinated expression was an unknown code to $lookup."""
    code = "64572001 : { 363698007 = 80891009, 116676008 = 55641003 }"
    found = wb.lookup(SCT, code)
    names = {c: wb.lookup(SCT, c).display for c in ("64572001", "363698007", "80891009")}
    assert found.display is not None
    # issue 22 (f1, f3): the normalised expression, and the focus concept's properties
    assert found.display.startswith(
        f"64572001|{names['64572001']}|:{{363698007|{names['363698007']}|="
        f"80891009|{names['80891009']}|,116676008|"
    )
    assert found.code == code
    assert ("parent", "404684003") in found.properties
    assert ("363698007", "80891009") in found.properties
    assert ("116676008", "55641003") in found.properties
    assert ("inactive", False) in found.properties
    body = http.get("/CodeSystem/$lookup", params={"system": SCT, "code": code}).json()
    assert values(body, "display") == [found.display]
    only = wb.lookup(SCT, code, properties=["parent"])
    assert [name for name, _ in only.properties] == ["parent"]


@pytest.mark.parametrize(
    ("code", "status", "issue", "text"),
    [
        ("64572001 : 363698007 = 999999001", 404, "not-found", "999999001 is not in"),
        ("307530000 : 363698007 = 80891009", 404, "not-found", "is inactive"),
        ("64572001 : 363698007 80891009", 400, "invalid", "does not parse"),
    ],
)
def test_lookup_of_a_bad_expression(
    http: httpx.Client, code: str, status: int, issue: str, text: str
) -> None:
    answer = http.get("/CodeSystem/$lookup", params={"system": SCT, "code": code})
    assert_outcome(answer, status, issue, text)


def test_expand_an_ecl_value_set(wb: Workbench) -> None:
    expansion = wb.expand(ECL_VS)
    assert {e.code for e in expansion.entries} == CARDIO
    assert expansion.total == 4
    shown = {e.code: e.display for e in expansion.entries}
    assert shown["22298006"] == "Myocardial infarction"


def test_expansion_with_designations_and_a_dialect(wb: Workbench) -> None:
    url = f"{SCT}?fhir_vs=isa/271737000"
    plain = wb.expand(url)
    assert [(e.code, e.display, e.designations) for e in plain.entries] == [
        ("271737000", "Anemia", ())
    ]
    british = wb.expand(url, display_language="en-GB", include_designations=True)
    entry = british.entries[0]
    assert entry.display == "Anaemia"
    assert {d["value"] for d in entry.designations} == {"Anemia", "Anemia (disorder)", "Anaemia"}
    contains = british.to_fhir()["contains"][0]
    assert contains["display"] == "Anaemia" and len(contains["designation"]) == 3


def test_bulk_validation_against_an_ecl_value_set(wb: Workbench) -> None:
    codes = pd.Series(["22298006", "57054005", "195967001", "123456789", None, "22298006"])
    report = wb.validate_column(codes, ECL_VS, system=SCT)
    assert report["result"].tolist() == [True, True, False, False, pd.NA, True]
    issues = [i if isinstance(i, str) else None for i in report["issue"]]
    assert issues == [None, None, "not-in-vs", "unknown-code", "missing", None]
    for code, row in zip(codes, report.itertuples(), strict=True):
        if isinstance(code, str):
            single = wb.validate_code(ECL_VS, code=code, system=SCT)
            message = row.message if isinstance(row.message, str) else None
            assert (single.result, single.message) == (bool(row.result), message)


def test_a_version_clash_changes_nothing(wb: Workbench, release: Path, tmp_path: Path) -> None:
    before = wb.codesystems.copy()
    with pytest.raises(WorkbenchError, match="already loaded"):
        wb.load_release(release, cache_dir=tmp_path, version=snomed_rf2.VERSION, progress=False)
    assert wb.codesystems.equals(before)


def test_not_a_release_changes_nothing(wb: Workbench, tmp_path: Path) -> None:
    before = wb.codesystems.copy()
    (tmp_path / "readme.txt").write_text("not a release")
    with pytest.raises(ReleaseFormatError):
        wb.load_release(tmp_path, kind="snomed", cache_dir=tmp_path / "cache", progress=False)
    assert wb.codesystems.equals(before)


# --- HTTP ------------------------------------------------------------------------------


def test_http_lookup(http: httpx.Client) -> None:
    body = http.get("/CodeSystem/$lookup", params={"system": SCT, "code": "322236009"}).json()
    assert values(body, "display") == ["Paracetamol 500 mg oral tablet"]
    props = {
        (p["part"][0]["valueCode"], next(v for k, v in p["part"][1].items() if k != "name"))
        for p in body["parameter"]
        if p["name"] == "property"
    }
    assert ("1142135004", 500) in props and ("parent", "373873005") in props


@pytest.mark.parametrize(
    ("url", "code", "result"),
    [
        (ECL_VS, "57054005", True),
        (ECL_VS, "195967001", False),
        (f"{SCT}?fhir_vs=isa/56265001", "22298006", True),
    ],
)
def test_http_validate_code(http: httpx.Client, url: str, code: str, result: bool) -> None:
    body = http.get(
        "/ValueSet/$validate-code", params={"url": url, "code": code, "system": SCT}
    ).json()
    assert values(body, "result") == [result]


@pytest.mark.parametrize(
    ("url", "codes"),
    [
        (ECL_VS, CARDIO),
        (f"{SCT}?fhir_vs=isa/56265001", {"56265001", "22298006", "57054005"}),
        (f"{SCT}?fhir_vs=refset/723264001", {"39607008", "80891009"}),
        (f"{SCT}?fhir_vs=refset", {"723264001", "900000000000526001"}),
        (f"{SCT}?fhir_vs=ecl/(< 404684003 : 116676008 = *) . 116676008", {"55641003"}),
    ],
)
def test_http_expand_implicit_value_sets(http: httpx.Client, url: str, codes: set[str]) -> None:
    body = http.get("/ValueSet/$expand", params={"url": url}).json()
    assert {c["code"] for c in body["expansion"]["contains"]} == codes
    assert body["url"] == url


def test_http_subsumes(http: httpx.Client) -> None:
    body = http.get(
        "/CodeSystem/$subsumes", params={"system": SCT, "codeA": "64572001", "codeB": "22298006"}
    ).json()
    assert values(body, "outcome") == ["subsumes"]


def test_http_expression_in_validate_code(http: httpx.Client) -> None:
    body = http.get(
        "/CodeSystem/$validate-code",
        params={"url": SCT, "code": "64572001 : 363698007 = 322236009"},
    ).json()
    assert values(body, "result") == [False]
    assert "MRCM range" in values(body, "message")[0]


@pytest.mark.parametrize(
    ("path", "params", "where"),
    [
        ("/ValueSet/$expand", {"url": f"{SCT}?fhir_vs=ecl/<< 404684003 AND"}, "end of the text"),
        (
            "/ValueSet/$validate-code",
            {"url": f"{SCT}?fhir_vs=ecl/< 404684003 : 363698007 = ", "code": "1", "system": SCT},
            "end of the text",
        ),
        (
            "/CodeSystem/$validate-code",
            {"url": SCT, "code": "64572001 : 363698007 80891009"},
            "line 1, column 22",
        ),
    ],
)
def test_http_malformed_ecl_or_expression_is_a_400(
    http: httpx.Client, path: str, params: dict[str, str], where: str
) -> None:
    assert_outcome(http.get(path, params=params), 400, "invalid", where)


def test_server_option_loads_a_release(release: Path, tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("server_script", Path("server.py").resolve())
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    xsct = "http://snomed.info/xsct/31000003106/version/20250909"
    args = script.parse_args(
        ["--release", f"{release}|{xsct}", "--release", str(release), "--release-cache", "c"]
    )
    assert args.release == [f"{release}|{xsct}", str(release)]
    assert args.release_cache == Path("c")


def test_bulk_validation_on_dask_equals_pandas(wb: Workbench) -> None:
    import dask.dataframe as dd

    codes = pd.Series(["22298006", "195967001", "1234", None, "57054005", "307530000"])
    on_pandas = wb.validate_column(codes, ECL_VS, system=SCT)
    lazy = wb.validate_column(dd.from_pandas(codes, npartitions=2), ECL_VS, system=SCT)
    on_dask = lazy.compute()
    for column in ("result", "issue", "message", "display"):
        assert on_dask[column].astype(object).where(on_dask[column].notna(), None).tolist() == (
            on_pandas[column].astype(object).where(on_pandas[column].notna(), None).tolist()
        ), column


def test_hierarchy_widget_walks_snomed(wb: Workbench) -> None:
    from workbench.notebook.valueset_browser import CodeSystemTree

    tree = CodeSystemTree(wb)
    assert (f"{SCT} (26 concepts)", SCT) in tree.system.options
    tree.system.value = SCT
    assert [code for _label, code in tree.children_list.options] == ["138875005"]
    tree.children_list.value = "138875005"
    below = [code for _label, code in tree.children_list.options]
    assert "404684003" in below and "123037004" in below
    tree.children_list.value = "404684003"
    assert [code for _label, code in tree.children_list.options] == ["64572001"]
    assert "Clinical finding" in tree.detail.value
    tree.find.value = "clinical FIND"  # a display, any case, from the store's columns
    assert [code for _label, code in tree.found.options] == ["404684003"]
    tree.find.value = "4046"  # a code's start
    assert "404684003" in [code for _label, code in tree.found.options]
    tree.found.value = "404684003"
    assert tree.path == ["404684003"]


@pytest.mark.parametrize(("language", "display"), [("en-GB", "Anaemia"), ("en-US", "Anemia")])
def test_http_lookup_display_language(http: httpx.Client, language: str, display: str) -> None:
    body = http.get(
        "/CodeSystem/$lookup",
        params={"system": SCT, "code": "271737000", "displayLanguage": language},
    ).json()
    assert values(body, "display") == [display]


def test_lookup_display_language_on_a_fhir_code_system() -> None:
    bench = Workbench()
    bench.load(
        {
            "resourceType": "CodeSystem",
            "url": "http://example.org/colours",
            "status": "active",
            "content": "complete",
            "concept": [
                {
                    "code": "red",
                    "display": "Red",
                    "designation": [{"language": "de-CH", "value": "Rot"}],
                }
            ],
        },
        progress=False,
    )
    assert bench.lookup("http://example.org/colours", "red").display == "Red"
    german = bench.lookup("http://example.org/colours", "red", display_language="de-CH")
    assert german.display == "Rot"
    assert bench.lookup("http://example.org/colours", "red", display_language="fr").display == (
        "Red"
    )


def test_an_inactive_description_as_display_is_valid_with_a_warning(wb: Workbench) -> None:
    found = wb.validate_in_codesystem(SCT, "4147007", display="Tumour mass")
    assert found.result
    assert "'Tumour mass' for http://snomed.info/sct#4147007 is no longer current" in str(
        found.message
    )
    assert [i.code for i in found.issues] == ["display-comment"]
    wrong = wb.validate_in_codesystem(SCT, "4147007", display="Tumor")
    assert not wrong.result and wrong.issue == "invalid-display"


@pytest.mark.parametrize(
    ("url", "code", "result"),
    [
        ("http://example.org/vs/heart", "64572001 : 363698007 = 80891009", True),
        ("http://example.org/vs/heart", "64572001 : 363698007 = 39607008", False),
        ("http://example.org/vs/heart", "56265001 : 116676008 = 55641003", True),
        ("http://example.org/vs/heart", "64572001 : { 363698007 = 80891009 }", True),
        (ECL_VS, "56265001 : 363698007 = 80891009", True),
        (ECL_VS, "64572001 : 363698007 = 80891009", False),
        (f"{SCT}?fhir_vs=ecl/< 64572001", "64572001 : 363698007 = 80891009", True),
        (f"{SCT}?fhir_vs=ecl/64572001", "64572001 : 363698007 = 80891009", False),
        (
            f"{SCT}?fhir_vs=ecl/< 373873005 : 1142135004 < #300",
            "322236009 : 1142135004 = #250",
            True,
        ),
        (f"{SCT}?fhir_vs=ecl/< 373873005 : 1142135004 < #300", "322236009", False),
        (
            f"{SCT}?fhir_vs=ecl/< 404684003 : [0..0] 363698007 = *",
            "64572001 : 363698007 = 80891009",
            False,
        ),
        (f"{SCT}?fhir_vs=refset/723264001", "64572001 : 363698007 = 80891009", False),
        (
            {
                "resourceType": "ValueSet",
                "compose": {"include": [{"system": SCT, "concept": [{"code": "64572001"}]}]},
            },
            "64572001 : 363698007 = 80891009",
            False,  # issue 22 (f2): listing the focus concept is not listing the expression
        ),
    ],
)
def test_expressions_in_value_sets(wb: Workbench, url: Any, code: str, result: bool) -> None:
    found = (
        wb.validate_code(url, code=code, system=SCT)
        if isinstance(url, str)
        else wb.validate_code(valueset=url, code=code, system=SCT)
    )
    assert found.result is result, found.message


# --- ECL with terms, edition URIs, expressions in $subsumes, bulk = single ----------------


@pytest.mark.parametrize(
    ("url", "codes"),
    [
        (f"{SCT}?fhir_vs=ecl/<< 49601007 |Disorder of cardiovascular system|", CARDIO),
        (
            f"{SCT}?fhir_vs=ecl/< 404684003 |Clinical finding| : "
            "363698007 |Finding site| = << 80891009 |Heart structure|",
            {"56265001", "22298006", "57054005"},
        ),
        (f"{snomed_rf2.VERSION}?fhir_vs=isa/56265001", {"56265001", "22298006", "57054005"}),
    ],
)
def test_ecl_with_terms_and_edition_uris(wb: Workbench, url: str, codes: set[str]) -> None:
    assert {e.code for e in wb.expand(url).entries} == codes
    assert wb.validate_code(url, code="22298006", system=SCT).result


@pytest.mark.parametrize(
    ("code_a", "code_b", "outcome"),
    [
        ("56265001", "56265001 : 116676008 = 55641003", "subsumes"),
        ("64572001 : 363698007 = 80891009", "64572001", "subsumed-by"),
        ("22298006", "195967001 : 363698007 = 39607008", "not-subsumed"),
    ],
)
def test_subsumes_with_expressions(
    wb: Workbench, http: httpx.Client, code_a: str, code_b: str, outcome: str
) -> None:
    assert wb.subsumes(SCT, code_a, code_b) == outcome
    body = http.get(
        "/CodeSystem/$subsumes", params={"system": SCT, "codeA": code_a, "codeB": code_b}
    ).json()
    assert values(body, "outcome") == [outcome]


@pytest.mark.parametrize(
    ("path", "params", "where"),
    [
        (
            "/CodeSystem/$subsumes",
            {"system": SCT, "codeA": "64572001 : : 1", "codeB": "64572001"},
            "line 1, column 12",
        ),
        ("/ValueSet/$expand", {"url": f"{SCT}?fhir_vs=ecl/<< 64572001 |Disease"}, "column"),
        ("/ValueSet/$expand", {"url": f"{SCT}?fhir_vs=ecl/(<< 64572001"}, "end of the text"),
        ("/ValueSet/$expand", {"url": f"{SCT}?fhir_vs=ecl/<< 64572001 {{{{ term = }}}}"}, "col"),
        (
            "/ValueSet/$validate-code",
            {
                "url": f"{SCT}?fhir_vs=ecl/< 404684003 : [1..] 363698007 = *",
                "code": "1",
                "system": SCT,
            },
            "column",
        ),
    ],
)
def test_http_more_malformed_input_is_a_400(
    http: httpx.Client, path: str, params: dict[str, str], where: str
) -> None:
    assert_outcome(http.get(path, params=params), 400, "invalid", where)


def test_http_malformed_ecl_in_a_posted_value_set(http: httpx.Client) -> None:
    valueset = {
        "resourceType": "ValueSet",
        "status": "active",
        "compose": {
            "include": [
                {
                    "system": SCT,
                    "filter": [{"property": "constraint", "op": "=", "value": "<< 64572001 OR"}],
                }
            ]
        },
    }
    body = {"resourceType": "Parameters", "parameter": [{"name": "valueSet", "resource": valueset}]}
    response = http.post("/ValueSet/$expand", json=body)
    assert_outcome(response, 400, "invalid", "does not parse at the end of the text")


@pytest.mark.parametrize(
    "url",
    [
        ECL_VS,
        "http://example.org/vs/heart",
        f"{SCT}?fhir_vs=ecl/(<< 404684003 MINUS << 49601007) OR ^ 723264001",
        f"{SCT}?fhir_vs=ecl/< 404684003 : {{ 363698007 = *, 116676008 = * }}",
    ],
)
def test_bulk_validation_of_every_code_equals_single_validation(wb: Workbench, url: str) -> None:
    codes = list(wb.concepts(SCT)["code"])
    codes += ["123456789", "not-a-code", "56265001 : 116676008 = 55641003", "307530000"]
    column = pd.Series(codes * 3)
    report = wb.validate_column(column, url, system=SCT)
    assert len(report) == len(column)
    for code, row in zip(column, report.itertuples(), strict=True):
        single = wb.validate_code(url, code=code, system=SCT)
        message = row.message if isinstance(row.message, str) else None
        assert (bool(row.result), message) == (single.result, single.message), code


def test_an_unpublished_edition_and_its_implicit_value_sets(release: Path, tmp_path: Path) -> None:
    xsct = "http://snomed.info/xsct/31000003106/version/20250909"
    bench = Workbench()
    summary = bench.load_release(release, version=xsct, cache_dir=tmp_path, progress=False)
    assert summary.version == xsct
    url = f"{xsct}?fhir_vs=isa/56265001"
    assert {e.code for e in bench.expand(url).entries} == {"56265001", "22298006", "57054005"}
    found = bench.validate_code(url, code="22298006", system=SCT)
    assert found.result and found.version == xsct


@pytest.mark.parametrize(("text", "expected"), ECL_CASES, ids=[t for t, _ in ECL_CASES])
def test_http_every_ecl_feature(http: httpx.Client, text: str, expected: set[str]) -> None:
    """Each ECL feature through ``$expand`` of ``?fhir_vs=ecl/…`` (inactive members too)."""
    body = http.get(
        "/ValueSet/$expand", params={"url": f"{SCT}?fhir_vs=ecl/{text}", "count": "1000"}
    ).json()
    assert {c["code"] for c in body["expansion"].get("contains", [])} == expected


def test_http_lookup_of_an_inactive_concept(http: httpx.Client) -> None:
    """inactive, the historical association under its refset id, the FSN as a designation
    with use FSN; $validate-code names the replacement."""
    body = http.get("/CodeSystem/$lookup", params={"system": SCT, "code": "307530000"}).json()
    props = {
        (p["part"][0]["valueCode"], next(v for k, v in p["part"][1].items() if k != "name"))
        for p in body["parameter"]
        if p["name"] == "property"
    }
    assert {("inactive", True), ("900000000000526001", "22298006")} <= props
    uses = {
        (d["part"][1]["valueCoding"]["code"], d["part"][2]["valueString"])
        for d in body["parameter"]
        if d["name"] == "designation"
    }
    assert any(use == "900000000000003001" for use, _ in uses)
    checked = http.get(
        "/CodeSystem/$validate-code", params={"url": SCT, "code": "307530000"}
    ).json()
    assert "REPLACED BY 22298006 |Myocardial infarction|" in values(checked, "message")[0]
