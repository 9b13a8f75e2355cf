"""Two versions side by side (``wb.diff``, the ``Diff``, the ``VersionDiff`` widget): real
versions of v3-ActCode (FHIR R4's 2018-08-12 and hl7.terminology.r4's 9.0.0) and three real
ICD-10-CM years loaded together, each checked against the releases' own files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.compare_fixtures import codesystem_version
from tests.conftest import EXAMPLES, THO
from tests.icd10cm_years import xml_codes
from workbench import Workbench
from workbench.errors import (
    CodeSystemNotFoundError,
    InvalidRequestError,
    ResourceNotFoundError,
    ValueSetVersionNotFoundError,
    WorkbenchError,
)
from workbench.notebook import VersionDiff
from workbench.terminology.diff import COLUMNS, KINDS, ROW, between, rows_table

ACT = "http://terminology.hl7.org/CodeSystem/v3-ActCode"
ICD = "http://hl7.org/fhir/sid/icd-10-cm"


def _codes(concepts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for c in concepts:
        found[c["code"]] = c
        found.update(_codes(c.get("concept", [])))
    return found


@pytest.fixture(scope="module")
def act_files(package_dirs: dict[str, Path]) -> dict[str, Path]:
    return {
        version: package_dirs[name] / "package" / "CodeSystem-v3-ActCode.json"
        for version, name in (("2018-08-12", EXAMPLES[0]), ("9.0.0", THO[0]))
    }


@pytest.fixture(scope="module")
def act_wb(act_files: dict[str, Path]) -> Workbench:
    wb = Workbench()
    for path in act_files.values():
        wb.load(path, progress=False)
    return wb


def test_two_versions_of_a_code_system_load_side_by_side(
    act_wb: Workbench, act_files: dict[str, Path]
) -> None:
    old, new = (_codes(json.loads(p.read_text())["concept"]) for p in act_files.values())
    assert (len(old), len(new)) == (1116, 1302)
    assert len(act_wb.concepts(ACT, "2018-08-12")) == 1116
    assert len(act_wb.concepts(ACT, "9.0.0")) == 1302
    diff = act_wb.diff(ACT, "2018-08-12", "9.0.0")
    assert (diff.from_size, diff.to_size) == (1116, 1302)
    assert set(diff.added["code"]) == new.keys() - old.keys()
    assert set(diff.removed["code"]) == old.keys() - new.keys()
    assert list(diff.frame.columns) == COLUMNS
    assert set(diff.frame["change"]) <= set(KINDS)
    moved = diff.moved
    assert len(moved) == diff.counts["moved"] > 0
    assert (moved["from_parents"] != moved["to_parents"]).all()
    # the parents of a moved code are the ones each file gives it
    code = moved["code"].iat[0]
    in_new = act_wb.concepts(ACT, "9.0.0").set_index("code").loc[code, "parents"]
    assert moved["to_parents"].iat[0] == ", ".join(sorted(in_new))
    added = diff.added.set_index("code")
    assert added["from_display"].isna().all() and added["to_display"].notna().any()
    assert "added 186" in repr(diff) and "1,116 → 1,302" in repr(diff)
    assert "moved" in diff._repr_html_()
    spec = diff.chart().spec
    assert {v["change"]: v["codes"] for v in spec["data"]["values"]} == diff.counts


@pytest.mark.parametrize(("a", "b"), [("2025", "2026"), ("2021", "2025")])
def test_icd10cm_years_diff_matches_their_xml(
    icd_years_wb: Workbench, icd_years: dict[str, Path], a: str, b: str
) -> None:
    old, new = xml_codes(icd_years[a]), xml_codes(icd_years[b])
    diff = icd_years_wb.diff(ICD, a, b)
    added = {c for c in diff.added["code"] if c in new}
    removed = {c for c in diff.removed["code"] if c in old}
    assert added == new - old and removed == old - new
    assert len(diff.added) >= len(added)  # and their seven-character extensions
    changed = diff.display_changed
    assert len(changed) and (changed["from_display"] != changed["to_display"]).all()
    assert diff.from_size == len(icd_years_wb.concepts(ICD, a))


def _vs(version: str, codes: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "url": "http://example.org/vs",
        "version": version,
        "status": "active",
        "compose": {"include": [{"system": "http://example.org/cs", "concept": codes}]},
    }


@pytest.fixture(scope="module")
def small_wb() -> Workbench:
    wb = Workbench()
    wb.load(
        [
            codesystem_version("1", {"a": "A", "b": "B", "c": "C"}),
            codesystem_version("2", {"a": "A", "b": "B", "c": "C"}),
            _vs("1", [{"code": "a"}, {"code": "b"}]),
            _vs("2", [{"code": "b", "display": "Bee"}, {"code": "c"}]),
        ]
    )
    return wb


def test_two_versions_of_a_value_set_by_their_expansions(small_wb: Workbench) -> None:
    diff = small_wb.diff("http://example.org/vs", "1", "2")
    assert diff.resource_type == "ValueSet"
    assert diff.counts == {
        "added": 1,
        "removed": 1,
        "display-changed": 1,
        "status-changed": 0,
        "moved": 0,
    }
    assert diff.frame[["code", "change"]].values.tolist() == [
        ["c", "added"],
        ["a", "removed"],
        ["b", "display-changed"],
    ]
    assert diff.display_changed[["from_display", "to_display"]].values.tolist() == [["B", "Bee"]]


def test_two_identical_versions_have_no_changes(small_wb: Workbench) -> None:
    diff = small_wb.diff("http://example.org/cs", "1", "2")
    assert set(diff.counts.values()) == {0} and diff.frame.empty
    assert list(diff.frame.columns) == COLUMNS


def _rows(**columns: list[Any]) -> pa.Table:
    n = len(columns["code"])
    base: dict[str, list[Any]] = {
        "display": ["D"] * n,
        "status": ["active"] * n,
        "abstract": [False] * n,
        "parents": [""] * n,
    }
    values = {**base, **columns}
    return rows_table(
        "http://x",
        *(pa.array(values[n], pa.bool_() if n == "abstract" else pa.string()) for n in ROW[1:]),
    )


@pytest.mark.parametrize(
    ("old", "new", "changes"),
    [  # a missing display or parents is "" and a missing abstract flag false, both sides
        ({"display": [None, None, ""]}, {"display": ["", "E", None]}, [("b", "display-changed")]),
        (
            {"abstract": [None, None, True]},
            {"abstract": [False, True, None]},
            [
                ("b", "status-changed"),
                ("c", "status-changed"),
            ],
        ),
        (
            {"parents": [None, "a", ""]},
            {"parents": ["", None, "a"]},
            [
                ("b", "moved"),
                ("c", "moved"),
            ],
        ),
        (
            {"status": ["active", "inactive", None]},
            {"status": ["active", "active", ""]},
            [
                ("b", "status-changed"),
            ],
        ),
    ],
)
def test_missing_values_compare_as_blank(
    old: dict[str, list[Any]], new: dict[str, list[Any]], changes: list[tuple[str, str]]
) -> None:
    codes = ["a", "b", "c"]
    diff = between(
        "http://x", "CodeSystem", "1", "2", _rows(code=codes, **old), _rows(code=codes, **new)
    )
    assert [tuple(r) for r in diff.frame[["code", "change"]].values.tolist()] == changes


@pytest.mark.parametrize("empty", ["old", "new"])
def test_an_empty_version_is_all_added_or_all_removed(empty: str) -> None:
    rows, none = _rows(code=["b", "a"]), _rows(code=[])
    diff = between(
        "http://x", "CodeSystem", "1", "2", *((none, rows) if empty == "old" else (rows, none))
    )
    kind = "added" if empty == "old" else "removed"
    assert diff.frame[["code", "change"]].values.tolist() == [["a", kind], ["b", kind]]
    side = "from" if empty == "old" else "to"
    assert diff.frame[f"{side}_display"].isna().all() and list(diff.frame.columns) == COLUMNS


@pytest.mark.parametrize(
    ("url", "a", "b", "error", "says"),
    [
        ("http://example.org/cs", "1", "1", InvalidRequestError, "compared with itself"),
        ("http://example.org/vs", "2", "2", InvalidRequestError, "compared with itself"),
        ("http://example.org/cs", "1", "3", CodeSystemNotFoundError, "'1', '2'"),
        ("http://example.org/vs", "0", "2", ValueSetVersionNotFoundError, "'1', '2'"),
        ("http://example.org/nothing", "1", "2", ResourceNotFoundError, "neither"),
    ],
)
def test_bad_input(
    small_wb: Workbench, url: str, a: str, b: str, error: type[WorkbenchError], says: str
) -> None:
    with pytest.raises(error) as caught:
        small_wb.diff(url, a, b)
    assert says in str(caught.value)


def test_the_version_diff_widget(act_wb: Workbench) -> None:
    widget = VersionDiff(act_wb, ACT)
    assert (widget.from_version.value, widget.to_version.value) == ("2018-08-12", "9.0.0")
    assert widget.diff is not None and widget.diff.counts["added"] == 186
    widget.kind.value = "moved"
    assert f"{widget.diff.counts['moved']:,} codes" in widget.table.value
    widget.to_version.value = "2018-08-12"
    assert widget.diff is None and "compared with itself" in widget.summary.value
    assert ACT in widget.choices
