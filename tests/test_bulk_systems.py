"""Bulk validation of a code column whose system column holds several systems.

Real data mixes code systems in one column (a diagnosis code column with ICD-10-CM and
SNOMED CT codes, a system column saying which). Every row must equal
``Workbench.validate_code`` on that row, in every column type, including the edge rows:
whitespace around a code or a system, missing codes and missing systems (None, NaN, NA,
""), a system the workbench does not know, a system it knows that the value set does not
draw on, a code whose text belongs to several systems, inactive and abstract codes. A
missing code gives result NA and the issue ``missing`` (the rest as
``validate_code(code="")`` says).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench import Workbench
from workbench.bulk import checker as bulk_checker
from workbench.bulk import encoding
from workbench.bulk import systems as bulk_systems
from workbench.bulk.schema import VALIDATION
from workbench.bulk.shipping import ShippedChecker
from workbench.terminology.validate import batch

LAB = "http://example.org/fhir/CodeSystem/bulk-systems-lab"
DX = "http://example.org/fhir/CodeSystem/bulk-systems-dx"
OTHER = "http://example.org/fhir/CodeSystem/bulk-systems-other"  # loaded, not in the value set
UNKNOWN = "http://example.org/fhir/CodeSystem/bulk-systems-unknown"  # never loaded
VS = "http://example.org/fhir/ValueSet/bulk-systems"
COLUMNS = ["result", "message", "display", "issue", "system"]

RESOURCES: list[dict[str, Any]] = [
    {
        "resourceType": "CodeSystem",
        "url": LAB,
        "status": "active",
        "content": "complete",
        "concept": [
            {"code": "1000-1", "display": "Glucose"},
            {"code": "1001-2", "display": "Sodium"},
            {
                "code": "1002-3",
                "display": "Potassium (old)",
                "property": [{"code": "inactive", "valueBoolean": True}],
            },
            {
                "code": "panel",
                "display": "Panels",
                "property": [{"code": "notSelectable", "valueBoolean": True}],
            },
        ],
    },
    {
        "resourceType": "CodeSystem",
        "url": DX,
        "status": "active",
        "content": "complete",
        "concept": [
            {"code": "A01", "display": "Cholera"},
            {"code": "A02", "display": "Typhoid"},
            {"code": "B01", "display": "Varicella"},
        ],
    },
    {
        "resourceType": "CodeSystem",
        "url": OTHER,
        "status": "active",
        "content": "complete",
        "concept": [{"code": "A01", "display": "Other A01"}, {"code": "X9", "display": "X"}],
    },
    {
        "resourceType": "ValueSet",
        "url": VS,
        "status": "active",
        "compose": {
            "include": [
                {"system": LAB},
                {"system": DX, "concept": [{"code": "A01"}, {"code": "A02", "display": "Typh"}]},
            ]
        },
    },
]

# Every kind of row: (code, system).
EDGE_ROWS: list[tuple[Any, Any]] = [
    ("1000-1", LAB),  # valid
    ("1002-3", LAB),  # inactive member
    ("panel", LAB),  # abstract
    ("9999-9", LAB),  # unknown code
    (" 1000-1", LAB),  # whitespace around the code
    ("1000-1 ", LAB),
    ("A01", DX),  # valid, and the same text in two other systems
    ("A02", DX),  # valid, the value set's own display
    ("B01", DX),  # in the code system, not in the value set
    ("a01", DX),  # case
    ("A01", OTHER),  # a known system the value set does not draw on
    ("X9", OTHER),
    ("nope", OTHER),
    ("A01", UNKNOWN),  # a system nobody loaded
    ("1000-1", UNKNOWN),
    ("A01", " " + DX),  # whitespace around the system: another (unknown) system
    ("A01", DX + " "),
    ("A01", None),  # no system: inferred from the value set
    ("1000-1", ""),
    ("B01", math.nan),
    ("A01", pd.NA),
    ("zzz", None),
    (None, DX),  # missing codes, with and without a system
    ("", LAB),
    (math.nan, OTHER),
    (pd.NA, UNKNOWN),
    (None, None),
    ("", ""),
]
# string[python] and string[pyarrow] hold pd.NA for every missing value; str holds NaN
DTYPES = ["object", "str", "category", "string[pyarrow]", "string[python]"]


def loaded() -> Workbench:
    wb = Workbench()
    for resource in RESOURCES:
        wb.load(resource, progress=False)
    return wb


@pytest.fixture(scope="module")
def mixed_wb() -> Workbench:
    """A Workbench with the resources above, shared by the tests of this module (the
    answers it keeps depend on every call before)."""
    return loaded()


def norm(value: Any) -> Any:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def rows_of(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    assert list(frame.columns) == COLUMNS
    columns = [frame[c].astype(object).tolist() for c in COLUMNS]
    return [tuple(norm(v) for v in row) for row in zip(*columns, strict=True)]


def is_missing(value: Any) -> bool:
    return norm(value) is None or value == ""


def reference(wb: Workbench, code: Any, system: Any) -> tuple[Any, ...]:
    """``validate_code`` on one row (a missing code: result NA, issue missing)."""
    system = None if is_missing(system) else system
    if is_missing(code):
        found = wb.validate_code(VS, code="", system=system)
        assert found.issue == "missing"
        return (None, found.message, found.display, found.issue, found.system)
    found = wb.validate_code(VS, code=code, system=system)
    return (found.result, found.message, found.display, found.issue, found.system)


def expected_rows(wb: Workbench, rows: list[tuple[Any, Any]]) -> list[tuple[Any, ...]]:
    memo: dict[tuple[Any, Any], tuple[Any, ...]] = {}
    found = []
    for code, system in rows:
        key = (norm(code), norm(system))
        if key not in memo:
            memo[key] = reference(wb, code, system)
        found.append(memo[key])
    return found


def frame(rows: list[tuple[Any, Any]], dtype: str, fresh: bool = False) -> pd.DataFrame:
    """The rows as a code and a system column of ``dtype`` (``fresh``: object columns
    whose equal strings are different objects, as ``.str`` methods give)."""
    codes = [c for c, _ in rows]
    systems = [s for _, s in rows]
    if fresh:
        codes, systems = [_fresh(c) for c in codes], [_fresh(s) for s in systems]
    if dtype == "object":
        return pd.DataFrame(
            {"code": pd.Series(codes, dtype=object), "system": pd.Series(systems, dtype=object)}
        )
    return pd.DataFrame({"code": codes, "system": systems}, dtype=dtype)


def _fresh(value: Any) -> Any:
    return (value + "x")[:-1] if isinstance(value, str) else value


# --- every row right ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_edge_rows(mixed_wb: Workbench, dtype: str) -> None:
    """Each kind of row once, then all of them shuffled and repeated (so that the encodings
    see repeats): every row equals validate_code, on a cold and on a warm call."""
    rng = np.random.default_rng(1)
    rows = EDGE_ROWS + [EDGE_ROWS[i] for i in rng.integers(0, len(EDGE_ROWS), 300)]
    data = frame(rows, dtype)
    expected = expected_rows(mixed_wb, rows)
    for _ in range(2):
        report = mixed_wb.validate_column(data, VS, code="code", system_column="system")
        assert rows_of(report) == expected
        assert report.index.equals(data.index)


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_system_and_missing_systems(mixed_wb: Workbench, dtype: str) -> None:
    """One system and missing ones (two groups), under a non-default index."""
    rows = [("A01", DX), ("A01", None), ("B01", DX), (None, None), ("1000-1", None)] * 3
    data = frame(rows, dtype).set_axis([f"r{i}" for i in range(len(rows))])
    report = mixed_wb.validate_column(data, VS, code="code", system_column="system")
    assert rows_of(report) == expected_rows(mixed_wb, rows)
    assert report.index.tolist() == data.index.tolist()


@pytest.mark.parametrize(
    "systems",
    [
        pd.Series([math.nan] * 4),  # an empty column read from a CSV: float NaN
        pd.Series([None, "", math.nan, None], dtype=object),
        pd.Series([DX, math.nan, DX, math.nan]),  # one system, NaN for the others (float)
        pd.Series([DX, LAB, None, OTHER], dtype="category"),
    ],
    ids=["float-nan", "object-missing", "one-and-nan", "category"],
)
def test_system_columns_with_missing_values(mixed_wb: Workbench, systems: pd.Series) -> None:
    codes = pd.Series(["A01", "1000-1", None, "A01"], dtype=object)
    data = pd.DataFrame({"code": codes, "system": systems})
    report = mixed_wb.validate_column(data, VS, code="code", system_column="system")
    rows = list(zip(codes.tolist(), systems.astype(object).tolist(), strict=True))
    assert rows_of(report) == expected_rows(mixed_wb, rows)


def test_system_column_of_fresh_missing_objects(mixed_wb: Workbench) -> None:
    """A system column of other objects per row that are not strings (NaN floats from a
    float column made object, and strings): grouped by value, every row right."""
    n = 20_000
    systems = pd.Series(np.full(n, np.nan)).astype(object)  # a new float object per row
    systems[::3] = [_fresh(DX) for _ in range(len(systems[::3]))]
    codes = pd.Series(["A01", "B01", None, "1000-1"] * (n // 4), dtype=object)
    data = pd.DataFrame({"code": codes, "system": systems})
    report = mixed_wb.validate_column(data, VS, code="code", system_column="system")
    rows = list(zip(codes.tolist(), systems.tolist(), strict=True))
    assert rows_of(report) == expected_rows(mixed_wb, rows)


def test_fresh_object_strings(mixed_wb: Workbench) -> None:
    """Object columns whose equal strings are all different objects (more rows than the
    sample that decides it): both are read as Arrow strings, every row still right."""
    rows = [EDGE_ROWS[i % len(EDGE_ROWS)] for i in range(20_000)]
    data = frame(rows, "object", fresh=True)
    assert not encoding.shares_objects(np.asarray(data["system"], dtype=object))
    report = mixed_wb.validate_column(data, VS, code="code", system_column="system")
    assert rows_of(report) == expected_rows(mixed_wb, rows)


def test_numbers_and_categories_of_numbers(mixed_wb: Workbench) -> None:
    """Integer codes (an object column, a categorical of integers) are their text."""
    rows: list[tuple[Any, Any]] = [(7, DX), (7.0, LAB), (None, DX), ("A01", DX), (7, None)]
    data = pd.DataFrame({"code": [c for c, _ in rows], "system": [s for _, s in rows]})
    texts = [("7" if isinstance(c, (int, float)) and c == 7 else c, s) for c, s in rows]
    expected = expected_rows(mixed_wb, texts)
    report = mixed_wb.validate_column(data, VS, code="code", system_column="system")
    assert rows_of(report) == expected
    numbers = pd.DataFrame(
        {"code": pd.Series([1, 2, None, 1], dtype="Int64").astype("category"), "system": "x"}
    )
    numbers["system"] = [DX, LAB, DX, None]
    report = mixed_wb.validate_column(numbers, VS, code="code", system_column="system")
    assert rows_of(report) == expected_rows(
        mixed_wb, [("1", DX), ("2", LAB), (None, DX), ("1", None)]
    )


def test_many_unknown_systems(mixed_wb: Workbench) -> None:
    """More systems outside the value set than are kept (the rest answered per call)."""
    count = bulk_checker.MAX_FOREIGN + 6
    rows = [("A01", f"http://example.org/unknown/{i % count}") for i in range(3 * count)]
    rows += [("A01", DX), ("X9", OTHER)]
    data = frame(rows, "object")
    for _ in range(2):
        report = mixed_wb.validate_column(data, VS, code="code", system_column="system")
        assert rows_of(report) == expected_rows(mixed_wb, rows)


# --- answers kept across calls ----------------------------------------------------------------


def test_object_codes_known_by_address() -> None:
    """An object column validated again: the code objects found before are known by their
    address, equal codes that are other objects, new codes, codes of other systems and
    missing codes are looked up (a few against the answers' hash index): every row right."""
    wb = loaded()
    codes = [f"Z{i:03d}" for i in range(400)] + ["A01", "A02"]
    first = [(c, DX) for c in codes]
    report = wb.validate_column(frame(first, "object"), VS, code="code", system_column="system")
    assert rows_of(report) == expected_rows(wb, first)
    second = first[::2] + [(_fresh(c), DX) for c in codes[:5]]  # same objects, then copies
    second += [("Y1", DX), ("Y2", DX), ("A01", OTHER), ("X9", OTHER), (None, DX), ("", LAB)]
    for _ in range(2):
        data = frame(second, "object")
        report = wb.validate_column(data, VS, code="code", system_column="system")
        assert rows_of(report) == expected_rows(wb, second)


def test_unknown_system_loaded_later() -> None:
    """Answers for a system outside the value set are kept while that system resolves to
    the same code system: loading it (or a new version) answers its codes afresh."""
    wb = loaded()
    rows = [("A01", UNKNOWN), ("K1", UNKNOWN), ("A01", DX), ("X9", OTHER)]
    data = frame(rows, "str")
    before = wb.validate_column(data, VS, code="code", system_column="system")
    assert rows_of(before) == expected_rows(wb, rows)
    assert before["issue"].tolist()[:2] == ["unknown-system"] * 2
    for version, codes in (("1", ["K1"]), ("2", ["K1", "A01"])):
        wb.load(
            {
                "resourceType": "CodeSystem",
                "url": UNKNOWN,
                "version": version,
                "status": "active",
                "content": "complete",
                "concept": [{"code": c} for c in codes],
            },
            progress=False,
        )
        after = wb.validate_column(data, VS, code="code", system_column="system")
        assert rows_of(after) == expected_rows(wb, rows)
    assert after["issue"].tolist()[:2] == ["not-in-vs"] * 2


@pytest.mark.parametrize("dtype", ["object", "str", "category"])
def test_work_per_distinct_pair(dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many rows of a few distinct (system, code) pairs: each pair is checked at most once,
    and a second call checks none (the answers are kept, for systems outside the value
    set too)."""
    wb = loaded()
    checks: list[tuple[Any, Any]] = []
    real = batch.validate_in_valueset

    def counted(*args: Any, **kwargs: Any) -> Any:
        checks.append((kwargs.get("system"), kwargs.get("code")))
        return real(*args, **kwargs)

    monkeypatch.setattr(batch, "validate_in_valueset", counted)
    rows = [EDGE_ROWS[i % len(EDGE_ROWS)] for i in range(5_000)]
    data = frame(rows, dtype)
    report = wb.validate_column(data, VS, code="code", system_column="system")
    assert (UNKNOWN, "A01") in checks  # a system nobody loaded: the full check
    assert len(checks) <= len(EDGE_ROWS)
    assert len(set(checks)) == len(checks)  # no pair twice
    checks.clear()
    again = wb.validate_column(data, VS, code="code", system_column="system")
    assert checks == []
    monkeypatch.undo()
    assert rows_of(report) == rows_of(again) == expected_rows(wb, rows)


def test_result_categories_shared_across_calls() -> None:
    """Two calls on the same systems share their text categories (one index, kept with
    the answers, not a copy per call) when they use at least half of them; a call that
    uses a few takes a copy of just its own texts. (A fresh Workbench: the answers it
    keeps depend on every call before.)"""
    mixed_wb = loaded()
    data = frame(EDGE_ROWS * 4, "object")
    first = mixed_wb.validate_column(data, VS, code="code", system_column="system")
    again = mixed_wb.validate_column(
        data.astype("category"), VS, code="code", system_column="system"
    )
    assert rows_of(first) == rows_of(again)
    for name in ("message", "display", "issue", "system"):
        assert first[name].cat.categories is again[name].cat.categories
        assert first[name].cat.codes.dtype == np.int8
    few = [("A01", DX), ("X9", OTHER)]
    small = mixed_wb.validate_column(frame(few, "object"), VS, code="code", system_column="system")
    assert rows_of(small) == expected_rows(mixed_wb, few)
    assert sorted(small["system"].cat.categories) == sorted([DX, OTHER])


def test_distinct_pairs_dense_and_hashed() -> None:
    """The dense bitmap and the hashed way give the same pairs, in key order."""
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 3, 1_000)
    codes = rng.integers(0, 50, 1_000)
    dense = bulk_systems.distinct_pairs(groups, codes, 3, 51)
    wide = bulk_systems.distinct_pairs(groups, codes, 3, 1 << 30)  # too wide to be dense
    for row_pair, pairs, width in ((*dense, 51), (*wide, 1 << 30)):
        assert np.all(np.diff(pairs) > 0)
        assert np.array_equal(pairs[row_pair], groups * width + codes)
    assert np.array_equal(dense[0], wide[0])


# --- property ---------------------------------------------------------------------------------

CODES = [c for c, _ in EDGE_ROWS if isinstance(c, str)] + ["Glucose", "1001-2", None, ""]
SYSTEMS = [LAB, DX, OTHER, UNKNOWN, " " + LAB, None, ""]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(CODES), st.sampled_from(SYSTEMS)), min_size=1, max_size=60
    ),
    dtype=st.sampled_from(DTYPES),
)
def test_property_every_row_is_validate_code(
    mixed_wb: Workbench, rows: list[tuple[Any, Any]], dtype: str
) -> None:
    data = frame(rows, dtype)
    report = mixed_wb.validate_column(data, VS, code="code", system_column="system")
    assert rows_of(report) == expected_rows(mixed_wb, rows)


def test_kept_answers_hold_no_replaced_code_system_and_ship_the_engine() -> None:
    """The answers kept for a system outside the value set refer to its code system weakly:
    replacing that code system frees the old index. A worker gets the engine itself
    (``ShippedChecker``, pickled), and its checker answers as the engine's own."""
    import gc
    import pickle
    import weakref

    wb = loaded()
    rows = [("X9", OTHER), ("A01", DX), ("nope", OTHER)]
    data = frame(rows, "str")
    wb.validate_column(data, VS, code="code", system_column="system")
    old = weakref.ref(wb.terminology.codesystem(OTHER))
    checker = bulk_checker.make_checker(wb.terminology, VS, None)
    assert OTHER in checker.kept.foreign and checker.kept.foreign[OTHER][0]() is old()
    shipped = pickle.loads(pickle.dumps(ShippedChecker(wb.terminology, VS, None))).open()
    assert shipped.coding_check.engine is not wb.terminology
    codes = np.array(["X9", "nope"], dtype=object)
    for name in VALIDATION.names:
        assert (
            shipped.answer(OTHER, codes)[name].tolist()
            == checker.answer(OTHER, codes)[name].tolist()
        )
    del checker, shipped
    replacement = {
        "resourceType": "CodeSystem",
        "url": OTHER,
        "status": "active",
        "content": "complete",
        "concept": [{"code": "nope"}],
    }
    wb.load(replacement, progress=False)
    gc.collect()
    assert old() is None
    after = wb.validate_column(data, VS, code="code", system_column="system")
    assert rows_of(after) == expected_rows(wb, rows)
