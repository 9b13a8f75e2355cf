"""Property: on every backend, a column's rows are ``validate_code``'s answers.

Hypothesis builds value sets from parts that have each made a backend disagree before:
two versions of one code system (with different displays, an abstract code in one), an
``is-a`` filter, excludes, listed concepts with their own displays and designations, an
imported value set, inactive and deprecated codes, a code system that is not loaded and
one loaded as ``not-present``. Random columns of codes and systems (right, wrong, padded,
missing, of other systems, without a system) are validated on pandas, polars, Dask (the
threaded scheduler and a pickled engine, as a worker process gets it) and Spark
(``local[2]``); each row's result and issue must be ``validate_code``'s on that row (a
missing code: result NA, the issue ``missing``).
"""

from __future__ import annotations

import itertools
import math
import pickle
from collections.abc import Iterator
from typing import Any

import dask
import dask.dataframe as dd
import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_bulk_spark import PANDAS_WARNING, spark  # noqa: F401 (the session fixture)
from workbench import Workbench
from workbench.bulk.shipping import ShippedChecker

pytestmark = pytest.mark.filterwarnings(PANDAS_WARNING)

BASE = "http://example.org/fhir/property/"
TWO = BASE + "two-versions"
LISTED = BASE + "listed"
NOT_PRESENT = BASE + "not-present"
NOT_LOADED = BASE + "not-loaded"
OTHER = BASE + "other"
IMPORTED = BASE + "ValueSet/imported"
SYSTEMS = [TWO, LISTED, NOT_PRESENT, NOT_LOADED, OTHER, None]
CODES = ["a", "b", "c", "d", "e", "x", " a", "A", "", None, math.nan]
DISPLAYS = [None, None, "A 1", "A 2", "Mine", "Listed A", "Gelistet A", "Listé A", "wrong", ""]
_ids = itertools.count()


def _concept(code: str, display: str, **extra: Any) -> dict[str, Any]:
    return {"code": code, "display": display, **extra}


def _two(version: str) -> dict[str, Any]:
    """One version of a small hierarchy: a > b > c; d inactive; e abstract in version 2."""
    e = _concept("e", f"E {version}")
    if version == "2":
        e["property"] = [{"code": "notSelectable", "valueBoolean": True}]
    return {
        "resourceType": "CodeSystem",
        "url": TWO,
        "version": version,
        "status": "active",
        "content": "complete",
        "hierarchyMeaning": "is-a",
        "property": [{"code": "notSelectable", "type": "boolean"}],
        "concept": [
            _concept(
                "a", f"A {version}", concept=[_concept("b", "B", concept=[_concept("c", "C")])]
            ),
            _concept("d", "D", property=[{"code": "status", "valueCode": "retired"}]),
            e,
        ],
    }


@pytest.fixture(scope="module")
def wb() -> Workbench:
    found = Workbench()
    listed = {
        "resourceType": "CodeSystem",
        "url": LISTED,
        "status": "active",
        "content": "complete",
        "concept": [
            _concept("a", "Listed A", designation=[{"language": "de", "value": "Gelistet A"}]),
            _concept("b", "Listed B", property=[{"code": "status", "valueCode": "deprecated"}]),
            _concept("x", "Listed X"),
        ],
    }
    not_present = {
        "resourceType": "CodeSystem",
        "url": NOT_PRESENT,
        "status": "active",
        "content": "not-present",
    }
    other = {**listed, "url": OTHER, "concept": [_concept("a", "Other A")]}
    imported = {
        "resourceType": "ValueSet",
        "url": IMPORTED,
        "status": "active",
        "compose": {"include": [{"system": LISTED, "concept": [{"code": "x"}]}]},
    }
    found.load([_two("1"), _two("2"), listed, not_present, other, imported], progress=False)
    return found


INCLUDES = [
    {"system": TWO, "version": "1"},
    {"system": TWO, "version": "2"},
    {"system": TWO},
    {"system": TWO, "filter": [{"property": "concept", "op": "is-a", "value": "b"}]},
    {"system": TWO, "version": "1", "concept": [{"code": "a", "display": "Mine"}, {"code": "d"}]},
    {
        "system": LISTED,
        "concept": [
            {"code": "a", "designation": [{"language": "fr", "value": "Listé A"}]},
            {"code": "b"},
        ],
    },
    {"system": LISTED},
    {"system": NOT_PRESENT},
    {"system": NOT_LOADED},
    {"system": NOT_LOADED, "concept": [{"code": "a", "display": "Somewhere"}]},
    {"valueSet": [IMPORTED]},
]
EXCLUDES = [
    {"system": TWO, "concept": [{"code": "c"}]},
    {"system": LISTED, "concept": [{"code": "x"}]},
]


@st.composite
def valuesets(draw: st.DrawFn) -> dict[str, Any]:
    """A value set of one to three includes, sometimes an exclude."""
    include = draw(st.lists(st.sampled_from(INCLUDES), min_size=1, max_size=3, unique_by=str))
    compose: dict[str, Any] = {"include": include}
    if draw(st.booleans()):
        compose["exclude"] = [draw(st.sampled_from(EXCLUDES))]
    return {
        "resourceType": "ValueSet",
        "url": f"{BASE}ValueSet/drawn-{next(_ids)}",
        "status": "active",
        "compose": compose,
    }


Row = tuple[Any, Any, Any]
NAMES = {"code": "code", "system_column": "system", "display": "display"}


def columns() -> st.SearchStrategy[list[Row]]:
    """Rows of code, system and display."""
    row = st.tuples(st.sampled_from(CODES), st.sampled_from(SYSTEMS), st.sampled_from(DISPLAYS))
    return st.lists(row, min_size=1, max_size=25)


def _text(value: Any) -> Any:
    return (
        None
        if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
        else value
    )


def expected(wb: Workbench, url: str, rows: list[Row]) -> list[tuple[Any, Any]]:
    """``validate_code``'s result and issue for each row (a missing code: NA, missing; a
    missing display: none)."""
    found = []
    for code, system, display in rows:
        if _text(code) in (None, ""):
            found.append((None, "missing"))
            continue
        answer = wb.validate_code(url, code=code, system=system, display=display or None)
        found.append((answer.result, answer.issue))
    return found


def answered(frame: pd.DataFrame) -> list[tuple[Any, Any]]:
    return [(_text(r), _text(i)) for r, i in zip(frame["result"], frame["issue"], strict=True)]


def frame_of(rows: list[Row]) -> pd.DataFrame:
    names = ["code", "system", "display"]
    return pd.DataFrame({n: [r[i] for r in rows] for i, n in enumerate(names)}, dtype=object)


def backends(wb: Workbench, url: str, rows: list[Row]) -> Iterator[tuple[str, Any]]:
    """Each backend's answers of ``rows`` (pandas, polars, Dask threaded, Dask through a
    pickled engine), as pandas frames."""
    data = frame_of(rows)
    yield "pandas", wb.validate_column(data, url, **NAMES)
    texts = data.map(lambda v: None if _text(v) is None else str(v))
    polars = wb.validate_column(pl.from_pandas(texts), url, **NAMES)
    yield "polars", polars.to_pandas()
    lazy = wb.validate_column(dd.from_pandas(data, npartitions=2), url, **NAMES)
    with dask.config.set(scheduler="threads"):
        yield "dask", lazy.compute()
    shipped = pickle.loads(pickle.dumps(ShippedChecker(wb.terminology, url, None)))
    from workbench.bulk.pandas_backend import validate_pandas

    yield (
        "worker",
        validate_pandas(shipped.open(), data, code="code", system="system", display="display"),
    )


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(valueset=valuesets(), rows=columns())
def test_every_backend_answers_each_row_as_validate_code(
    wb: Workbench, valueset: dict[str, Any], rows: list[Row]
) -> None:
    wb.load(valueset, progress=False)
    want = expected(wb, valueset["url"], rows)
    for name, got in backends(wb, valueset["url"], rows):
        assert answered(got) == want, (name, valueset["compose"], rows)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(valueset=valuesets(), rows=columns())
def test_spark_answers_each_row_as_validate_code(
    wb: Workbench,
    spark: Any,  # noqa: F811 (test_bulk_spark's session fixture)
    valueset: dict[str, Any],
    rows: list[Row],
) -> None:
    wb.load(valueset, progress=False)
    want = expected(wb, valueset["url"], rows)
    texts = [(None if _text(c) is None else str(c), s, d) for c, s, d in rows]
    data = spark.createDataFrame(texts, "code string, system string, display string")
    got = wb.validate_column(data, valueset["url"], **NAMES).collect()
    assert [(r["result"], r["issue"]) for r in got] == want, (valueset["compose"], rows)
