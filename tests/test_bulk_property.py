"""Property: a column validation equals ``validate_code`` on each of its rows.

Over real value sets (every R4 core value set that expands, and the demo value sets), random
frames mix member codes, codes of the same code systems outside the value set, unknown
codes, unknown systems, missing codes (None, NaN, NA, ""), codes with surrounding whitespace
and displays (right, wrong, a designation, missing), in the input forms of the issue: a
system column (with missing systems, inferred), one constant system, no system (inferred),
and a column of Coding dicts; with abstract codes allowed or not, under a random index, in
object, str, category and string[pyarrow] columns. Every row must equal
``Workbench.validate_code`` on that row: result, message, display, issue (the reason) and
system; a missing code gives the result NA and the issue ``missing`` (and otherwise what
``validate_code(code="")`` says).

A missing display (None, NaN, NA or "") in a display column is no display: the reference is
``validate_code(display=None)``.

The main property draws system and display columns as object, str or category; a second,
derandomized one puts them in string[pyarrow] (missing values are pd.NA there), half of the
time on value sets of several systems.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench import Workbench, WorkbenchError

UNKNOWN_SYSTEM = "http://unknown.example.org/CodeSystem/nothing"
COLUMNS = ["result", "message", "display", "issue", "system"]
MISSING_MESSAGE = "No code was given"
DEMO_VALUESETS = [
    "http://example.org/fhir/ValueSet/workbench-demo-all",
    "http://example.org/fhir/ValueSet/workbench-demo-bookable",
    "http://example.org/fhir/ValueSet/workbench-demo-in-person",
    "http://example.org/fhir/ValueSet/workbench-demo-remote-live",
]
MISSING = [None, math.nan, pd.NA, ""]
Row = tuple[Any, Any, Any, Any, Any]


@dataclass(eq=False)
class Pool:
    """What random rows are drawn from, for one value set."""

    wb: Workbench
    url: str
    systems: tuple[str, ...]
    members: tuple[tuple[str, str], ...]
    neighbours: tuple[tuple[str, str], ...]  # same systems, not in the value set
    displays: Mapping[tuple[str, str], tuple[str, ...]]  # every valid display of a member

    def __repr__(self) -> str:
        return f"Pool({self.url!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


class Pools(list[Pool]):
    """The value sets to draw from, with a short repr.

    Hypothesis prints the test's arguments when it reports a failure; the full repr of a
    thousand pools is megabytes, and its "overly large repr" warning is an error here
    (filterwarnings = error), which would hide the real failure behind a
    FlakyStrategyDefinition.
    """

    def __repr__(self) -> str:
        return f"<{len(self)} value sets>"


def _pool(wb: Workbench, url: str) -> Pool | None:
    try:
        compiled = wb.terminology.compiled(url)
        index = compiled.member_index()
    except WorkbenchError:
        return None
    if not index:
        return None
    members = tuple(sorted(index))
    systems = tuple(compiled.systems())
    displays: dict[tuple[str, str], tuple[str, ...]] = {}
    for key in members:
        match = compiled.contains(*key)
        found = [match.display] if match.display else []
        if match.concept is not None:
            found += [d for d in match.concept.displays() if d not in found]
        displays[key] = tuple(found)
    neighbours: list[tuple[str, str]] = []
    for system in systems:
        cs = wb.terminology.codesystem(system)
        if cs is None or not cs.is_complete:  # a grammar (UCUM) has no list of codes
            continue
        outside = [(system, c) for c in cs.concepts if (system, c) not in index]
        neighbours += outside[:100]
    return Pool(wb, url, systems, members, tuple(neighbours), displays)


@pytest.fixture(scope="module")
def pools(default_wb: Workbench, r4_wb: Workbench) -> Pools:
    """The demo value sets first (hypothesis shrinks towards them), then every R4 core value
    set that expands."""
    found = [_pool(default_wb, url) for url in DEMO_VALUESETS]
    found += [_pool(r4_wb, vs["url"]) for vs in r4_wb.registry.all("ValueSet")]
    usable = Pools(p for p in found if p is not None)
    assert len(usable) > 1000
    return usable


# --- comparing --------------------------------------------------------------------------------


def norm(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def is_missing(value: Any) -> bool:
    return norm(value) is None or value == ""


def rows_of(frame: pd.DataFrame) -> list[Row]:
    assert list(frame.columns) == COLUMNS
    columns = [frame[c].astype(object).tolist() for c in COLUMNS]
    return [tuple(norm(v) for v in row) for row in zip(*columns, strict=True)]


def reference(wb: Workbench, url: str, code: Any, system: Any, display: Any, abstract: bool) -> Row:
    system = None if is_missing(system) else system
    if is_missing(code):
        found = wb.validate_code(url, code="", system=system, abstract=abstract)
        assert found.issue == "missing"
        return (None, found.message, found.display, found.issue, found.system)
    found = wb.validate_code(
        url,
        code=code,
        system=system,
        display=None if is_missing(display) else display,
        abstract=abstract,
    )
    return (found.result, found.message, found.display, found.issue, found.system)


def reference_coding(wb: Workbench, url: str, cell: Any, abstract: bool) -> Row:
    if not isinstance(cell, Mapping):
        return (None, MISSING_MESSAGE, None, "missing", None)
    found = wb.validate_code(url, coding=cell, abstract=abstract)
    return (found.result, found.message, found.display, found.issue, found.system)


# --- generating -------------------------------------------------------------------------------

CODE_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=10
)
ROW_KINDS = ["member", "member", "neighbour", "unknown-code", "unknown-system", "missing", "ws"]
DISPLAY_KINDS = ["none", "missing", "right", "designation", "wrong", "other-display"]


@dataclass(eq=False)
class Case:
    pool: Pool
    form: str  # column | constant | omitted | coding
    codes: list[Any]
    systems: list[Any]  # per row (column form) or the constant, repeated
    displays: list[Any] | None
    abstract: bool
    index: pd.Index


@st.composite
def rows(draw: st.DrawFn, pool: Pool, with_display: bool) -> tuple[Any, Any, Any]:
    kind = draw(st.sampled_from(ROW_KINDS), label="row kind")
    system, code = draw(st.sampled_from(pool.members))
    if kind == "neighbour" and pool.neighbours:
        system, code = draw(st.sampled_from(pool.neighbours))
    elif kind == "unknown-code":
        system = draw(st.sampled_from(pool.systems))
        code = draw(CODE_TEXT)
    elif kind == "unknown-system":
        system = UNKNOWN_SYSTEM
    elif kind == "missing":
        code = MISSING[draw(st.integers(0, len(MISSING) - 1))]
    elif kind == "ws":
        code = draw(st.sampled_from([" ", "\t", "  "])) + code
        code = code + draw(st.sampled_from(["", " ", "\n"]))
    display: Any = None
    if with_display:
        valid = pool.displays.get((system, code), ())
        how = draw(st.sampled_from(DISPLAY_KINDS), label="display kind")
        if how == "missing":
            display = MISSING[draw(st.integers(0, len(MISSING) - 1))]
        elif how == "right" and valid:
            display = valid[0]
        elif how == "designation" and valid:
            display = draw(st.sampled_from(valid))
        elif how == "wrong":
            display = draw(CODE_TEXT)
        elif how == "other-display":
            other = pool.displays.get(draw(st.sampled_from(pool.members)), ())
            display = other[0] if other else "Something else"
    return code, system, display


@st.composite
def cases(draw: st.DrawFn, pools: list[Pool]) -> Case:
    pool = draw(st.sampled_from(pools), label="value set")
    form = draw(st.sampled_from(["column", "constant", "omitted", "coding"]), label="form")
    with_display = form in ("column", "coding") and draw(st.booleans(), label="display")
    drawn = draw(st.lists(rows(pool, with_display), min_size=1, max_size=25))
    codes = [c for c, _, _ in drawn]
    systems = [s for _, s, _ in drawn]
    displays = [d for _, _, d in drawn] if with_display else None
    if form == "column":
        # some rows lose their system: it is then inferred from the value set
        systems = [
            MISSING[draw(st.integers(0, 3))] if draw(st.integers(0, 5)) == 0 else s for s in systems
        ]
    elif form == "constant":
        constant = draw(st.sampled_from([*pool.systems, UNKNOWN_SYSTEM]), label="system")
        systems = [constant] * len(codes)
    elif form == "omitted":
        systems = [None] * len(codes)
    n = len(codes)
    indexes = [
        pd.RangeIndex(n),
        pd.Index(np.random.default_rng(n).permutation(n) * 3 + 7),
        pd.Index([f"row-{i}" for i in range(n)][::-1]),
    ]
    index = indexes[draw(st.integers(0, len(indexes) - 1), label="index")]
    return Case(pool, form, codes, systems, displays, draw(st.booleans()), index)


def build(
    case: Case, code_dtype: Any, other_dtype: Any
) -> tuple[pd.Series | pd.DataFrame, dict[str, Any]]:
    if case.form == "coding":
        cells: list[Any] = []
        for i, code in enumerate(case.codes):
            if is_missing(code):
                cells.append(code)  # a missing cell: None, NaN, NA or ""
                continue
            cell: dict[str, Any] = {"code": code}
            if not is_missing(case.systems[i]):
                cell["system"] = case.systems[i]
            if case.displays is not None and norm(case.displays[i]) is not None:
                cell["display"] = case.displays[i]
            cells.append(cell)
        return pd.Series(cells, index=case.index, dtype=object), {}
    if code_dtype == "category[pyarrow]":
        codes = pd.Series(case.codes, index=case.index, dtype="string[pyarrow]")
        codes = codes.astype("category")
    elif code_dtype == "large_string[pyarrow]":  # an Arrow column takes None, not NaN
        cells = [None if norm(c) is None else c for c in case.codes]
        codes = pd.Series(cells, index=case.index, dtype=code_dtype)
    else:
        codes = pd.Series(case.codes, index=case.index, dtype=code_dtype)
    if case.form == "omitted" and case.displays is None:
        return codes, {}
    if case.form == "constant" and case.displays is None:
        return codes, {"system": case.systems[0]}
    frame = pd.DataFrame({"dx_code": codes})
    kwargs: dict[str, Any] = {"code": "dx_code"}
    if case.form == "column":
        frame["dx_system"] = pd.Series(case.systems, index=case.index, dtype=other_dtype)
        kwargs["system_column"] = "dx_system"
    if case.displays is not None:
        frame["dx_display"] = pd.Series(case.displays, index=case.index, dtype=other_dtype)
        kwargs["display"] = "dx_display"
    return frame, kwargs


def check(case: Case, code_dtype: Any, other_dtype: Any) -> None:
    data, kwargs = build(case, code_dtype, other_dtype)
    pool = case.pool
    report = pool.wb.validate_column(data, pool.url, abstract=case.abstract, **kwargs)
    assert report.index.equals(data.index)
    compare(case, data, rows_of(report))


def compare(case: Case, data: Any, got: list[Row]) -> None:
    """Every row of a result equals validate_code on that row."""
    pool = case.pool
    if case.form == "coding":
        assert isinstance(data, pd.Series)
        expected = [reference_coding(pool.wb, pool.url, c, case.abstract) for c in data]
    else:
        expected = [
            reference(
                pool.wb,
                pool.url,
                code,
                case.systems[i],
                case.displays[i] if case.displays is not None else None,
                case.abstract,
            )
            for i, code in enumerate(case.codes)
        ]
    for i, (row, want) in enumerate(zip(got, expected, strict=True)):
        assert row == want, (
            f"row {i}: code={case.codes[i]!r} system={case.systems[i]!r} "
            f"display={case.displays[i] if case.displays else None!r}"
        )
    for row in got:
        assert (row[3] == "missing") == (row[0] is None) or case.form == "coding"


# object, pandas' default str and categorical for every column; for codes also
# string[pyarrow], an Arrow large_string column and a categorical over Arrow strings
CODE_DTYPES = [
    object,
    "str",
    "category",
    "string[pyarrow]",
    "large_string[pyarrow]",
    "category[pyarrow]",  # categories of dtype string[pyarrow]
]
OTHER_DTYPES = [object, "str", "category"]


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_column_equals_validate_code(pools: Pools, data: st.DataObject) -> None:
    case = data.draw(cases(pools), label="case")
    code_dtype = data.draw(st.sampled_from(CODE_DTYPES), label="code dtype")
    other_dtype = data.draw(st.sampled_from(OTHER_DTYPES), label="system/display dtype")
    check(case, code_dtype, other_dtype)


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_nullable_string_columns_equal_validate_code(pools: Pools, data: st.DataObject) -> None:
    """System and display columns of dtype string[pyarrow] (their missing values are
    pd.NA), half of the time on a value set of several code systems (where a row without a
    system cannot be inferred). Derandomized: the same examples on every run."""
    multi = Pools(p for p in pools if len(p.systems) > 1)
    chosen = data.draw(st.sampled_from([pools, multi]), label="pools")
    case = data.draw(cases(chosen), label="case")
    check(case, "string[pyarrow]", "string[pyarrow]")


def to_polars(values: pd.Series) -> pl.Series:
    """A column as polars strings; polars has one missing value (null), "" stays ""."""
    cells = [None if norm(v) is None and not isinstance(v, str) else v for v in values]
    return pl.Series(str(values.name or "code"), cells, dtype=pl.Utf8)


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_polars_equals_validate_code(pools: Pools, data: st.DataObject) -> None:
    """polars Series and DataFrames (String, Categorical or Enum codes) give the same rows."""
    case = data.draw(cases(pools).filter(lambda c: c.form != "coding"), label="case")
    kind = data.draw(st.sampled_from(["String", "Categorical", "Enum"]), label="code dtype")
    built, kwargs = build(case, object, object)
    codes = to_polars(built if isinstance(built, pd.Series) else built["dx_code"])
    if kind == "Categorical":
        codes = codes.cast(pl.Categorical)
    elif kind == "Enum":
        codes = codes.cast(pl.Enum(sorted({c for c in codes.to_list() if c is not None})))
    if isinstance(built, pd.DataFrame):
        others = [to_polars(built[c]) for c in built.columns if c != "dx_code"]
        polars_data: Any = pl.DataFrame([codes.rename("dx_code"), *others])
    else:
        polars_data = codes
    pool = case.pool
    report = pool.wb.validate_column(polars_data, pool.url, abstract=case.abstract, **kwargs)
    assert isinstance(report, pl.DataFrame)
    compare(case, built, rows_of(report.to_pandas()))
