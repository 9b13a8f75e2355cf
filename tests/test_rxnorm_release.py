"""RxNorm from its RRF full release (the hand-made fixture ``tests/data/rxnorm-release`` in
NLM's layout and column order), in Python and over HTTP."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import httpx
import pandas as pd
import pytest
from http_support import served_fixtures, values

from workbench import Workbench
from workbench.errors import DuplicateCanonicalError, ReleaseFormatError, UnsupportedFilterError
from workbench.releases.loading import detect

RX = "http://www.nlm.nih.gov/research/umls/rxnorm"
RELEASE = Path(__file__).parent / "data" / "rxnorm-release"
SCD_VS = "http://example.org/vs/rxnorm-scd"
APAP = "313782"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rx-cache")


@pytest.fixture(scope="module")
def wb(cache: Path) -> Workbench:
    bench = Workbench()
    bench.load_release(RELEASE, cache_dir=cache, progress=False)
    bench.load(
        {
            "resourceType": "ValueSet",
            "url": SCD_VS,
            "status": "active",
            "compose": {
                "include": [
                    {"system": RX, "filter": [{"property": "TTY", "op": "=", "value": "SCD"}]}
                ]
            },
        }
    )
    return bench


def _zip(folder: Path, target: Path) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                zf.write(f, f.relative_to(folder).as_posix())
    return target


# --- loading -------------------------------------------------------------------------------


def test_load_summary_and_listing(wb: Workbench, cache: Path) -> None:
    assert detect(RELEASE) == "rxnorm"
    again = Workbench().load_release(RELEASE, cache_dir=cache, progress=False)
    assert (again.kind, again.system, again.version) == ("rxnorm", RX, "01062025")
    assert again.concepts == 12 and again.imported is False
    row = wb.codesystems[wb.codesystems["url"] == RX].iloc[0]
    assert (row["version"], row["count"]) == ("01062025", 12)


def test_zip_and_version_override(tmp_path: Path) -> None:
    archive = _zip(RELEASE, tmp_path / "RxNorm_full_01062025.zip")
    bench = Workbench()
    summary = bench.load_release(archive, version="2025-01", cache_dir=tmp_path, progress=False)
    assert (summary.kind, summary.version) == ("rxnorm", "2025-01")
    assert bench.validate_in_codesystem(RX, APAP, version="2025-01").result is True


@pytest.mark.parametrize(
    ("code", "display", "tty"),
    [
        ("161", "acetaminophen", "IN"),
        ("1191", "aspirin", "IN"),  # the IN, not the synonym ASA listed before it
        ("202433", "Tylenol", "BN"),
        (APAP, "acetaminophen 325 MG Oral Tablet", "SCD"),
        ("209387", "acetaminophen 325 MG Oral Tablet [Tylenol]", "SBD"),
        ("315266", "acetaminophen 325 MG", "SCDC"),
        ("317541", "Oral Tablet", "DF"),
    ],
)
def test_display_is_the_preferred_term_and_tty_a_property(
    wb: Workbench, code: str, display: str, tty: str
) -> None:
    found = wb.lookup(RX, code)
    assert found.display == display
    assert dict(found.properties)["TTY"] == tty


def test_relationships_and_attributes_in_lookup(wb: Workbench) -> None:
    props = wb.lookup(RX, APAP).properties
    assert ("consists_of", "315266") in props
    assert ("has_dose_form", "317541") in props
    assert ("has_tradename", "209387") in props
    assert ("RXN_HUMAN_DRUG", "US") in props and ("NDC", "00045049660") in props
    assert ("may_treat", "243670") not in props  # an MMSL relationship, not RxNorm's
    brand = dict(wb.lookup(RX, "209387").properties)
    assert brand["tradename_of"] == APAP and brand["has_ingredient"] == "202433"
    assert ("ingredient_of", "315266") in wb.lookup(RX, "161").properties


@pytest.mark.parametrize(
    ("code", "display", "result", "reason"),
    [
        (APAP, None, True, None),
        (APAP, "APAP 325 MG Oral Tablet", True, None),  # a synonym (SY)
        (APAP, "Tylenol 325 mg tablet (generic)", False, "invalid-display"),  # MMSL's name
        ("9999999", None, False, "unknown-code"),  # only another source's concept
        ("31378", None, False, "unknown-code"),
        ("2000000", None, True, "inactive"),  # only an obsolete (SUPPRESS=O) atom
    ],
)
def test_validate_in_the_code_system(
    wb: Workbench, code: str, display: str | None, result: bool, reason: str | None
) -> None:
    found = wb.validate_in_codesystem(RX, code, display=display)
    assert (found.result, found.issue) == (result, reason)


def test_retired_codes_are_inactive_with_their_replacement(wb: Workbench) -> None:
    remapped = wb.validate_in_codesystem(RX, "1000000")
    assert remapped.result is True and remapped.inactive is True
    assert remapped.status == "retired"
    assert "replaced by 313782 (acetaminophen 325 MG Oral Tablet)" in (remapped.message or "")
    gone = wb.validate_in_codesystem(RX, "1000001")
    assert "retired without replacement" in (gone.message or "")
    strict = wb.validate_code(valueset=SCD_VS, code="1000000", system=RX)
    assert (strict.result, strict.issue) == (False, "not-in-vs")


@pytest.mark.parametrize(
    ("flt", "codes"),
    [
        ({"property": "TTY", "op": "=", "value": "SCD"}, ["243670", APAP, "2000000"]),
        ({"property": "TTY", "op": "in", "value": "IN,BN"}, ["161", "1191", "202433"]),
        ({"property": "has_ingredient", "op": "=", "value": "161"}, ["315266"]),
        ({"property": "consists_of", "op": "in", "value": "315266,315431"}, ["243670", APAP]),
        ({"property": "tradename_of", "op": "=", "value": APAP}, ["209387"]),
        ({"property": "ingredient_of", "op": "=", "value": "315266"}, ["161"]),
        ({"property": "RXN_AVAILABLE_STRENGTH", "op": "=", "value": "81 MG"}, ["243670"]),
        ({"property": "inactive", "op": "=", "value": "true"}, ["1000000", "1000001", "2000000"]),
    ],
)
def test_filters_expand(wb: Workbench, flt: dict[str, str], codes: list[str]) -> None:
    vs = {"resourceType": "ValueSet", "compose": {"include": [{"system": RX, "filter": [flt]}]}}
    assert [e.code for e in wb.expand(vs).entries] == codes
    assert wb.validate_code(valueset=vs, code=codes[0], system=RX).result is True


@pytest.mark.parametrize(
    "flt",
    [
        {"property": "has_ingredient", "op": "=", "value": "424242"},
        {"property": "STY", "op": "=", "value": "T200"},
        {"property": "TTY", "op": "is-a", "value": "SCD"},
    ],
)
def test_bad_filters_are_clear_errors(wb: Workbench, flt: dict[str, str]) -> None:
    vs = {"resourceType": "ValueSet", "compose": {"include": [{"system": RX, "filter": [flt]}]}}
    with pytest.raises(UnsupportedFilterError):
        wb.expand(vs)


def test_frames(wb: Workbench) -> None:
    concepts = wb.concepts(RX)
    assert len(concepts) == 12
    row = concepts[concepts["code"] == "1000000"].iloc[0]
    assert (row["inactive"], row["retired"], row["replaced_by"]) == (True, True, APAP)
    names = wb.designations(RX)
    assert set(names.loc[names["code"] == APAP, "TTY"]) == {"SCD", "PSN", "SY"}
    assert "Tylenol 325 mg tablet (generic)" not in set(names["value"])


def test_validate_column(wb: Workbench) -> None:
    codes = pd.Series([APAP, "243670", "161", "1000000", "junk", None] * 100)
    frame = wb.validate_column(codes, SCD_VS, system=RX)
    assert frame["result"].tolist()[:6] == [True, True, False, False, False, pd.NA]
    issues = frame["issue"].astype(object).where(frame["issue"].notna(), None)
    assert issues.tolist()[:6] == [
        None,
        None,
        "not-in-vs",
        "not-in-vs",
        "unknown-code",
        "missing",
    ]
    for i, code in enumerate([APAP, "161", "junk"]):
        one = wb.validate_code(valueset=SCD_VS, code=code, system=RX)
        at = [0, 2, 4][i]
        assert bool(frame["result"].iloc[at]) is one.result


# --- bad input -----------------------------------------------------------------------------


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "RxNorm_full_01062025"
    shutil.copytree(RELEASE, target)
    return target


def _break(path: Path, line: int, text: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[line - 1] = text
    path.write_text("".join(lines))


@pytest.mark.parametrize(
    ("file", "line", "text", "message"),
    [
        ("RXNCONSO", 4, "1191|ENG|||\n", "RXNCONSO.RRF, line 4: a row with 4 fields, expected 18"),
        (
            "RXNREL",
            2,
            "315266||CUI|RO|161||CUI|ingredient_of|R2||RXNORM|RXNORM||||\n",
            "RXNREL.RRF, line 2: a row with 15 fields, expected 16",
        ),
        (
            "RXNCONSO",
            6,
            "2o2433|ENG||||||588040|588040|202433||RXNORM|BN|202433|Tylenol||N|4096|\n",
            "RXNCONSO.RRF, line 6: RXCUI '2o2433' is not an RXCUI",
        ),
        (
            "RXNSAT",
            3,
            "313782|||1063458|AUI|313782|AT3||RXN_AVAILABLE_STRENGTH|RXNORM|325 MG|N|x\n",
            "RXNSAT.RRF, line 3: a row with 13 fields",
        ),
    ],
)
def test_broken_rows_name_file_and_line(
    wb: Workbench, tmp_path: Path, file: str, line: int, text: str, message: str
) -> None:
    release = _copy(tmp_path)
    _break(release / "rrf" / f"{file}.RRF", line, text)
    before = wb.codesystems
    cache = tmp_path / "cache"
    with pytest.raises(ReleaseFormatError) as caught:
        wb.load_release(release, cache_dir=cache, progress=False)
    assert message in str(caught.value)
    assert wb.codesystems.equals(before)
    assert not cache.exists() or not any(cache.iterdir())  # nothing half-imported


def test_not_a_release_and_missing_files(wb: Workbench, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello")
    with pytest.raises(ReleaseFormatError, match="not a terminology release"):
        wb.load_release(empty, progress=False)
    with pytest.raises(ReleaseFormatError, match=r"no rrf/RXNCONSO\.RRF"):
        wb.load_release(empty, kind="rxnorm", cache_dir=tmp_path / "c", progress=False)
    partial = _copy(tmp_path)
    (partial / "rrf" / "RXNREL.RRF").unlink()
    with pytest.raises(ReleaseFormatError, match=r"RXNREL\.RRF missing"):
        wb.load_release(partial, cache_dir=tmp_path / "c", progress=False)


def test_truncated_zip(wb: Workbench, tmp_path: Path) -> None:
    archive = _zip(RELEASE, tmp_path / "RxNorm_full_01062025.zip")
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2])
    before = wb.codesystems
    with pytest.raises(ReleaseFormatError, match="zip"):
        wb.load_release(archive, kind="rxnorm", cache_dir=tmp_path / "c", progress=False)
    assert wb.codesystems.equals(before)


def test_the_same_version_twice_changes_nothing(wb: Workbench, cache: Path) -> None:
    before = wb.codesystems
    with pytest.raises(DuplicateCanonicalError):
        wb.load_release(RELEASE, cache_dir=cache, progress=False)
    assert wb.codesystems.equals(before)


# --- HTTP ----------------------------------------------------------------------------------


server, http = served_fixtures()


def test_http_lookup(http: httpx.Client) -> None:
    body = http.get("/CodeSystem/$lookup", params={"system": RX, "code": "209387"}).json()
    assert values(body, "display") == ["acetaminophen 325 MG Oral Tablet [Tylenol]"]
    props = {
        (p["part"][0]["valueCode"], next(v for k, v in p["part"][1].items() if k != "name"))
        for p in body["parameter"]
        if p["name"] == "property"
    }
    assert {("TTY", "SBD"), ("tradename_of", APAP), ("has_ingredient", "202433")} <= props


@pytest.mark.parametrize(
    ("code", "result"), [(APAP, True), ("161", False), ("1000000", False), ("42", False)]
)
def test_http_validate_code(http: httpx.Client, code: str, result: bool) -> None:
    body = http.get(
        "/ValueSet/$validate-code", params={"url": SCD_VS, "code": code, "system": RX}
    ).json()
    assert values(body, "result") == [result]


def test_http_retired_code_message(http: httpx.Client) -> None:
    body = http.get("/CodeSystem/$validate-code", params={"url": RX, "code": "1000000"}).json()
    assert values(body, "result") == [True]
    assert "replaced by 313782" in values(body, "message")[0]


def test_http_expand(http: httpx.Client) -> None:
    body = http.get("/ValueSet/$expand", params={"url": SCD_VS}).json()
    assert [(c["code"], c.get("inactive", False)) for c in body["expansion"]["contains"]] == [
        ("243670", False),
        (APAP, False),
        ("2000000", True),
    ]


def test_bulk_validation_on_dask_equals_pandas(wb: Workbench) -> None:
    import dask.dataframe as dd

    codes = pd.Series([APAP, "243670", "161", "1000000", "junk", None, "2000000"] * 3)
    on_pandas = wb.validate_column(codes, SCD_VS, system=RX)
    on_dask = wb.validate_column(dd.from_pandas(codes, npartitions=3), SCD_VS, system=RX)
    done = on_dask.compute()
    for column in ("result", "issue", "message", "display"):
        assert done[column].astype(object).where(done[column].notna(), None).tolist() == (
            on_pandas[column].astype(object).where(on_pandas[column].notna(), None).tolist()
        ), column
