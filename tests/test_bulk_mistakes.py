"""Each user mistake in a column call raises the same documented exception on every
backend (pandas, polars, Dask, Spark), before any work: a column that is not there
(``ColumnNotFoundError``, a ``KeyError`` too), no code column named, a ``system=`` that is
a column or no URI, both ``system=`` and ``system_column=`` (``InvalidRequestError``), an
unknown value set (``ValueSetNotFoundError``); a column of codes that holds a dict or a
list is refused with the type it holds."""

from __future__ import annotations

from typing import Any

import dask.dataframe as dd
import pandas as pd
import polars as pl
import pytest

from tests.test_bulk_spark import PANDAS_WARNING, spark  # noqa: F401 (the session fixture)
from workbench import (
    ColumnNotFoundError,
    InvalidRequestError,
    ValueSetNotFoundError,
    Workbench,
)

pytestmark = pytest.mark.filterwarnings(PANDAS_WARNING)

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
FRAME = pd.DataFrame({"g": ["male", "x"], "s": [GENDER_CS, GENDER_CS]})
BACKENDS = ["pandas", "polars", "dask", "spark"]
MISTAKES = [
    pytest.param(
        {"valueset": GENDER, "code": "nope"},
        ColumnNotFoundError,
        "The code column 'nope' is not in the data",
        id="code-column-not-there",
    ),
    pytest.param(
        {"valueset": GENDER, "code": "g", "display": "d"},
        ColumnNotFoundError,
        "The display column 'd' is not in the data",
        id="display-column-not-there",
    ),
    pytest.param(
        {"valueset": GENDER},
        InvalidRequestError,
        r"Name the code column: code=\.\.\.",
        id="no-code-column",
    ),
    pytest.param(
        {"valueset": GENDER, "code": "g", "system": "s"},
        InvalidRequestError,
        "'s' is a column of the data: name a column of systems with system_column='s'",
        id="system-uri-that-is-a-column",
    ),
    pytest.param(
        {"valueset": GENDER, "code": "g", "system": "sys"},
        InvalidRequestError,
        "'sys' is no URI",
        id="system-that-is-no-uri",
    ),
    pytest.param(
        {"valueset": GENDER, "code": "g", "system_column": "nope"},
        ColumnNotFoundError,
        "The system column 'nope' is not in the data",
        id="system-column-not-there",
    ),
    pytest.param(
        {"valueset": GENDER, "code": "g", "system": GENDER_CS, "system_column": "s"},
        InvalidRequestError,
        "not both",
        id="system-and-system-column",
    ),
    pytest.param(
        {"valueset": "http://example.org/none", "code": "g"},
        ValueSetNotFoundError,
        "http://example.org/none",
        id="unknown-value-set",
    ),
]


def data_of(backend: str, request: pytest.FixtureRequest) -> Any:
    if backend == "polars":
        return pl.from_pandas(FRAME)
    if backend == "dask":
        return dd.from_pandas(FRAME, npartitions=1)
    if backend == "spark":
        return request.getfixturevalue("spark").createDataFrame(FRAME)
    return FRAME


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("kwargs", "error", "text"), MISTAKES)
def test_the_same_mistake_raises_the_same_error(
    default_wb: Workbench,
    request: pytest.FixtureRequest,
    backend: str,
    kwargs: dict[str, Any],
    error: type[Exception],
    text: str,
) -> None:
    data = data_of(backend, request)
    with pytest.raises(error, match=text):
        default_wb.validate_column(data, **kwargs)  # (lazy backends: at the call)


def test_a_column_not_there_is_a_key_error_too(default_wb: Workbench) -> None:
    with pytest.raises(KeyError) as caught:
        default_wb.validate_column(FRAME, GENDER, code="nope")
    assert isinstance(caught.value, InvalidRequestError)
    assert str(caught.value).startswith("The code column 'nope' is not in the data")


@pytest.mark.parametrize("odd", [{"a": 1}, ["x"]], ids=["dict", "list"])
def test_a_dict_or_a_list_among_codes_is_refused_by_its_type(
    default_wb: Workbench, odd: Any
) -> None:
    column = pd.Series(["male", 5, 2.5, odd, b"y", None], dtype=object)
    with pytest.raises(InvalidRequestError, match=f"holds a {type(odd).__name__}"):
        default_wb.validate_column(column, GENDER, system=GENDER_CS)


def test_a_polars_column_of_lists_is_refused_naming_it(default_wb: Workbench) -> None:
    with pytest.raises(InvalidRequestError, match="The code column 'g' holds lists"):
        default_wb.validate_column(pl.Series("g", [["male"], ["x"]]), GENDER)


def test_a_polars_column_of_coding_structs_is_read_as_codings(default_wb: Workbench) -> None:
    """Structs are Codings (or CodeableConcepts), as dicts are in a pandas column."""
    cells: list[Any] = [
        {"system": GENDER_CS, "code": "male"},
        {"system": GENDER_CS, "code": "bogus"},
        {"system": None, "code": "female"},
        None,
    ]
    got = default_wb.validate_column(pl.Series("g", cells), GENDER)
    expected = default_wb.validate_column(pd.Series(cells, dtype=object), GENDER)
    assert got["issue"].to_list() == [
        None if pd.isna(v) else v for v in expected["issue"].astype(object).tolist()
    ]
    assert got["result"].to_list() == [
        None if pd.isna(v) else bool(v) for v in expected["result"].tolist()
    ]
