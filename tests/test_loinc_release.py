"""LOINC from its release files (the hand-made release in ``tests/data/loinc-release``):
load_release, $lookup with properties and designations, displayLanguage, $validate-code,
filters, implicit value sets, $subsumes, frames, bulk validation, bad input, and the same
over HTTP."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from http_support import TOKEN, assert_outcome, client, served_fixtures, values

from workbench import Workbench
from workbench.errors import DuplicateCanonicalError, ReleaseFormatError, WorkbenchError
from workbench.releases.loading import detect

LOINC = "http://loinc.org"
RELEASE = Path(__file__).parent / "data" / "loinc-release"
TERMS = {
    "2345-7",
    "2339-0",
    "15074-8",
    "2823-3",
    "6298-4",
    "2160-0",
    "38483-4",
    "94500-6",
    "8480-6",
    "72166-2",
    "2344-0",
    "2947-0",
}
GLUCOSE = {"2345-7", "2339-0", "15074-8", "2344-0"}
VS = "http://example.org/vs/loinc-chemistry"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("loinc-cache")


@pytest.fixture(scope="module")
def wb(cache: Path) -> Workbench:
    bench = Workbench()
    bench.load_release(RELEASE, cache_dir=cache, progress=False)
    bench.load(
        {
            "resourceType": "ValueSet",
            "url": VS,
            "status": "active",
            "compose": {
                "include": [
                    {
                        "system": LOINC,
                        "filter": [{"property": "concept", "op": "is-a", "value": "LP7786-9"}],
                    }
                ]
            },
        },
        progress=False,
    )
    return bench


server, http = served_fixtures()


def codes(wb: Workbench, include: dict[str, Any]) -> list[str]:
    found = wb.expand(
        {"resourceType": "ValueSet", "status": "active", "compose": {"include": [include]}}
    )
    return [e.code for e in found.entries]


def zipped(folder: Path, dest: Path) -> Path:
    with zipfile.ZipFile(dest, "w") as zf:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                zf.write(file, "Loinc_2.80/" + file.relative_to(folder).as_posix())
    return dest


def copy_release(tmp_path: Path) -> Path:
    return Path(shutil.copytree(RELEASE, tmp_path / "release"))


# --- loading -----------------------------------------------------------------------------


def test_summary_listing_and_reopening(wb: Workbench, cache: Path) -> None:
    assert detect(RELEASE) == "loinc"
    again = Workbench().load_release(RELEASE, cache_dir=cache, progress=False)
    assert (again.kind, again.system, again.version) == ("loinc", LOINC, "2.80")
    assert not again.imported and again.cache.startswith(str(cache))
    # 12 terms, 20 parts, 2 answer lists, 6 answers, 2 hierarchy groupers
    assert again.concepts == 42
    row = wb.codesystems.set_index("url").loc[LOINC]
    assert row["version"] == "2.80"


def test_a_zip_with_a_top_folder_and_a_version_override(tmp_path: Path) -> None:
    archive = zipped(RELEASE, tmp_path / "Loinc_2.80.zip")
    bench = Workbench()
    summary = bench.load_release(archive, version="2.80-test", cache_dir=tmp_path, progress=False)
    assert summary.imported and summary.version == "2.80-test"
    assert bench.lookup(LOINC, "2345-7", version="2.80-test").version == "2.80-test"


def test_concepts_and_designations_frames(wb: Workbench) -> None:
    concepts = wb.concepts(LOINC).set_index("code")
    assert set(concepts.index[concepts["kind"] == "term"]) == TERMS
    glucose = concepts.loc["2345-7"]
    assert glucose["display"] == "Glucose [Mass/volume] in Serum or Plasma"
    assert (glucose["COMPONENT"], glucose["CLASSTYPE"], glucose["status"]) == (
        "Glucose",
        "1",
        "active",
    )
    assert list(glucose["parents"]) == ["LP443001-2"]
    assert concepts.loc["LA11882-0", "kind"] == "answer"
    assert concepts.loc["2344-0", "inactive"] and concepts.loc["2947-0", "inactive"]
    designations = wb.designations(LOINC)
    mine = designations[designations["code"] == "2823-3"]
    assert set(mine["language"]) == {"en-US", "de-DE", "zh-CN"}
    assert "钾 [物质的量/体积] 于 血清或血浆" in set(mine["value"])


# --- $lookup ---------------------------------------------------------------------------


def test_lookup_properties_and_designations(wb: Workbench) -> None:
    found = wb.lookup(LOINC, "2345-7")
    assert found.name == "LOINC" and found.version == "2.80"
    assert found.display == "Glucose [Mass/volume] in Serum or Plasma"
    props = found.properties
    component = {"system": LOINC, "code": "LP14635-4", "display": "Glucose"}
    assert ("COMPONENT", component) in props
    assert ("SYSTEM", {"system": LOINC, "code": "LP7576-4", "display": "Ser/Plas"}) in props
    for pair in (
        ("CLASS", "CHEM"),
        ("CLASSTYPE", "1"),
        ("STATUS", "ACTIVE"),
        ("ORDER_OBS", "Both"),
    ):
        assert pair in props
    assert ("parent", "LP443001-2") in props
    multi_line = dict(props)["DefinitionDescription"]
    assert (
        multi_line == 'Glucose measured in serum or plasma.\nThe most common "random" glucose test.'
    )
    texts = {(d["language"], d["use"]["code"], d["value"]) for d in found.designations}
    assert ("en-US", "SHORTNAME", "Glucose SerPl-mCnc") in texts
    assert ("en-US", "CONSUMER_NAME", "Glucose, Serum or plasma") in texts
    assert ("de-DE", "LONG_COMMON_NAME", "Glucose [Masse/Volumen] in Serum oder Plasma") in texts
    assert ("zh-CN", "900000000000003001", "葡萄糖:质量浓度:时间点:血清/血浆:定量型") in texts


def test_lookup_selected_properties_parts_and_answers(wb: Workbench) -> None:
    smoking = wb.lookup(LOINC, "72166-2", properties=["answer-list", "CLASSTYPE"])
    assert smoking.properties == (
        ("CLASSTYPE", "4"),
        ("answer-list", {"system": LOINC, "code": "LL2201-3", "display": "Smoking status"}),
    )
    part = wb.lookup(LOINC, "LP14635-4")
    assert part.display == "Glucose" and ("PartTypeName", "COMPONENT") in part.properties
    assert {"LP443001-2", "2339-0", "15074-8"} <= {v for k, v in part.properties if k == "child"}
    assert wb.lookup(LOINC, "LA18978-9").display == "Never smoker"
    assert wb.lookup(LOINC, "LL2201-3").display == "Smoking status"


@pytest.mark.parametrize(
    ("code", "language", "display"),
    [
        ("2345-7", "de", "Glucose [Masse/Volumen] in Serum oder Plasma"),
        ("2345-7", "de-DE", "Glucose [Masse/Volumen] in Serum oder Plasma"),
        ("2823-3", "zh-CN", "钾 [物质的量/体积] 于 血清或血浆"),
        ("2345-7", "zh", "葡萄糖:质量浓度:时间点:血清/血浆:定量型"),
        ("8480-6", "de", "Systolischer Blutdruck"),
        ("2345-7", "en", "Glucose [Mass/volume] in Serum or Plasma"),
        ("2345-7", "fr", "Glucose [Mass/volume] in Serum or Plasma"),
    ],
)
def test_display_language(wb: Workbench, code: str, language: str, display: str) -> None:
    assert wb.lookup(LOINC, code, display_language=language).display == display


# --- $validate-code ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "code", "result", "reason"),
    [
        (f"{LOINC}/vs", "2345-7", True, None),
        (f"{LOINC}/vs", "LP14635-4", False, "not-in-vs"),
        (f"{LOINC}/vs", "99999-9", False, "unknown-code"),
        (f"{LOINC}/vs/LL2201-3", "LA15920-4", True, None),
        (f"{LOINC}/vs/LL2201-3", "LA11882-0", False, "not-in-vs"),
        (VS, "2823-3", True, None),
        (VS, "LP443001-2", True, None),
        (VS, "94500-6", False, "not-in-vs"),
    ],
)
def test_validate_code(
    wb: Workbench, url: str, code: str, result: bool, reason: str | None
) -> None:
    found = wb.validate_code(url, code=code, system=LOINC)
    assert found.result is result and found.issue == reason, found


def test_validate_code_displays_case_and_deprecated_terms(wb: Workbench) -> None:
    german = wb.validate_code(
        f"{LOINC}/vs",
        code="2345-7",
        system=LOINC,
        display="Glucose [Masse/Volumen] in Serum oder Plasma",
    )
    assert german.result and german.display == "Glucose [Mass/volume] in Serum or Plasma"
    wrong = wb.validate_code(f"{LOINC}/vs", code="2345-7", system=LOINC, display="Sugar")
    assert not wrong.result and wrong.issue == "invalid-display"
    lower = wb.validate_in_codesystem(LOINC, "lp14635-4")
    assert lower.result and lower.normalized_code == "LP14635-4"
    deprecated = wb.validate_in_codesystem(LOINC, "2344-0")
    assert (
        deprecated.result and deprecated.issue == "inactive" and deprecated.status == "deprecated"
    )
    assert "MAP_TO 2345-7 |Glucose [Mass/volume] in Serum or Plasma|" in str(deprecated.message)
    discouraged = wb.validate_in_codesystem(LOINC, "2947-0")
    assert discouraged.inactive and discouraged.status == "discouraged"


# --- filters, implicit value sets, subsumption -----------------------------------------------


@pytest.mark.parametrize(
    ("prop", "op", "value", "expected"),
    [
        ("COMPONENT", "=", "LP14635-4", GLUCOSE),
        ("COMPONENT", "=", "glucose", GLUCOSE),
        ("SYSTEM", "=", "Bld", {"2339-0", "15074-8", "6298-4", "38483-4", "2947-0"}),
        ("SYSTEM", "in", "LP7576-4,Arterial system", {"2345-7", "2823-3", "2160-0", "8480-6"}),
        ("METHOD_TYP", "=", "LP435520-2", {"94500-6"}),
        ("STATUS", "=", "DEPRECATED", {"2344-0", "LP6818-1"}),
        ("STATUS", "in", "DEPRECATED,DISCOURAGED", {"2344-0", "2947-0", "LP6818-1"}),
        ("CLASSTYPE", "=", "2", {"8480-6"}),
        ("CLASSTYPE", "=", "Surveys", {"72166-2"}),
        ("CLASS", "=", "MICRO", {"94500-6"}),
        ("ORDER_OBS", "=", "Observation", {"8480-6", "72166-2"}),
        ("SHORTNAME", "regex", "Creat .*", {"2160-0", "38483-4"}),
        ("answer-list", "=", "LL2021-0", {"94500-6"}),
        ("MAP_TO", "exists", "true", {"2344-0"}),
        ("concept", "is-a", "LP14635-4", {"LP14635-4", "LP443001-2", *GLUCOSE} - {"2344-0"}),
        ("concept", "descendent-of", "LP31398-8", {"LP14355-9", "2160-0", "38483-4"}),
        (
            "concept",
            "generalizes",
            "2823-3",
            {"2823-3", "LP15098-4", "LP19403-2", "LP7786-9", "LP29693-6", "LP432695-7"},
        ),
        ("concept", "in", "2345-7,LA11882-0", {"2345-7", "LA11882-0"}),
        ("parent", "=", "LP14355-9", {"2160-0", "38483-4"}),
        ("child", "=", "LP14355-9", {"LP31398-8", "LP7786-9"}),
        ("LIST", "=", "LL2021-0", {"LA11882-0", "LA11883-8"}),
        ("answers-for", "=", "72166-2", {"LA18976-3", "LA18977-1", "LA15920-4", "LA18978-9"}),
        ("copyright", "=", "3rdParty", {"72166-2"}),
    ],
)
def test_filters(wb: Workbench, prop: str, op: str, value: str, expected: set[str]) -> None:
    found = codes(wb, {"system": LOINC, "filter": [{"property": prop, "op": op, "value": value}]})
    assert set(found) == expected


def test_two_filters_and_an_answer_list_in_its_order(wb: Workbench) -> None:
    both = [
        {"property": "COMPONENT", "op": "=", "value": "Potassium"},
        {"property": "SYSTEM", "op": "=", "value": "LP7057-5"},
    ]
    assert codes(wb, {"system": LOINC, "filter": both}) == ["6298-4"]
    smoking = wb.expand(f"{LOINC}/vs/LL2201-3")
    assert [(e.code, e.display) for e in smoking.entries] == [
        ("LA18976-3", "Current every day smoker"),
        ("LA18977-1", "Current some day smoker"),
        ("LA15920-4", "Former smoker"),
        ("LA18978-9", "Never smoker"),
    ]
    assert [e.code for e in wb.expand(f"{LOINC}/vs/LL2021-0").entries] == ["LA11882-0", "LA11883-8"]
    everything = wb.expand(f"{LOINC}/vs")
    assert {e.code for e in everything.entries} == TERMS
    assert {e.code for e in everything.entries if e.inactive} == {"2344-0", "2947-0"}


def test_expansion_in_a_language_with_designations(wb: Workbench) -> None:
    found = wb.expand(f"{LOINC}/vs/LL2201-3", display_language="de")
    assert [e.display for e in found.entries][:1] == ["Current every day smoker"]
    german = wb.expand(VS, display_language="de-DE", include_designations=True)
    by_code = {e.code: e for e in german.entries}
    assert by_code["2823-3"].display == "Kalium [Mol/Volumen] in Serum oder Plasma"
    assert any(d["language"] == "zh-CN" for d in by_code["2823-3"].designations)


@pytest.mark.parametrize(
    ("prop", "op", "value", "text"),
    [
        ("FOO", "=", "1", "the property 'FOO' is not one of LOINC's"),
        ("concept", "is-a", "LP0000-0", "'LP0000-0' is not a code of http://loinc.org"),
        ("STATUS", "is-a", "ACTIVE", "'is-a' is not supported on 'STATUS'"),
        ("LIST", "in", "LL2201-3", "only '=' is supported on 'LIST'"),
        ("copyright", "=", "maybe", "expected copyright = LOINC or 3rdParty"),
    ],
)
def test_unsupported_filters(wb: Workbench, prop: str, op: str, value: str, text: str) -> None:
    with pytest.raises(WorkbenchError, match=text) as caught:
        codes(wb, {"system": LOINC, "filter": [{"property": prop, "op": op, "value": value}]})
    assert caught.value.code == "not-supported"


def test_an_unknown_answer_list_value_set_is_not_found(wb: Workbench) -> None:
    with pytest.raises(WorkbenchError, match="LL0000-0") as caught:
        wb.expand(f"{LOINC}/vs/LL0000-0")
    assert (caught.value.status, caught.value.code) == (404, "not-found")  # issue 22, e1


@pytest.mark.parametrize(
    ("a", "b", "outcome"),
    [
        ("LP7786-9", "2345-7", "subsumes"),
        ("2160-0", "LP14355-9", "subsumed-by"),
        ("LP31398-8", "38483-4", "subsumes"),
        ("2345-7", "2345-7", "equivalent"),
        ("2345-7", "2339-0", "not-subsumed"),
    ],
)
def test_subsumes(wb: Workbench, a: str, b: str, outcome: str) -> None:
    assert wb.subsumes(LOINC, a, b) == outcome


def test_bulk_validation_of_a_column(wb: Workbench) -> None:
    column = pd.Series(["2345-7", "2823-3", "94500-6", "LP443001-2", "nonsense", None] * 50)
    report = wb.validate_column(column, VS, system=LOINC)
    assert report["result"].tolist()[:6] == [True, True, False, True, False, pd.NA]
    issues = report["issue"].astype(object).where(report["issue"].notna(), None)
    assert issues.tolist()[:6] == [None, None, "not-in-vs", None, "unknown-code", "missing"]
    assert report["display"][0] == "Glucose [Mass/volume] in Serum or Plasma"
    assert report["display"][2].startswith("SARS-CoV-2 (COVID-19) RNA [Presence]")
    assert int(report["result"].sum()) == 150


# --- bad input ------------------------------------------------------------------------------


def test_a_folder_that_is_not_a_release(tmp_path: Path) -> None:
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ReleaseFormatError, match="not a terminology release"):
        Workbench().load_release(tmp_path, cache_dir=tmp_path / "cache", progress=False)
    with pytest.raises(ReleaseFormatError, match=r"no LoincTable/Loinc\.csv"):
        Workbench().load_release(
            tmp_path, kind="loinc", cache_dir=tmp_path / "cache", progress=False
        )


def test_a_truncated_zip(tmp_path: Path) -> None:
    whole = zipped(RELEASE, tmp_path / "whole.zip").read_bytes()
    cut = tmp_path / "Loinc.zip"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ReleaseFormatError, match=r"truncated|damaged"):
        Workbench().load_release(cut, kind="loinc", cache_dir=tmp_path / "cache", progress=False)


@pytest.mark.parametrize(
    ("relative", "damage", "text", "line"),
    [
        (
            "LoincTable/Loinc.csv",
            lambda t: t.replace('"LONG_COMMON_NAME"', '"LONG_NAME"', 1),
            "wrong header for Loinc.csv: it lacks LONG_COMMON_NAME",
            1,
        ),
        (
            "AccessoryFiles/PartFile/Part.csv",
            lambda t: t.replace('"LP6827-2","PROPERTY","MCnc",', '"LP6827-2","PROPERTY",', 1),
            "broken row: expected 5 fields, found 4",
            7,
        ),
        (
            "LoincTable/Loinc.csv",
            lambda t: t.replace('"2823-3","Potassium"', '"2823_3","Potassium"', 1),
            "broken row: LOINC_NUM '2823_3' is not a code of that kind",
            6,
        ),
        (
            "AccessoryFiles/AnswerFile/AnswerList.csv",
            lambda t: t.replace('"LA15920-4"', '"LX15920-4"', 1),
            "broken row: AnswerStringId 'LX15920-4' is not a code of that kind",
            4,
        ),
        (
            "AccessoryFiles/LinguisticVariants/zhCN5LinguisticVariant.csv",
            lambda t: t + '"2160-0","肌酐\n',
            "broken row",
            4,
        ),
    ],
)
def test_a_broken_file_names_the_file_and_line(
    tmp_path: Path, relative: str, damage: Any, text: str, line: int
) -> None:
    release = copy_release(tmp_path)
    target = release / relative
    target.write_text(damage(target.read_text(encoding="utf-8")), encoding="utf-8")
    cache = tmp_path / "cache"
    bench = Workbench()
    before = bench.terminology.providers()
    with pytest.raises(ReleaseFormatError, match=text) as caught:
        bench.load_release(release, cache_dir=cache, progress=False)
    assert caught.value.file is not None and caught.value.file.endswith(relative)
    assert caught.value.line == line
    assert f"line {line}" in str(caught.value)
    assert list(cache.iterdir()) == []  # nothing half-built
    assert bench.terminology.providers() == before
    assert LOINC not in set(bench.codesystems["url"])


def test_a_version_clash_changes_nothing(wb: Workbench, cache: Path) -> None:
    before = [p.version for p in wb.terminology.providers()]
    stores = sorted(p.name for p in cache.iterdir())
    with pytest.raises(DuplicateCanonicalError, match=r"http://loinc.org\|2.80 is already loaded"):
        wb.load_release(RELEASE, cache_dir=cache, progress=False)
    assert [p.version for p in wb.terminology.providers()] == before
    assert sorted(p.name for p in cache.iterdir()) == stores
    assert wb.lookup(LOINC, "2345-7").version == "2.80"


# --- HTTP -----------------------------------------------------------------------------------


def test_http_lookup_with_properties_designations_and_language(http: httpx.Client) -> None:
    response = http.get(
        "/CodeSystem/$lookup",
        params={
            "system": LOINC,
            "code": "2823-3",
            "displayLanguage": "zh-CN",
            "property": ["COMPONENT", "designation"],
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert values(body, "display") == ["钾 [物质的量/体积] 于 血清或血浆"]
    props = [p for p in body["parameter"] if p["name"] == "property"]
    assert props == [
        {
            "name": "property",
            "part": [
                {"name": "code", "valueCode": "COMPONENT"},
                {
                    "name": "value",
                    "valueCoding": {"system": LOINC, "code": "LP15098-4", "display": "Potassium"},
                },
            ],
        }
    ]
    languages = {
        part["valueCode"]
        for p in body["parameter"]
        if p["name"] == "designation"
        for part in p["part"]
        if part["name"] == "language"
    }
    assert languages == {"en-US", "de-DE", "zh-CN"}


def test_http_validate_code_expand_and_subsumes(http: httpx.Client) -> None:
    ok = http.get(
        "/ValueSet/$validate-code",
        params={"url": f"{LOINC}/vs/LL2021-0", "system": LOINC, "code": "LA11883-8"},
    )
    assert ok.status_code == 200 and values(ok.json(), "result") == [True]
    assert values(ok.json(), "display") == ["Not detected"]
    stale = http.get("/CodeSystem/$validate-code", params={"url": LOINC, "code": "2344-0"})
    assert values(stale.json(), "inactive") == [True]
    assert "MAP_TO 2345-7" in values(stale.json(), "message")[0]
    expanded = http.get(
        "/ValueSet/$expand", params={"url": f"{LOINC}/vs/LL2201-3", "displayLanguage": "de"}
    )
    assert expanded.status_code == 200, expanded.text
    contains = expanded.json()["expansion"]["contains"]
    assert [c["code"] for c in contains] == ["LA18976-3", "LA18977-1", "LA15920-4", "LA18978-9"]
    subsumes = http.get(
        "/CodeSystem/$subsumes", params={"system": LOINC, "codeA": "LP15098-4", "codeB": "6298-4"}
    )
    assert values(subsumes.json(), "outcome") == ["subsumes"]


def test_http_filter_expansion_and_errors(http: httpx.Client) -> None:
    valueset = {
        "resourceType": "ValueSet",
        "status": "active",
        "compose": {
            "include": [
                {"system": LOINC, "filter": [{"property": "SCALE_TYP", "op": "=", "value": "Ord"}]}
            ]
        },
    }
    body = {"resourceType": "Parameters", "parameter": [{"name": "valueSet", "resource": valueset}]}
    found = http.post("/ValueSet/$expand", json=body)
    assert found.status_code == 200, found.text
    assert [c["code"] for c in found.json()["expansion"]["contains"]] == ["94500-6"]
    valueset["compose"]["include"][0]["filter"][0]["property"] = "NOPE"
    bad = http.post("/ValueSet/$expand", json=body)
    assert_outcome(bad, 422, "not-supported", "the property 'NOPE' is not one of LOINC's")
    unknown = http.get("/CodeSystem/$lookup", params={"system": LOINC, "code": "12-0"})
    assert unknown.status_code == 404


def test_server_script_loads_loinc_and_snomed_releases(tmp_path: Path) -> None:
    import snomed_rf2

    rf2 = snomed_rf2.write(tmp_path / "rf2")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = Path(__file__).resolve().parents[1]
    command = [sys.executable, str(root / "server.py"), "--port", str(port), "--token", TOKEN]
    command += ["--no-default-content", "--release-cache", str(tmp_path / "cache")]
    command += ["--release", str(RELEASE), "--release", str(rf2)]
    env = {**os.environ, "PYTHONPATH": str(root)}
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        with client(f"http://127.0.0.1:{port}/fhir/R4") as http:
            for _ in range(300):  # up to 60 s for the imports and the start
                try:
                    found = http.get(
                        "/CodeSystem/$lookup", params={"system": LOINC, "code": "2345-7"}
                    )
                    break
                except httpx.TransportError:
                    assert process.poll() is None, process.communicate()[0].decode()
                    time.sleep(0.2)
            else:
                raise AssertionError("the server did not start")
            assert values(found.json(), "display") == ["Glucose [Mass/volume] in Serum or Plasma"]
            sct = http.get(
                "/CodeSystem/$lookup",
                params={"system": "http://snomed.info/sct", "code": "22298006"},
            )
            assert values(sct.json(), "display") == ["Myocardial infarction"]
    finally:
        process.terminate()
        output = process.communicate(timeout=30)[0].decode()
    assert "Loaded loinc http://loinc.org|2.80" in output


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    release = copy_release(tmp_path)
    target = release / "AccessoryFiles/ConsumerName/ConsumerName.csv"
    target.write_bytes(target.read_bytes() + b'"2160-0","Cr\xe9atinine"\n')
    with pytest.raises(ReleaseFormatError, match="not UTF-8") as caught:
        Workbench().load_release(release, cache_dir=tmp_path / "cache", progress=False)
    assert caught.value.line == 4 and str(caught.value.file).endswith("ConsumerName.csv")


def test_bulk_validation_on_dask_equals_pandas(wb: Workbench) -> None:
    import dask.dataframe as dd

    column = pd.Series(["2345-7", "x", "2344-0", None, "LP443001-2", "lp14635-4"] * 5)
    on_pandas = wb.validate_column(column, f"{LOINC}/vs", system=LOINC)
    on_dask = wb.validate_column(dd.from_pandas(column, npartitions=2), f"{LOINC}/vs", system=LOINC)
    found = on_dask.compute()
    for name in ("result", "issue", "message", "display"):
        mine, theirs = (
            f[name].astype(object).where(f[name].notna(), None) for f in (found, on_pandas)
        )
        assert mine.tolist() == theirs.tolist(), name
    assert on_pandas["result"].tolist()[:3] == [True, False, True]


@pytest.mark.parametrize(
    ("display", "result"),
    [
        ("Glucose [Masse/Volumen] in Serum oder Plasma", True),
        ("Glucose:Massenkonzentration:Zeitpunkt:Serum oder Plasma:Quantitativ", True),
        ("Glucose [Mass/volume] in Serum or Plasma", False),
    ],
)
def test_validate_code_display_in_a_requested_language(
    wb: Workbench, display: str, result: bool
) -> None:
    found = wb.validate_code(
        f"{LOINC}/vs", code="2345-7", system=LOINC, display=display, display_language="de"
    )
    assert found.result is result
    assert found.display == "Glucose [Masse/Volumen] in Serum oder Plasma"


def test_http_expansion_with_properties(http: httpx.Client) -> None:
    response = http.get(
        "/ValueSet/$expand",
        params={"url": f"{LOINC}/vs", "property": ["COMPONENT", "STATUS"], "count": "1"},
    )
    assert response.status_code == 200, response.text
    first = response.json()["expansion"]["contains"][0]
    assert first["code"] == "15074-8"
    shown = {
        part["valueCode"]: next(v for k, v in other.items() if k.startswith("value"))
        for ext in first["extension"]
        for part, other in [tuple(ext["extension"])]
    }
    assert shown == {
        "COMPONENT": {"system": LOINC, "code": "LP14635-4", "display": "Glucose"},
        "STATUS": "ACTIVE",
    }
