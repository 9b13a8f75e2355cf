"""One rule for what is missing, in validation and translation alike: None, NaN, NA and ""
as a code give the missing answer; as a system they mean "no system"."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from workbench import Workbench
from workbench.bulk.encoding import is_missing, missing_mask

SYSTEM = "http://example.org/fhir/CodeSystem/missing-rule"
VS = "http://example.org/fhir/ValueSet/missing-rule"
MAP = "http://example.org/fhir/ConceptMap/missing-rule"
MISSING = [None, np.nan, pd.NA, ""]
IDS = ["None", "NaN", "NA", "empty"]


@pytest.fixture(scope="module")
def wb() -> Workbench:
    w = Workbench()
    w.load(
        {
            "resourceType": "CodeSystem",
            "url": SYSTEM,
            "status": "active",
            "content": "complete",
            "concept": [{"code": "a", "display": "A"}, {"code": "b", "display": "B"}],
        }
    )
    w.load(
        {
            "resourceType": "ValueSet",
            "url": VS,
            "status": "active",
            "compose": {"include": [{"system": SYSTEM}]},
        }
    )
    w.load(
        {
            "resourceType": "ConceptMap",
            "url": MAP,
            "status": "active",
            "group": [
                {
                    "source": SYSTEM,
                    "target": "http://example.org/target",
                    "element": [{"code": "a", "target": [{"code": "x", "equivalence": "equal"}]}],
                }
            ],
        }
    )
    return w


@pytest.mark.parametrize("value", [*MISSING, " ", "a", 0], ids=[*IDS, "space", "code", "zero"])
def test_what_is_missing(value: Any) -> None:
    expected = any(value is m for m in MISSING[:3]) or value == ""
    assert is_missing(value) is expected
    assert missing_mask(np.array([value], dtype=object)).tolist() == [expected]


@pytest.mark.parametrize("missing", MISSING, ids=IDS)
def test_a_missing_code_validated_and_translated(wb: Workbench, missing: Any) -> None:
    codes = pd.Series(["a", missing, "b"], dtype=object)
    validated = wb.validate_column(codes, VS, system=SYSTEM)
    assert validated["result"].tolist() == [True, pd.NA, True]
    assert validated["issue"].astype(object).tolist()[1] == "missing"
    translated = wb.translate_column(codes, MAP, system=SYSTEM)
    assert translated["result"].tolist() == [True, pd.NA, False]
    assert translated["matches"].tolist() == [1, 0, 0]
    assert translated["target_code"].tolist() == ["x", None, None]


@pytest.mark.parametrize("missing", MISSING, ids=IDS)
def test_a_missing_system_is_no_system(wb: Workbench, missing: Any) -> None:
    """A row whose system is missing is answered as the same code given without one."""
    frame = pd.DataFrame(
        {"code": ["a", "a", "b"], "system": pd.Series([SYSTEM, missing, None], dtype=object)}
    )
    bare = pd.DataFrame({"code": ["a", "a", "b"], "system": [SYSTEM, None, None]})
    for got, expected in [
        (
            wb.validate_column(frame, VS, code="code", system_column="system"),
            wb.validate_column(bare, VS, code="code", system_column="system"),
        ),
        (
            wb.translate_column(frame, MAP, code="code", system_column="system"),
            wb.translate_column(bare, MAP, code="code", system_column="system"),
        ),
    ]:
        pd.testing.assert_frame_equal(
            pd.DataFrame(got).astype(object), pd.DataFrame(expected).astype(object)
        )
    translated = wb.translate_column(frame, MAP, code="code", system_column="system")
    single = wb.translate("a", url=MAP)
    assert translated["result"].tolist()[1] == single.result
