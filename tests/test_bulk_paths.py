"""The dotted-path rule (workbench/bulk/paths.py) as a table, and ``validate_column`` on
pandas reading a path or a column of arrays by it."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

from workbench import Workbench
from workbench.bulk import paths
from workbench.errors import ColumnNotFoundError, InvalidRequestError

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
CS = "http://hl7.org/fhir/administrative-gender"
MALE = {"system": CS, "code": "male"}
BOGUS = {"system": CS, "code": "bogus"}
OTHER = {"system": "http://example.org/other", "code": "x"}


@pytest.mark.parametrize(
    ("value", "steps", "expected"),
    [
        ("male", (), "male"),  # a code stays a code
        (12, (), 12),
        (None, (), None),
        (MALE, (), MALE),  # a Coding, a CodeableConcept: as they are
        ({"coding": [MALE]}, (), {"coding": [MALE]}),
        ([MALE, BOGUS], (), {"coding": [MALE, BOGUS]}),  # an array of Codings: one concept
        (np.array([MALE], dtype=object), (), {"coding": [MALE]}),  # pyarrow's arrays
        ([], (), None),
        ({"code": {"coding": [MALE]}}, ("code",), {"coding": [MALE]}),
        ({"code": {"coding": [MALE]}}, ("code", "coding"), {"coding": [MALE]}),
        ({"code": {"text": "x"}}, ("code", "coding"), None),  # nothing: missing
        ({"status": "final"}, ("code",), None),
        ({"c": [{"code": {"coding": [MALE]}}, {"code": {"coding": [BOGUS]}}]}, ("c", "code"),
         {"coding": [MALE, BOGUS]}),  # every element's CodeableConcept, its codings joined
        ({"c": [{"code": MALE}, {"other": 1}]}, ("c", "code"), {"coding": [MALE]}),
    ],
)  # fmt: skip
def test_row_value(value: Any, steps: tuple[str, ...], expected: Any) -> None:
    assert paths.row_value(value, steps, "p") == expected


@pytest.mark.parametrize(
    ("value", "steps", "message"),
    [
        ({"id": "x"}, ("id", "coding"), "The path 'p' goes into a string at 'coding'"),
        ({"n": 1}, ("n", "a"), "The path 'p' goes into a number at 'a'"),
        ([1, 2], (), "The path 'p' gives a list of numbers in a row"),
        ({"c": {"coding": [MALE]}}, ("c", "coding", "code"), "gives a list of strings"),
    ],
)
def test_row_value_refuses(value: Any, steps: tuple[str, ...], message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        paths.row_value(value, steps, "p")


def test_split_prefers_the_column_then_the_longest_prefix() -> None:
    assert paths.split(["a.b", "a"], "a.b.c") == paths.Path("a.b.c", "a.b", ("c",))
    assert paths.split(["a"], "a.b.c") == paths.Path("a.b.c", "a", ("b", "c"))
    assert paths.split(["a"], "b.c") is None


def test_validate_column_walks_a_path_and_a_column_of_arrays(default_wb: Workbench) -> None:
    frame = pd.DataFrame(
        {
            "gender": [
                {"coding": [MALE]},
                {"coding": [OTHER, MALE]},  # valid: one coding is
                {"coding": [BOGUS]},
                {"text": "no coding"},
                None,
            ]
        }
    )
    walked = default_wb.validate_column(frame, GENDER, code="gender.coding")
    whole = default_wb.validate_column(frame, GENDER, code="gender")
    assert walked["result"].tolist()[:3] == [True, True, False]
    assert walked.reason.tolist()[3:] == ["missing", "missing"]
    assert walked["result"].tolist()[:3] == whole["result"].tolist()[:3]
    arrays = frame["gender"].map(lambda v: v and v.get("coding"))
    as_series = default_wb.validate_column(arrays, GENDER)
    assert as_series["result"].tolist()[:3] == [True, True, False]
    with pytest.raises(ColumnNotFoundError, match=r"'sex\.coding' is not in the data"):
        default_wb.validate_column(frame, GENDER, code="sex.coding")


@pytest.mark.parametrize(
    ("values", "held"),
    [(["male", MALE], "a dict"), ([MALE, "male"], "a str ('male') among its Codings")],
)
def test_a_column_of_codes_and_codings_is_refused(
    default_wb: Workbench, values: list[Any], held: str
) -> None:
    """Whichever comes first: a column holds codes, or Codings, not both."""
    with pytest.raises(InvalidRequestError, match=rf"holds {re.escape(held)}.* not both"):
        default_wb.validate_column(pd.DataFrame({"g": values}), GENDER, code="g")
