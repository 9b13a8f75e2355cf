"""What a new release does to a column (``wb.impact``, ``report.against``, ``Impact.fix``):
three real ICD-10-CM years checked against their own XML, SNOMED CT's REPLACED BY and
LOINC's MAP_TO from the test releases, on pandas, polars, Dask and Spark columns."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import dask.dataframe as dd
import pandas as pd
import polars as pl
import pytest

from tests import snomed_rf2
from tests.compare_fixtures import codesystem_version
from tests.icd10cm_years import xml_codes
from tests.test_bulk_spark import spark  # noqa: F401  (the one Spark session)
from workbench import Workbench
from workbench.bulk.impact import CHANGES, COLUMNS
from workbench.bulk.impact_table import ImpactTable, table_for
from workbench.errors import (
    CodeSystemNotFoundError,
    ColumnNotFoundError,
    InvalidRequestError,
    WorkbenchError,
)

ICD = "http://hl7.org/fhir/sid/icd-10-cm"
SCT = "http://snomed.info/sct"
LOINC_RELEASE = Path(__file__).parent / "data" / "loinc-release"
OLD_SCT = f"http://snomed.info/sct/{snomed_rf2.CORE}/version/20240731"


def _leaves(names: set[str]) -> set[str]:
    ordered = sorted(names)
    return {
        c
        for i, c in enumerate(ordered)
        if not (i + 1 < len(ordered) and ordered[i + 1].startswith(c))
    }


@pytest.fixture(scope="module")
def years(icd_years: dict[str, Path]) -> dict[str, set[str]]:
    return {year: xml_codes(path) for year, path in icd_years.items()}


@pytest.fixture(scope="module")
def column(years: dict[str, set[str]]) -> pd.Series:
    """Every code either year has, the first one a thousand times, plus blanks (None, an
    empty and a whitespace code: missing) and an unknown code."""
    codes = sorted(years["2025"] | years["2026"])
    return pd.Series([codes[0]] * 999 + codes + [None, "", "   ", "NOT-A-CODE"], name="dx")


def test_icd10cm_impact_matches_the_xml(
    icd_years_wb: Workbench, years: dict[str, set[str]], column: pd.Series
) -> None:
    old, new = years["2025"], years["2026"]
    impact = icd_years_wb.impact(column, system=ICD, from_version="2025", to_version="2026")
    frame = impact.frame.set_index("code")
    assert list(impact.frame.columns) == COLUMNS and set(frame["change"]) <= set(CHANGES)
    groups = frame.groupby("change", observed=True).groups
    of = {kind: set(groups.get(kind, ())) for kind in CHANGES}
    assert of["retired"] == old - new and of["new"] == new - old
    assert of["unknown"] == {"NOT-A-CODE"} and impact.missing == 3
    assert frame["rows"].iat[0] == 1000 and impact.frame["rows"].sum() == len(column) - 3
    # a leaf in 2025's XML that has subcodes in 2026's became a header, unless its 2025
    # children were only its seven-character extensions (then those are what retired)
    leaves_old, leaves_new = _leaves(old), _leaves(new)
    grew = {c for c in old & new if c in leaves_old and c not in leaves_new}
    headers = of["became-header"]
    assert headers and headers <= grew
    before = icd_years_wb.terminology.require_codesystem(ICD, "2025")
    for code in grew - headers:
        assert before.get(code) is not None
        assert all(len(child) == 8 for child in before.get(code).children)  # type: ignore[union-attr]
    code = sorted(headers)[0]
    children = frame.loc[code, "children"]
    assert children and all(c in new and c.startswith(code) for c in children)
    changed = frame.loc[sorted(of["display-changed"])]
    assert (changed["from_display"] != changed["to_display"]).all()
    assert impact.counts["unchanged"] > 0 and "became-header" in repr(impact)
    assert "retired" in impact._repr_html_()


def test_a_second_call_reads_the_kept_table(icd_years_wb: Workbench, column: pd.Series) -> None:
    args = {"system": ICD, "from_version": "2025", "to_version": "2026"}
    first = icd_years_wb.impact(column, **args)
    old, new = (icd_years_wb.terminology.require_codesystem(ICD, v) for v in ("2025", "2026"))
    table = table_for(old, new)
    kept = table.classes
    second = icd_years_wb.impact(column, **args)
    pd.testing.assert_frame_equal(second.frame, first.frame)
    assert second.missing == first.missing == 3  # None, "" and "   "
    assert table_for(old, new) is table and table.classes is kept  # nothing classified again
    as_objects = icd_years_wb.impact(column.astype(object), **args)  # converted to Arrow
    pd.testing.assert_frame_equal(as_objects.frame, first.frame)
    counted = ImpactTable().counted(old, new, list(first.frame["code"]), first.frame["rows"])
    pd.testing.assert_frame_equal(counted, first.frame)  # a fresh table, the same answers


def test_a_reload_or_a_new_version_is_classified_afresh() -> None:
    wb = Workbench()
    wb.load(codesystem_version("1", {"a": "A", "b": "B"}))
    wb.load(codesystem_version("2", {"a": "A", "b": "Bee", "c": "C"}))
    data = pd.Series(["a", "b", "c", "b"])

    def changes(to_version: str) -> dict[str, str]:
        found = wb.impact(
            data, system="http://example.org/cs", from_version="1", to_version=to_version
        )
        return dict(zip(found.frame["code"], found.frame["change"], strict=True))

    assert changes("2") == {"b": "display-changed", "a": "unchanged", "c": "new"}
    wb.load(codesystem_version("2", {"a": "A", "c": "C"}))  # version 2 replaced: b is gone
    assert changes("2") == {"b": "retired", "a": "unchanged", "c": "new"}
    wb.load(codesystem_version("3", {"a": "A", "b": "B"}))
    assert changes("3") == {"b": "unchanged", "a": "unchanged", "c": "unknown"}


@pytest.mark.parametrize("library", ["polars", "dask"])
def test_the_same_frame_from_other_libraries(
    icd_years_wb: Workbench, column: pd.Series, library: str
) -> None:
    data = (
        pl.from_pandas(column)
        if library == "polars"
        else dd.from_pandas(column.to_frame(), npartitions=3)
    )
    at = "dx" if library == "dask" else None
    want = icd_years_wb.impact(column, system=ICD, from_version="2021", to_version="2026")
    got = icd_years_wb.impact(data, code=at, system=ICD, from_version="2021", to_version="2026")
    pd.testing.assert_frame_equal(got.frame, want.frame)
    assert got.missing == want.missing == 3


def test_a_spark_column(icd_years_wb: Workbench, spark: object, column: pd.Series) -> None:  # noqa: F811
    some = column.iloc[990:1990]  # a thousand rows (Spark's rows are made in Python)
    rows = [(None if pd.isna(v) else v,) for v in some.tolist()]
    frame = spark.createDataFrame(rows, "dx string")  # type: ignore[attr-defined]
    want = icd_years_wb.impact(some, system=ICD, from_version="2025", to_version="2026")
    got = icd_years_wb.impact(frame, code="dx", system=ICD, from_version="2025", to_version="2026")
    pd.testing.assert_frame_equal(got.frame, want.frame)


@pytest.fixture(scope="module")
def sct_wb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workbench]:
    """The test release twice: an older version in which 307530000 is still active and
    has no association, and the release itself (inactive, REPLACED BY 22298006)."""
    root = tmp_path_factory.mktemp("sct")
    name = f"Snapshot/Terminology/sct2_Concept_Snapshot_INT_{snomed_rf2.TIME}.txt"
    lines = snomed_rf2.files()[name].split("\r\n")
    active = [
        line.replace(f"{snomed_rf2.TIME}\t0\t", f"{snomed_rf2.TIME}\t1\t", 1)
        if line.startswith("307530000\t")
        else line
        for line in lines
    ]
    older = snomed_rf2.write(
        root / "old",
        edit={**snomed_rf2.concept_file("\r\n".join(active)), **snomed_rf2.association_file([])},
    )
    wb = Workbench()
    wb.load_release(older, version=OLD_SCT, cache_dir=root / "cache", progress=False)
    wb.load_release(snomed_rf2.write(root / "new"), cache_dir=root / "cache", progress=False)
    yield wb


def test_snomed_replaced_by_is_the_replacement_fix_applies(sct_wb: Workbench) -> None:
    data = pd.DataFrame({"finding": ["307530000", "64572001", "307530000", None]})
    impact = sct_wb.impact(
        data, code="finding", system=SCT, from_version=OLD_SCT, to_version=snomed_rf2.VERSION
    )
    row = impact.frame.set_index("code").loc["307530000"]
    assert (row["change"], row["rows"]) == ("retired", 2)
    assert (row["replacement"], row["relation"]) == ("22298006", "REPLACED BY")
    fixed = impact.fix()
    assert fixed.data["finding"].tolist()[:3] == ["22298006", "64572001", "22298006"]
    assert fixed.data["finding"].isna().iat[3]
    assert data["finding"].iat[0] == "307530000"  # the data given is never changed
    audit = fixed.audit
    assert audit[["row", "before", "after", "kind"]].values.tolist() == [
        [0, "307530000", "22298006", "replacement"],
        [2, "307530000", "22298006", "replacement"],
    ]
    assert "REPLACED BY" in str(audit["why"].iat[0]) and fixed.rows_fixed == 2


def test_loinc_map_to_and_report_against(tmp_path: Path) -> None:
    wb = Workbench()
    for version in ("2.79-test", "2.80-test"):
        wb.load_release(LOINC_RELEASE, version=version, cache_dir=tmp_path, progress=False)
    vs = {
        "resourceType": "ValueSet",
        "url": "http://example.org/vs/loinc",
        "compose": {"include": [{"system": "http://loinc.org"}]},
    }
    wb.load(vs)
    data = pd.Series(["2344-0", "2345-7", "2344-0"])
    report = wb.validate_column(data, "http://example.org/vs/loinc", system="http://loinc.org")
    impact = report.against("2.79-test")  # validated against the default, 2.80-test
    assert (impact.from_version, impact.to_version) == ("2.80-test", "2.79-test")
    row = impact.frame.set_index("code").loc["2344-0"]
    assert (row["replacement"], row["relation"], row["rows"]) == ("2345-7", "MAP_TO", 2)
    assert impact.fix().data.tolist() == ["2345-7", "2345-7", "2345-7"]


@pytest.mark.parametrize(
    ("kwargs", "error", "says"),
    [
        ({"from_version": "2025", "to_version": "2025"}, InvalidRequestError, "with itself"),
        ({"from_version": "2024", "to_version": "2025"}, CodeSystemNotFoundError, "'2021'"),
        ({"code": "nope"}, ColumnNotFoundError, "The code column 'nope' is not in the data"),
        ({"system": ""}, InvalidRequestError, "system="),
    ],
)
def test_bad_input(
    icd_years_wb: Workbench, kwargs: dict[str, str], error: type[WorkbenchError], says: str
) -> None:
    args = {"system": ICD, "from_version": "2025", "to_version": "2026", "code": "dx"}
    args.update(kwargs)
    data = pd.DataFrame({"dx": ["A00.0"]})
    with pytest.raises(error) as caught:
        icd_years_wb.impact(data, **args)
    assert says in str(caught.value)


def test_fix_takes_only_replacements(icd_years_wb: Workbench) -> None:
    impact = icd_years_wb.impact(
        pd.Series(["A00.0"]), system=ICD, from_version="2025", to_version="2026"
    )
    with pytest.raises(InvalidRequestError, match="replacement"):
        impact.fix(kinds=("child",))
    assert impact.fix().rows_fixed == 0  # ICD-10-CM records no replacements
