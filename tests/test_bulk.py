"""Bulk validation of dataframe columns (``Workbench.validate_column`` and the ``.fhir``
accessor), as tables.

Every expected row is computed with ``Workbench.validate_code`` on that very row (a missing
code is ``validate_code(code="")`` with the result NA instead of False), so the tables check
the issue's promise that a column validation equals validating each row on its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from matplotlib.figure import Figure

from workbench import (
    InvalidRequestError,
    ValidationFrame,
    ValidationResult,
    ValidationSummary,
    ValueSetNotFoundError,
    Workbench,
)
from workbench.bulk import checker, pandas_backend
from workbench.bulk import encoding as bulk_encoding

VALUESETS = Path(__file__).resolve().parent.parent / "valuesets"
DEMO = "http://example.org/fhir/CodeSystem/workbench-demo"
VS = "http://example.org/fhir/ValueSet/"
ALL = VS + "workbench-demo-all"
BOOKABLE = VS + "workbench-demo-bookable"
REMOTE_LIVE = VS + "workbench-demo-remote-live"
UNKNOWN_SYSTEM = "http://unknown.example.org/CodeSystem/nothing"
MARITAL = "http://hl7.org/fhir/ValueSet/marital-status"
MARITAL_CS = "http://terminology.hl7.org/CodeSystem/v3-MaritalStatus"
NULL_FLAVOR = "http://terminology.hl7.org/CodeSystem/v3-NullFlavor"
COLUMNS = ["result", "message", "display", "issue", "system"]
MISSING_MESSAGE = "No code was given"

OVERRIDE = {
    "resourceType": "ValueSet",
    "url": VS + "bulk-override",
    "compose": {
        "include": [{"system": DEMO, "concept": [{"code": "video", "display": "Video call"}]}]
    },
}
ACTIVE_ONLY = {
    "resourceType": "ValueSet",
    "url": VS + "bulk-active-only",
    "compose": {"inactive": False, "include": [{"system": DEMO}]},
}
CI_SYSTEM = "http://example.org/fhir/CodeSystem/bulk-case-insensitive"
CI_VS = "http://example.org/fhir/ValueSet/bulk-case-insensitive"
CI_RESOURCES: list[dict[str, Any]] = [
    {
        "resourceType": "CodeSystem",
        "url": CI_SYSTEM,
        "status": "active",
        "content": "complete",
        "caseSensitive": False,
        "concept": [{"code": "abc", "display": "Alpha"}, {"code": "def", "display": "Delta"}],
    },
    {
        "resourceType": "ValueSet",
        "url": CI_VS,
        "status": "active",
        "compose": {"include": [{"system": CI_SYSTEM}]},
    },
]

Row = tuple[Any, Any, Any, Any, Any]


# --- helpers ------------------------------------------------------------------------------


def norm(value: Any) -> Any:
    """None for every kind of missing value (None, NaN, NA), else the value."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def rows_of(frame: pd.DataFrame) -> list[Row]:
    """The result rows as plain tuples (missing values as None)."""
    assert list(frame.columns) == COLUMNS
    columns = [frame[c].astype(object).tolist() for c in COLUMNS]
    return [tuple(norm(v) for v in row) for row in zip(*columns, strict=True)]


def as_row(result: ValidationResult, *, missing: bool = False) -> Row:
    return (
        None if missing else result.result,
        result.message,
        result.display,
        result.issue,
        result.system,
    )


def is_missing(value: Any) -> bool:
    return norm(value) is None or value == ""


def reference(
    wb: Workbench,
    valueset: str | Mapping[str, Any],
    *,
    code: Any = None,
    system: Any = None,
    display: Any = None,
    abstract: bool | None = None,
) -> Row:
    """``validate_code`` on one row of codes (a missing code: result NA, issue missing)."""
    system = None if is_missing(system) else system
    display = None if is_missing(display) else display
    if is_missing(code):
        found = wb.validate_code(valueset=valueset, code="", system=system, abstract=abstract)
        assert found.issue == "missing"
        return as_row(found, missing=True)
    found = wb.validate_code(
        valueset=valueset, code=code, system=system, display=display, abstract=abstract
    )
    return as_row(found)


def reference_structured(
    wb: Workbench, valueset: str | Mapping[str, Any], value: Any, *, abstract: bool | None = None
) -> Row:
    """``validate_code`` on one Coding or CodeableConcept cell (missing: NA, missing)."""
    if not isinstance(value, Mapping):
        assert is_missing(value)
        return (None, MISSING_MESSAGE, None, "missing", None)
    if "coding" in value:
        found = wb.validate_code(valueset=valueset, codeable_concept=value, abstract=abstract)
    else:
        found = wb.validate_code(valueset=valueset, coding=value, abstract=abstract)
    return as_row(found)


def coding(code: str | None, system: str | None = DEMO, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"code": code, **extra}
    if system is not None:
        found["system"] = system
    return found


def concept(*codings: dict[str, Any]) -> dict[str, Any]:
    return {"coding": list(codings), "text": "as entered"}


# --- input forms --------------------------------------------------------------------------


@dataclass
class Form:
    """One input shape: how to build the data, the keyword arguments, the expected rows."""

    build: Callable[[], pd.Series | pd.DataFrame]
    kwargs: dict[str, Any]
    expect: Callable[[Workbench], list[Row]]
    valueset: str | Mapping[str, Any] = ALL


FORM_CODES = ["office", "bogus", "in-person", "group", " video", None, "walk-in", "office"]
FORM_SYSTEMS = [DEMO, DEMO, DEMO, DEMO, DEMO, DEMO, UNKNOWN_SYSTEM, None]
FORM_DISPLAYS = [
    "Office visit",
    None,
    "In-person visit",
    "Gruppentermin",
    None,
    "x",
    "Walk-in visit",
    "Wrong display",
]


def _refs(
    valueset: str | Mapping[str, Any],
    codes: list[Any],
    systems: list[Any] | None = None,
    displays: list[Any] | None = None,
) -> Callable[[Workbench], list[Row]]:
    def expect(wb: Workbench) -> list[Row]:
        return [
            reference(
                wb,
                valueset,
                code=c,
                system=systems[i] if systems is not None else None,
                display=displays[i] if displays is not None else None,
            )
            for i, c in enumerate(codes)
        ]

    return expect


def _structured_refs(
    valueset: str | Mapping[str, Any], values: Callable[[], list[Any]]
) -> Callable[[Workbench], list[Row]]:
    return lambda wb: [reference_structured(wb, valueset, v) for v in values()]


def _codings() -> list[Any]:
    return [
        coding("office"),
        coding("bogus"),
        coding("office", display="Praxisbesuch"),
        coding("office", display="Wrong"),
        coding("in-person", display="In-person visit"),
        coding("video", system=None),
        coding("video", system=UNKNOWN_SYSTEM),
        coding("group"),
        None,
    ]


def _concepts() -> list[Any]:
    return [
        concept(coding("bogus"), coding("office")),  # one invalid + one valid coding
        concept(coding("office"), coding("bogus")),  # one valid + one invalid coding
        concept(coding("bogus"), coding("in-person")),  # none valid
        concept(coding("video", display="Videosprechstunde")),
        concept(coding("walk-in", system=UNKNOWN_SYSTEM), coding("walk-in")),
        concept(coding("group"), coding("nope")),
        None,
    ]


def _mixed() -> list[Any]:
    return [
        coding("office"),
        concept(coding("bogus"), coding("video")),
        None,
        concept(coding("in-person")),
        coding("nope", display="x"),
        np.nan,
        concept(coding("office", display="Wrong"), coding("home", display="Hausbesuch")),
    ]


MULTI_CODES = ["M", "UNK", "S", "bogus", "ASKU", None, "M"]
MULTI_SYSTEMS = [MARITAL_CS, NULL_FLAVOR, None, MARITAL_CS, MARITAL_CS, NULL_FLAVOR, DEMO]

FORMS = [
    pytest.param(
        Form(
            lambda: pd.Series(FORM_CODES),
            {"system": DEMO},
            _refs(ALL, FORM_CODES, [DEMO] * len(FORM_CODES)),
        ),
        id="series-constant-system",
    ),
    pytest.param(
        Form(lambda: pd.Series(FORM_CODES), {}, _refs(ALL, FORM_CODES)),
        id="series-system-inferred",
    ),
    pytest.param(
        Form(
            lambda: pd.DataFrame({"dx_code": FORM_CODES, "dx_system": FORM_SYSTEMS}),
            {"code": "dx_code", "system_column": "dx_system"},
            _refs(ALL, FORM_CODES, FORM_SYSTEMS),
        ),
        id="frame-system-column",
    ),
    pytest.param(
        Form(
            lambda: pd.DataFrame({"dx_code": FORM_CODES, "other": range(len(FORM_CODES))}),
            {"code": "dx_code", "system": DEMO},
            _refs(ALL, FORM_CODES, [DEMO] * len(FORM_CODES)),
        ),
        id="frame-constant-system-uri",
    ),
    pytest.param(
        Form(
            lambda: pd.DataFrame({"dx_code": FORM_CODES}),
            {"code": "dx_code", "system": UNKNOWN_SYSTEM},
            _refs(ALL, FORM_CODES, [UNKNOWN_SYSTEM] * len(FORM_CODES)),
        ),
        id="frame-constant-unknown-system",
    ),
    pytest.param(
        Form(
            lambda: pd.DataFrame({"dx_code": FORM_CODES}),
            {"code": "dx_code"},
            _refs(ALL, FORM_CODES),
        ),
        id="frame-system-inferred",
    ),
    pytest.param(
        Form(
            lambda: pd.DataFrame(
                {"dx_code": FORM_CODES, "dx_system": FORM_SYSTEMS, "dx_display": FORM_DISPLAYS}
            ),
            {"code": "dx_code", "system_column": "dx_system", "display": "dx_display"},
            _refs(ALL, FORM_CODES, FORM_SYSTEMS, FORM_DISPLAYS),
        ),
        id="frame-display-column",
    ),
    pytest.param(
        Form(
            lambda: pd.DataFrame({"dx_code": FORM_CODES, "dx_display": FORM_DISPLAYS}),
            {"code": "dx_code", "display": "dx_display"},
            _refs(ALL, FORM_CODES, None, FORM_DISPLAYS),
        ),
        id="frame-display-column-system-inferred",
    ),
    pytest.param(
        Form(
            lambda: pd.DataFrame(
                {
                    "code": ["video", "video", "video", "video", "phone"],
                    "display": ["Video call", "Video consultation", "Videosprechstunde", "x", None],
                }
            ),
            {"code": "code", "system": DEMO, "display": "display"},
            _refs(
                OVERRIDE,
                ["video", "video", "video", "video", "phone"],
                [DEMO] * 5,
                ["Video call", "Video consultation", "Videosprechstunde", "x", None],
            ),
            valueset=OVERRIDE,
        ),
        id="frame-display-override-valueset-dict",
    ),
    pytest.param(
        Form(
            lambda: pd.DataFrame({"code": MULTI_CODES, "system": MULTI_SYSTEMS}),
            {"code": "code", "system_column": "system"},
            _refs(MARITAL, MULTI_CODES, MULTI_SYSTEMS),
            valueset=MARITAL,
        ),
        id="frame-mixed-systems-multi-system-valueset",
    ),
    pytest.param(
        Form(
            lambda: pd.Series(MULTI_CODES),
            {},
            _refs(MARITAL, MULTI_CODES),
            valueset=MARITAL,
        ),
        id="series-multi-system-valueset-not-inferable",
    ),
    pytest.param(
        Form(lambda: pd.Series(_codings()), {}, _structured_refs(ALL, _codings)),
        id="coding-column",
    ),
    pytest.param(
        Form(
            lambda: pd.DataFrame({"dx": _codings(), "n": range(len(_codings()))}),
            {"code": "dx"},
            _structured_refs(ALL, _codings),
        ),
        id="coding-column-in-frame",
    ),
    pytest.param(
        Form(lambda: pd.Series(_concepts()), {}, _structured_refs(ALL, _concepts)),
        id="codeable-concept-column",
    ),
    pytest.param(
        Form(lambda: pd.Series(_mixed()), {}, _structured_refs(ALL, _mixed)),
        id="mixed-coding-and-codeable-concept",
    ),
]


@pytest.mark.parametrize("form", FORMS)
def test_input_forms(default_wb: Workbench, form: Form) -> None:
    data = form.build()
    report = default_wb.validate_column(data, form.valueset, **form.kwargs)
    assert isinstance(report, ValidationFrame)
    assert list(report.columns) == COLUMNS
    assert report.index.equals(data.index)
    assert str(report["result"].dtype) == "boolean"
    assert rows_of(report) == form.expect(default_wb)


def test_codeable_concept_one_valid_one_invalid(default_wb: Workbench) -> None:
    data = pd.Series([concept(coding("bogus"), coding("office")), concept(coding("bogus"))])
    report = default_wb.validate_column(data, ALL)
    # an unknown code in a known code system makes the concept invalid, even beside a valid
    # coding (issue 22, a3); the outputs are the valid coding's
    assert report["result"].tolist() == [False, False]
    assert report["issue"].tolist() == ["unknown-code", "unknown-code"]
    assert "bogus" in report["message"].iloc[0]
    assert report["display"].iloc[0] == "Office visit"


# --- every reason, through every path -------------------------------------------------------


@dataclass(frozen=True)
class Reason:
    valueset: str | Mapping[str, Any]
    code: str | None
    system: str | None
    display: str | None
    result: bool | None
    issue: str | None
    abstract: bool | None = None


REASONS = {
    "valid": Reason(ALL, "office", DEMO, None, True, None),
    "valid-display": Reason(ALL, "office", DEMO, "Office visit", True, None),
    "valid-designation-de": Reason(ALL, "office", DEMO, "Praxisbesuch", True, None),
    "valid-designation-fr": Reason(ALL, "home", DEMO, "Visite à domicile", True, None),
    "valid-override-display": Reason(OVERRIDE, "video", DEMO, "Video call", True, None),
    "inactive-included": Reason(ALL, "group", DEMO, None, True, "inactive"),
    "inactive-excluded": Reason(ACTIVE_ONLY, "group", DEMO, None, False, "inactive"),
    "not-in-vs": Reason(BOOKABLE, "walk-in", DEMO, None, False, "not-in-vs"),
    # fax-consult (retired) is excluded by enumeration: plainly not in the value set
    "not-in-vs-excluded-inactive": Reason(
        REMOTE_LIVE, "fax-consult", DEMO, None, False, "not-in-vs"
    ),
    "unknown-code": Reason(ALL, "bogus", DEMO, None, False, "unknown-code"),
    "unknown-system": Reason(ALL, "office", UNKNOWN_SYSTEM, None, False, "unknown-system"),
    "unknown-system-not-inferable": Reason(
        MARITAL, "nonsense", None, None, False, "unknown-system"
    ),
    "system-inferred-per-code": Reason(MARITAL, "M", None, None, True, None),
    "invalid-display": Reason(ALL, "office", DEMO, "Office", False, "invalid-display"),
    "invalid-display-whitespace": Reason(
        ALL, "office", DEMO, " Office visit", False, "invalid-display"
    ),
    "abstract": Reason(ALL, "in-person", DEMO, None, False, "abstract", abstract=False),
    "abstract-by-default": Reason(ALL, "in-person", DEMO, None, True, None),
    "abstract-allowed": Reason(ALL, "in-person", DEMO, None, True, None, abstract=True),
    "abstract-with-display": Reason(
        ALL, "remote", DEMO, "Remote visit", False, "abstract", abstract=False
    ),
    "missing-none": Reason(ALL, None, DEMO, None, None, "missing"),
    "missing-empty": Reason(ALL, "", DEMO, None, None, "missing"),
    "whitespace-leading": Reason(ALL, " office", DEMO, None, False, "unknown-code"),
    "whitespace-trailing": Reason(ALL, "office\t", DEMO, None, False, "unknown-code"),
    "whitespace-only": Reason(ALL, "   ", DEMO, None, False, "unknown-code"),
    # regression: at 328a090, with a system given, 'ABC' was not-in-vs (check_codes tested
    # membership with the exact key); validate_code finds 'abc' (caseSensitive=false)
    "case-insensitive-system": Reason(CI_VS, "ABC", CI_SYSTEM, None, True, None),
}


def _reason_cases() -> list[Any]:
    """Every reason through every path that can carry it: a constant system and a system
    column (the vectorised per-system path), system inferred (one coding at a time), a
    display column and a Coding column."""
    cases = []
    for name, reason in REASONS.items():
        if reason.system is None:
            paths = ["system-inferred", "system-column", "coding-column"]
        elif reason.display is not None:
            paths = ["display-column", "coding-column"]
        else:
            paths = ["constant-system", "system-column", "display-column", "coding-column"]
            if reason.system in (DEMO, CI_SYSTEM):
                paths.append("system-inferred")
        for path in paths:
            cases.append(pytest.param(reason, path, id=f"{name}-{path}"))
    return cases


def _reason_data(reason: Reason, path: str) -> tuple[pd.Series | pd.DataFrame, dict[str, Any]]:
    filler = [reason.code, "office", reason.code]  # the same code twice, plus another row
    systems = [reason.system, DEMO, reason.system]
    if path == "constant-system":
        return pd.Series(filler), {"system": reason.system}
    if path == "system-inferred":
        return pd.Series(filler), {}
    if path == "system-column":
        return pd.DataFrame({"c": filler, "s": systems}), {"code": "c", "system_column": "s"}
    if path == "display-column":
        frame = pd.DataFrame(
            {"c": filler, "s": systems, "d": [reason.display, "Office visit", reason.display]}
        )
        return frame, {"code": "c", "system_column": "s", "display": "d"}
    assert path == "coding-column"
    cells = [
        {
            k: v
            for k, v in (("system", s), ("code", c), ("display", reason.display))
            if v is not None
        }
        for c, s in zip(filler, systems, strict=True)
    ]
    return pd.Series(cells), {}


@pytest.fixture(scope="module")
def ci_wb() -> Workbench:
    """The shipped content plus a case-insensitive code system and its value set."""
    found = Workbench()
    found.load(VALUESETS, progress=False)
    found.load(CI_RESOURCES, progress=False)
    return found


@pytest.mark.parametrize(("reason", "path"), _reason_cases())
def test_every_reason(ci_wb: Workbench, reason: Reason, path: str) -> None:
    """One reason through one path, twice in the column (the rows must agree), next to a
    valid row; every row equals validate_code on it."""
    wb = ci_wb
    data, kwargs = _reason_data(reason, path)
    report = wb.validate_column(data, reason.valueset, abstract=reason.abstract, **kwargs)
    rows = rows_of(report)
    if path == "coding-column":
        if reason.code in (None, ""):
            # a Coding without a code is validate_code(coding=...): result False, missing
            expected = [
                reference_structured(wb, reason.valueset, v, abstract=reason.abstract) for v in data
            ]
            assert rows == expected
            assert rows[0][3] == "missing"
            return
        expected = [
            reference_structured(wb, reason.valueset, v, abstract=reason.abstract) for v in data
        ]
    else:
        frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame({"c": data})
        system_of = frame["s"].tolist() if "s" in frame else [kwargs.get("system")] * len(frame)
        display_of = frame["d"].tolist() if "d" in frame else [None] * len(frame)
        expected = [
            reference(
                wb,
                reason.valueset,
                code=c,
                system=system_of[i],
                display=display_of[i],
                abstract=reason.abstract,
            )
            for i, c in enumerate(frame["c"])
        ]
    assert rows == expected
    if path == "coding-column" and reason.system is None:
        # a Coding without a system is never a member (a5): its system is not inferred
        assert (rows[0][0], rows[0][3]) == (False, "not-in-vs")
    else:
        assert rows[0][0] == reason.result
        assert rows[0][3] == reason.issue
    assert rows[2] == rows[0]
    if reason.code is not None and reason.code != reason.code.strip():
        assert "whitespace" in rows[0][1]


def test_whitespace_is_reported_not_stripped(default_wb: Workbench) -> None:
    data = pd.Series([" office", "office ", "office"])
    report = default_wb.validate_column(data, ALL, system=DEMO)
    assert report["result"].tolist() == [False, False, True]
    assert report["issue"].tolist()[:2] == ["unknown-code", "unknown-code"]
    for message in report["message"].iloc[:2]:
        assert "whitespace" in message
        assert "' office'" in message or "'office '" in message


# --- missing values -----------------------------------------------------------------------

MISSING_KINDS = [
    pytest.param(None, id="None"),
    pytest.param(np.nan, id="np.nan"),
    pytest.param(float("nan"), id="float-nan"),
    pytest.param(pd.NA, id="pd.NA"),
    pytest.param("", id="empty-string"),
]
MISSING_FORMS = [
    "series-constant-system",
    "series-inferred",
    "frame-system-column",
    "frame-system-also-missing",
    "frame-display-column",
    "coding-column",
    "codeable-concept-column",
]


@pytest.mark.parametrize("form", MISSING_FORMS)
@pytest.mark.parametrize("kind", MISSING_KINDS)
def test_missing_values(default_wb: Workbench, kind: Any, form: str) -> None:
    codes = ["office", kind, "bogus", kind]
    kwargs: dict[str, Any]
    data: pd.Series | pd.DataFrame
    if form == "series-constant-system":
        data, kwargs = pd.Series(codes, dtype=object), {"system": DEMO}
    elif form == "series-inferred":
        data, kwargs = pd.Series(codes, dtype=object), {}
    elif form == "frame-system-column":
        data = pd.DataFrame({"c": codes, "s": [DEMO] * 4}, dtype=object)
        kwargs = {"code": "c", "system_column": "s"}
    elif form == "frame-system-also-missing":
        data = pd.DataFrame({"c": codes, "s": [DEMO, kind, DEMO, DEMO]}, dtype=object)
        kwargs = {"code": "c", "system_column": "s"}
    elif form == "frame-display-column":
        data = pd.DataFrame({"c": codes, "d": ["Office visit", kind, kind, "x"]}, dtype=object)
        kwargs = {"code": "c", "system": DEMO, "display": "d"}
    elif form == "coding-column":
        data = pd.Series([coding("office"), kind, coding("bogus"), kind], dtype=object)
        kwargs = {}
    else:
        data = pd.Series([concept(coding("office")), kind, {"coding": []}, kind], dtype=object)
        kwargs = {}
    report = default_wb.validate_column(data, ALL, **kwargs)
    assert report["result"].isna().tolist()[1] is True
    assert report["result"].isna().tolist()[3] is True
    assert report["issue"].tolist()[1] == "missing"
    assert report["issue"].tolist()[3] == "missing"
    assert report["message"].tolist()[1] == MISSING_MESSAGE
    assert report["result"].tolist()[0] is True
    rows = rows_of(report)
    if form in ("coding-column", "codeable-concept-column"):
        assert rows[1] == rows[3] == (None, MISSING_MESSAGE, None, "missing", None)
        return
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame({"c": data})
    systems = frame["s"].tolist() if "s" in frame else [kwargs.get("system")] * 4
    displays = frame["d"].tolist() if "d" in frame else [None] * 4
    assert rows == [
        reference(default_wb, ALL, code=c, system=systems[i], display=displays[i])
        for i, c in enumerate(codes)
    ]


@pytest.mark.parametrize("kind", MISSING_KINDS)
def test_missing_display_is_no_display(default_wb: Workbench, kind: Any) -> None:
    """A missing display (None, NaN, NA, "") is no display: the row is validated without one
    (so a valid code stays valid), like validate_code(display=None)."""
    data = pd.DataFrame({"c": ["office", "office"], "d": [kind, "Praxisbesuch"]}, dtype=object)
    report = default_wb.validate_column(data, ALL, code="c", system=DEMO, display="d")
    assert report["result"].tolist() == [True, True]
    assert rows_of(report)[0] == reference(default_wb, ALL, code="office", system=DEMO)


def test_all_missing_column(default_wb: Workbench) -> None:
    data = pd.Series([None, np.nan, pd.NA, ""], dtype=object)
    report = default_wb.validate_column(data, ALL)
    assert report["result"].isna().all()
    assert report["issue"].tolist() == ["missing"] * 4


def test_coding_column_after_many_missing(default_wb: Workbench) -> None:
    """Regression: at 328a090 only the first 50 cells were looked at to recognise Codings,
    and the dicts then reached pd.factorize (TypeError: unhashable type: 'dict')."""
    data = pd.Series([None] * 60 + [coding("office"), coding("bogus")])
    report = default_wb.validate_column(data, ALL)
    assert report["result"].tolist()[-2:] == [True, False]
    assert report["issue"].tolist()[:60] == ["missing"] * 60


# --- dtypes -------------------------------------------------------------------------------

# the four dtypes of the issue, plus pandas' other nullable string dtype
DTYPES = [
    pytest.param(object, id="object"),
    pytest.param("string[pyarrow]", id="string-pyarrow"),
    pytest.param("str", id="str"),
    pytest.param("category", id="category"),
    pytest.param("string[python]", id="string-python"),
]
DTYPE_CODES = ["office", None, "", " office", "bogus", "in-person", "group", "office", "video"]
DTYPE_SYSTEMS = [DEMO, DEMO, DEMO, DEMO, UNKNOWN_SYSTEM, DEMO, DEMO, None, DEMO]
COMPLETE_SYSTEMS = [DEMO, DEMO, DEMO, DEMO, UNKNOWN_SYSTEM, DEMO, DEMO, UNKNOWN_SYSTEM, DEMO]
DTYPE_DISPLAYS = [
    "Office visit",
    None,
    None,
    None,
    None,
    "x",
    "Gruppentermin",
    "Wrong",
    "Videosprechstunde",
]


def _dtypes(marks: Any = ()) -> list[Any]:
    """DTYPES, with ``marks`` on the nullable string dtypes (NA is pd.NA there)."""
    return [
        pytest.param(*p.values, id=p.id, marks=marks if str(p.id).startswith("string-") else ())
        for p in DTYPES
    ]


@pytest.mark.parametrize("dtype", _dtypes())
def test_dtypes_series_without_a_system_from_several(wb: Workbench, dtype: Any) -> None:
    """Codes without a system against a value set of several systems: each row as
    validate_code infers it (looked up in the value set's own table, like one system)."""
    codes = [*MULTI_CODES, "", " M", "UNK"]
    for _ in range(2):  # cold, then from the kept table
        report = wb.validate_column(pd.Series(codes, dtype=dtype), MARITAL)
        assert rows_of(report) == [reference(wb, MARITAL, code=c) for c in codes]


@pytest.mark.parametrize("dtype", _dtypes())
def test_dtypes_series(default_wb: Workbench, dtype: Any) -> None:
    data = pd.Series(DTYPE_CODES, dtype=dtype)
    for kwargs in ({}, {"system": DEMO}, {"system": UNKNOWN_SYSTEM}):
        report = default_wb.validate_column(data, ALL, **kwargs)
        system = kwargs.get("system")
        assert rows_of(report) == [
            reference(default_wb, ALL, code=c, system=system) for c in DTYPE_CODES
        ]


@pytest.mark.parametrize("dtype", _dtypes())
def test_dtypes_frame_complete_system_column(default_wb: Workbench, dtype: Any) -> None:
    data = pd.DataFrame({"c": DTYPE_CODES, "s": COMPLETE_SYSTEMS}, dtype=dtype)
    assert str(data["s"].dtype) == str(data["c"].dtype)
    report = default_wb.validate_column(data, ALL, code="c", system_column="s")
    assert rows_of(report) == [
        reference(default_wb, ALL, code=c, system=s)
        for c, s in zip(DTYPE_CODES, COMPLETE_SYSTEMS, strict=True)
    ]


@pytest.mark.parametrize("dtype", _dtypes())
def test_dtypes_system_column_with_missing(default_wb: Workbench, dtype: Any) -> None:
    """Systems: the value set's, an unknown one and a missing one (inferred).

    Regression: at 328a090 string[pyarrow]/string[python] raised TypeError: boolean value
    of NA is ambiguous here (`system_values == system` on an object array holding pd.NA).
    """
    data = pd.DataFrame({"c": DTYPE_CODES, "s": DTYPE_SYSTEMS}, dtype=dtype)
    report = default_wb.validate_column(data, ALL, code="c", system_column="s")
    assert rows_of(report) == [
        reference(default_wb, ALL, code=c, system=s)
        for c, s in zip(DTYPE_CODES, DTYPE_SYSTEMS, strict=True)
    ]


@pytest.mark.parametrize("dtype", _dtypes())
def test_dtypes_one_system_and_missing_ones(default_wb: Workbench, dtype: Any) -> None:
    """A row without a system is inferred from the value set (the one system that has the
    code), never from the other rows."""
    codes, systems = ["M", "M", "S", None], [MARITAL_CS, None, MARITAL_CS, None]
    data = pd.DataFrame({"c": codes, "s": systems}, dtype=dtype)
    report = default_wb.validate_column(data, MARITAL, code="c", system_column="s")
    assert rows_of(report) == [
        reference(default_wb, MARITAL, code=c, system=s)
        for c, s in zip(codes, systems, strict=True)
    ]
    assert pd.isna(report["issue"].tolist()[1])
    assert report["system"].tolist()[1] == MARITAL_CS


@pytest.mark.parametrize("dtype", _dtypes())
def test_dtypes_display_column(default_wb: Workbench, dtype: Any) -> None:
    """Code, system and display columns of one dtype (every system given, some displays).

    Regression: at 328a090 string[pyarrow]/string[python] raised TypeError: boolean value
    of NA is ambiguous here (`display_values == ""` on an object array holding pd.NA).
    """
    data = pd.DataFrame({"c": DTYPE_CODES, "s": COMPLETE_SYSTEMS, "d": DTYPE_DISPLAYS}, dtype=dtype)
    assert all(str(t) == str(data["c"].dtype) for t in data.dtypes)
    report = default_wb.validate_column(data, ALL, code="c", system_column="s", display="d")
    assert rows_of(report) == [
        reference(default_wb, ALL, code=c, system=s, display=d)
        for c, s, d in zip(DTYPE_CODES, COMPLETE_SYSTEMS, DTYPE_DISPLAYS, strict=True)
    ]


@pytest.mark.parametrize("dtype", _dtypes())
def test_dtypes_display_column_without_missing(default_wb: Workbench, dtype: Any) -> None:
    codes = ["office", "office", "video", "in-person", "bogus"]
    displays = ["Office visit", "Praxisbesuch", "Wrong", "In-person visit", "x"]
    data = pd.DataFrame({"c": codes, "d": displays}, dtype=dtype)
    report = default_wb.validate_column(data, ALL, code="c", system=DEMO, display="d")
    assert rows_of(report) == [
        reference(default_wb, ALL, code=c, system=DEMO, display=d)
        for c, d in zip(codes, displays, strict=True)
    ]


def _copies(text: str, n: int) -> list[str]:
    """``n`` equal strings that are ``n`` different objects."""
    return ["".join(list(text)) for _ in range(n)]


# An object column as real data has it: equal codes as one object or as many, numbers
# (Python and numpy, integral floats), missing values of every kind, and whitespace.
OBJECT_CODES: list[Any] = [
    "office",
    *_copies("office", 3),
    " office",
    "".join([" ", "office"]),
    None,
    np.nan,
    pd.NA,
    "",
    "".join([]),
    7,
    np.int64(7),
    7.0,
    7.5,
    "7",
    "bogus",
    *_copies("video", 2),
]
OBJECT_SYSTEMS: list[Any] = [DEMO, *_copies(DEMO, 3)] * 5 + [UNKNOWN_SYSTEM, None]


@pytest.mark.parametrize("shape", ["series", "frame-one-system", "frame-many-systems"])
def test_object_column_every_row_right(default_wb: Workbench, shape: str) -> None:
    """An object column is grouped by object identity and only one value per group is
    looked at: every row still equals validate_code on that row, whatever the objects."""
    codes = pd.Series(OBJECT_CODES, dtype=object)
    if shape == "series":
        report = default_wb.validate_column(codes, ALL, system=DEMO)
        systems: list[Any] = [DEMO] * len(codes)
    else:
        systems = OBJECT_SYSTEMS[: len(codes)]
        if shape == "frame-one-system":
            systems = _copies(DEMO, len(codes))
        data = pd.DataFrame({"c": codes, "s": pd.Series(systems, dtype=object)})
        report = default_wb.validate_column(data, ALL, code="c", system_column="s")
    texts = ["7" if isinstance(c, (int, float, np.number)) and c == 7 else c for c in codes]
    texts = ["7.5" if isinstance(c, float) and c == 7.5 else c for c in texts]
    assert rows_of(report) == [
        reference(default_wb, ALL, code=c, system=s) for c, s in zip(texts, systems, strict=True)
    ]
    shown = [c for c in report.failure_cases["code"].tolist() if not is_missing(c)]
    assert {"7", "7.5"} <= set(shown)
    assert not [c for c in shown if not isinstance(c, str)]  # numbers are given as text


@pytest.mark.parametrize("repeat", [1, 3, 200], ids=["one-each", "few-repeats", "few-groups"])
def test_identity_groups_hold_the_rows_objects(repeat: int) -> None:
    """Each group of an object column is one object: the object of every row of the group
    (few groups: read from its address; many: from a row), equal values that are other
    objects in groups of their own, missing values and numbers included."""
    distinct: list[Any] = [*(f"code-{i}" for i in range(40)), None, np.nan, 7, 7.0, "x"]
    distinct += [_fresh("x"), _fresh("code-3")]
    values = np.array([distinct[i % len(distinct)] for i in range(len(distinct) * repeat)])
    values = values.astype(object)
    ids, objects = bulk_encoding.identity_values(values)
    assert len(objects) == len(distinct) and ids.dtype == np.int64
    assert all(objects[g] is v for g, v in zip(ids.tolist(), values, strict=True))


def _fresh(value: Any) -> Any:
    """An equal string that is a new object (what ``.str`` methods or ``apply`` give)."""
    return (value + "x")[:-1] if isinstance(value, str) else value


@pytest.mark.parametrize(
    ("extra", "encoding"),
    [([], "arrow"), ([7, 7.0], "objects"), ([b"office"], "objects")],
    ids=["strings", "with-numbers", "with-bytes"],
)
def test_object_column_of_fresh_strings(
    default_wb: Workbench, extra: list[Any], encoding: str
) -> None:
    """Equal codes that are all different objects are not grouped by identity (a group
    per row): a column of strings is looked up as Arrow strings; with anything else in
    it, it is grouped as before. Every row stays right either way."""
    base: list[Any] = ["office", " office", "video", "bogus", None, "", np.nan, *extra]
    rows = [base[i % len(base)] for i in range(20_000)]
    data = pd.Series([_fresh(v) for v in rows], dtype=object)
    found = bulk_encoding.code_column(data)[1]
    assert isinstance(found, pa.Array if encoding == "arrow" else bulk_encoding.Objects)
    shared = bulk_encoding.code_column(pd.Series(rows, dtype=object))[1]
    assert isinstance(shared, bulk_encoding.Objects)  # one object per distinct code: grouped

    def text(value: Any) -> Any:
        if isinstance(value, (int, float)) and not pd.isna(value):
            return str(int(value))
        return str(value) if isinstance(value, bytes) else value

    expected = [reference(default_wb, ALL, code=text(v), system=DEMO) for v in base]
    # three calls: the second and third find every text known (regression: a bytes code's
    # text was added to the answers again, and the third call failed on the duplicate)
    for report in (
        default_wb.validate_column(data, ALL, system=DEMO),
        default_wb.validate_column(data, ALL, system=DEMO),
        default_wb.validate_column(
            pd.DataFrame({"c": data, "s": DEMO}), ALL, code="c", system_column="s"
        ),
    ):
        assert rows_of(report) == [expected[i % len(base)] for i in range(len(rows))]


def test_result_categories_are_shared_across_calls(wb: Workbench) -> None:
    """Results that use at least half of the value set's answer texts share its cached
    texts as their categories (the same index, not a copy per call); a call that uses
    fewer keeps a copy of just its own. (A fresh Workbench: the answers it keeps depend
    on every call before.)"""
    made_up = [f"made-up-{i}" for i in range(40)]
    codes = pd.Series(["office", None, "video", " office", *made_up] * 3, dtype=object)
    first = wb.validate_column(codes, ALL, system=DEMO)
    again = wb.validate_column(codes.astype("category"), ALL, system=DEMO)
    for name in ("message", "display", "issue"):
        assert first[name].cat.categories is again[name].cat.categories
        assert first[name].cat.codes.dtype == np.int8
    assert rows_of(first) == rows_of(again)
    few = ["made-up-3", "office"]
    small = wb.validate_column(pd.Series(few), ALL, system=DEMO)
    assert small["message"].cat.categories.tolist() == [small["message"].iloc[0]]
    assert rows_of(small) == [reference(wb, ALL, code=c, system=DEMO) for c in few]


def test_codes_without_a_system_are_answered_once(wb: Workbench) -> None:
    """Rows without a system get the system inferred from the value set alone, so their
    answers are kept with the value set's own (a later call looks them up, no check)."""
    codes = ["M", "S", "bogus", None, "M", " S"]
    data = pd.DataFrame({"c": codes, "s": [MARITAL_CS, None, None, None, None, ""]})
    expected = [
        reference(wb, MARITAL, code=c, system=s)
        for c, s in zip(codes, data["s"].tolist(), strict=True)
    ]
    assert rows_of(wb.validate_column(data, MARITAL, code="c", system_column="s")) == expected
    kept = checker.make_checker(wb.terminology, MARITAL, None).tables[None].state.codes.tolist()
    assert sorted(kept) == sorted(["", "M", "S", "bogus", " S"])
    assert rows_of(wb.validate_column(data, MARITAL, code="c", system_column="s")) == expected


# --- index alignment ----------------------------------------------------------------------

INDEXES = [
    pytest.param(lambda n: pd.Index([f"row-{i}" for i in range(n)]), id="strings"),
    pytest.param(
        lambda n: pd.Index(np.random.default_rng(7).permutation(np.arange(100, 100 + n))),
        id="shuffled-int",
    ),
    pytest.param(lambda n: pd.date_range("2024-01-01", periods=n, freq="h"), id="datetime"),
    pytest.param(lambda n: pd.Index([5, 3, 5, 1, 3, 9, 9, 0, 2][:n]), id="duplicates"),
    pytest.param(
        lambda n: pd.MultiIndex.from_arrays([list("aabbccdde")[:n], list(range(n))]),
        id="multiindex",
    ),
]
INDEX_CODES = ["office", "bogus", None, "in-person", "office", "group", "walk-in", "", "bogus"]


@pytest.mark.parametrize("make_index", INDEXES)
@pytest.mark.parametrize("form", ["series", "frame", "coding"])
def test_index_alignment(
    default_wb: Workbench, make_index: Callable[[int], pd.Index], form: str
) -> None:
    index = make_index(len(INDEX_CODES))
    data: pd.Series | pd.DataFrame
    if form == "series":
        data, kwargs = pd.Series(INDEX_CODES, index=index), {"system": DEMO}
        expected = [reference(default_wb, ALL, code=c, system=DEMO) for c in INDEX_CODES]
    elif form == "frame":
        data = pd.DataFrame({"c": INDEX_CODES, "s": DEMO}, index=index)
        kwargs = {"code": "c", "system_column": "s"}
        expected = [reference(default_wb, ALL, code=c, system=DEMO) for c in INDEX_CODES]
    else:
        cells = [coding(c) if c else None for c in INDEX_CODES]
        data, kwargs = pd.Series(cells, index=index), {}
        expected = [reference_structured(default_wb, ALL, v) for v in cells]
    report = default_wb.validate_column(data, ALL, **kwargs)
    assert report.index.equals(data.index)
    assert rows_of(report) == expected
    failures = report.failure_cases
    failing = [i for i, row in enumerate(expected) if row[0] is not True]
    assert failures.index.equals(data.index[failing])
    codes = data if isinstance(data, pd.Series) else data["c"]
    cells = codes.iloc[failing].tolist()
    shown = [c.get("code") if isinstance(c, dict) else c for c in cells]
    assert failures["code"].tolist() == shown


def test_index_alignment_survives_join(default_wb: Workbench) -> None:
    data = pd.DataFrame(
        {"c": ["office", "bogus", "video"], "patient": ["p1", "p2", "p3"]},
        index=pd.Index([30, 10, 20], name="row"),
    )
    report = default_wb.validate_column(data, ALL, code="c", system=DEMO)
    joined = data.join(report[["result", "issue"]])
    assert joined.loc[10, "issue"] == "unknown-code"
    assert bool(joined.loc[30, "result"]) is True
    assert report.index.name == "row"


# --- empty input --------------------------------------------------------------------------

EMPTY = [
    pytest.param(lambda: pd.Series([], dtype=object), {}, id="series-object"),
    pytest.param(lambda: pd.Series([], dtype="str"), {"system": DEMO}, id="series-str"),
    pytest.param(lambda: pd.Series([], dtype="category"), {}, id="series-category"),
    pytest.param(
        lambda: pd.Series([], dtype="string[pyarrow]"), {"system": DEMO}, id="series-pyarrow"
    ),
    pytest.param(
        lambda: pd.DataFrame({"c": pd.Series([], dtype=object)}), {"code": "c"}, id="frame"
    ),
    pytest.param(
        lambda: pd.DataFrame(
            {"c": pd.Series([], dtype=object), "s": pd.Series([], dtype=object)},
            index=pd.Index([], dtype="str"),
        ),
        {"code": "c", "system_column": "s"},
        id="frame-system-column",
    ),
    pytest.param(
        lambda: pd.DataFrame({"c": pd.Series([], dtype=object), "d": pd.Series([], dtype=object)}),
        {"code": "c", "system": DEMO, "display": "d"},
        id="frame-display-column",
    ),
]


@pytest.mark.parametrize(("build", "kwargs"), EMPTY)
def test_empty_input(
    default_wb: Workbench,
    build: Callable[[], pd.Series | pd.DataFrame],
    kwargs: dict[str, Any],
) -> None:
    data = build()
    report = default_wb.validate_column(data, ALL, **kwargs)
    assert len(report) == 0
    assert list(report.columns) == COLUMNS
    assert report.index.equals(data.index)
    assert str(report["result"].dtype) == "boolean"
    summary = report.summary()
    assert (summary.rows, summary.valid, len(summary.counts)) == (0, 0, 0)
    assert list(summary.top_invalid.columns) == ["code", "count", "issue", "system"]
    assert len(summary.top_invalid) == 0
    assert sorted(report.failure_cases.columns) == sorted(["code", *COLUMNS])
    assert list(report.failure_cases.columns)[:2] == ["code", "issue"]
    assert len(report.failure_cases) == 0
    assert report._repr_html_().startswith(summary._repr_html_())
    assert isinstance(summary.plot(), Figure)


# --- errors -------------------------------------------------------------------------------

ERROR_FRAME = pd.DataFrame({"dx_code": ["office"], "dx_system": [DEMO], "dx_display": ["x"]})
ERRORS = [
    pytest.param(
        ERROR_FRAME,
        "http://example.org/fhir/ValueSet/no-such",
        {"code": "dx_code"},
        ValueSetNotFoundError,
        "ValueSet http://example.org/fhir/ValueSet/no-such not found",
        id="unknown-valueset",
    ),
    pytest.param(
        ERROR_FRAME,
        "http://example.org/fhir/ValueSet/no-such",
        {"code": "no_such_column"},
        ValueSetNotFoundError,
        "ValueSet http://example.org/fhir/ValueSet/no-such not found",
        id="unknown-valueset-before-bad-column",
    ),
    pytest.param(
        ["office"],
        "http://example.org/fhir/ValueSet/no-such",
        {},
        ValueSetNotFoundError,
        "ValueSet http://example.org/fhir/ValueSet/no-such not found",
        id="unknown-valueset-before-type-check",
    ),
    pytest.param(
        ERROR_FRAME,
        ALL,
        {"code": "dx_cod"},
        KeyError,
        "dx_cod",
        id="bad-code-column",
    ),
    pytest.param(
        ERROR_FRAME,
        ALL,
        {"code": "dx_code", "system_column": "dx_sys"},
        KeyError,
        "dx_sys",
        id="bad-system-column",
    ),
    pytest.param(
        ERROR_FRAME,
        ALL,
        {"code": "dx_code", "system_column": "dx_system", "display": "dx_disp"},
        KeyError,
        "dx_disp",
        id="bad-display-column",
    ),
    pytest.param(ERROR_FRAME, ALL, {}, InvalidRequestError, "code=", id="dataframe-without-code"),
    pytest.param(
        ERROR_FRAME,
        ALL,
        {"system_column": "dx_system"},
        InvalidRequestError,
        "code=",
        id="dataframe-without-code-with-system",
    ),
    pytest.param(["office"], ALL, {}, TypeError, "list", id="list-input"),
    pytest.param(np.array(["office"]), ALL, {}, TypeError, "ndarray", id="ndarray-input"),
    pytest.param("office", ALL, {}, TypeError, "str", id="str-input"),
    pytest.param({"c": ["office"]}, ALL, {"code": "c"}, TypeError, "dict", id="dict-input"),
    pytest.param(None, ALL, {}, TypeError, "NoneType", id="none-input"),
    pytest.param(
        pd.Series(["office"]),
        ALL,
        {"display": "d"},
        InvalidRequestError,
        "DataFrame",
        id="series-with-display-column",
    ),
]


@pytest.mark.parametrize(("data", "valueset", "kwargs", "error", "text"), ERRORS)
def test_errors(
    default_wb: Workbench,
    monkeypatch: pytest.MonkeyPatch,
    data: Any,
    valueset: str,
    kwargs: dict[str, Any],
    error: type[Exception],
    text: str,
) -> None:
    if error is ValueSetNotFoundError:
        # before any work: the column algorithm is never reached
        def boom(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the data was looked at before the value set")

        monkeypatch.setattr(pandas_backend, "validate_pandas", boom)
        monkeypatch.setattr(pandas_backend, "prepare", boom)
    with pytest.raises(error) as caught:
        default_wb.validate_column(data, valueset, **kwargs)
    assert text in str(caught.value)
    if error is KeyError:
        # the KeyError names the column and the available ones
        for column in ERROR_FRAME.columns:
            assert column in str(caught.value)


# --- summary, failure cases, HTML, plot ------------------------------------------------------

SUMMARY_CODES = (
    ["office"] * 4
    + ["bogus"] * 3
    + ["in-person"] * 2
    + ["group"]
    + ["xyz"]
    + ["walk-in"] * 2
    + ["remote"] * 2
    + ["video"]
)


@pytest.fixture
def summary_report(default_wb: Workbench) -> ValidationFrame:
    codes = SUMMARY_CODES[:]
    order = np.random.default_rng(3).permutation(len(codes))
    shuffled = [codes[i] for i in order]
    data = pd.Series(shuffled, index=[f"r{i}" for i in order])
    return default_wb.validate_column(data, BOOKABLE, system=DEMO, abstract=False)


def test_summary_counts(summary_report: ValidationFrame) -> None:
    summary = summary_report.summary()
    assert isinstance(summary, ValidationSummary)
    assert summary.rows == len(SUMMARY_CODES) == 16
    # bookable: office and video are valid; in-person is a member but abstract; group (is-a
    # group excluded), walk-in (excluded) and remote (never included) are not in it
    assert summary.valid == 5
    assert summary.counts.to_dict() == {
        "valid": 5,
        "not-in-vs": 5,
        "unknown-code": 4,
        "abstract": 2,
    }
    assert summary.counts.index[0] in ("valid", "not-in-vs")
    assert summary.counts.is_monotonic_decreasing
    top = summary.top_invalid
    assert top["count"].is_monotonic_decreasing
    assert top.iloc[0][["code", "issue", "count"]].tolist() == ["bogus", "unknown-code", 3]
    assert sorted(map(tuple, top[["code", "issue", "count"]].values.tolist())) == [
        ("bogus", "unknown-code", 3),
        ("group", "not-in-vs", 1),
        ("in-person", "abstract", 2),
        ("remote", "not-in-vs", 2),
        ("walk-in", "not-in-vs", 2),
        ("xyz", "unknown-code", 1),
    ]


def test_summary_exact_values(default_wb: Workbench) -> None:
    codes = ["bogus", "office", "in-person", "bogus", "xyz", "group", "in-person", "bogus"]
    codes += ["office", "nope", "in-person", "office", "nope", "bogus"]
    data = pd.Series(codes, index=[f"id{i}" for i in range(len(codes))])
    report = default_wb.validate_column(data, ALL, system=DEMO, abstract=False)
    summary = report.summary()
    assert summary.rows == 14
    assert summary.valid == 4  # office x3 and group (inactive is valid, with a warning)
    assert summary.counts.to_dict() == {
        "unknown-code": 7,
        "valid": 3,
        "abstract": 3,
        "inactive": 1,
    }
    top = summary.top_invalid
    assert list(top.columns) == ["code", "count", "issue", "system"]
    assert top[["code", "issue", "count"]].values.tolist() == [
        ["bogus", "unknown-code", 4],
        ["in-person", "abstract", 3],
        ["nope", "unknown-code", 2],
        ["xyz", "unknown-code", 1],
    ]
    assert top["system"].tolist() == [DEMO] * 4
    assert report.summary(top=2).top_invalid["code"].tolist() == ["bogus", "in-person"]
    assert "4 of 14 valid" in repr(summary)


def test_summary_counts_missing(default_wb: Workbench) -> None:
    data = pd.Series(["office", None, "", np.nan, "bogus"])
    summary = default_wb.validate_column(data, ALL).summary()
    assert summary.counts.to_dict() == {"missing": 3, "valid": 1, "unknown-code": 1}
    assert summary.valid == 1
    assert summary.rows == 5
    # missing values are a reason, not an invalid code
    assert summary.top_invalid[["code", "issue", "count"]].values.tolist() == [
        ["bogus", "unknown-code", 1]
    ]


def test_failure_cases(default_wb: Workbench) -> None:
    data = pd.DataFrame(
        {
            "dx_code": ["office", "bogus", None, "group", "in-person", "video", " home"],
            "dx_system": [DEMO] * 7,
        },
        index=[f"p{i}" for i in (6, 5, 4, 3, 2, 1, 0)],
    )
    report = default_wb.validate_column(
        data, ALL, code="dx_code", system_column="dx_system", abstract=False
    )
    failures = report.failure_cases
    assert isinstance(failures, pd.DataFrame)
    assert list(failures.columns) == ["code", "issue", "message", "display", "system", "result"]
    # inactive (group) is valid with a warning, so it is not a failure; missing is
    assert failures.index.tolist() == ["p5", "p4", "p2", "p0"]
    assert failures["code"].tolist()[0] == "bogus"
    assert norm(failures["code"].tolist()[1]) is None
    assert failures["code"].tolist()[2:] == ["in-person", " home"]
    assert failures["issue"].tolist() == ["unknown-code", "missing", "abstract", "unknown-code"]
    assert failures["result"].isna().tolist() == [False, True, False, False]
    assert not failures["result"].fillna(False).any()
    assert rows_of(failures[COLUMNS]) == rows_of(report.loc[failures.index])


def test_failure_cases_code_column_for_codings(default_wb: Workbench) -> None:
    cells = [coding("office"), coding("bogus"), None]
    report = default_wb.validate_column(pd.Series(cells, index=[9, 8, 7]), ALL)
    failures = report.failure_cases
    assert failures.index.tolist() == [8, 7]
    assert failures["code"].tolist()[0] == "bogus"


@pytest.mark.parametrize(
    "cells",
    [
        pytest.param([coding("office"), coding("bogus"), None], id="coding"),
        pytest.param([concept(coding("bogus")), concept(coding("office"))], id="codeable-concept"),
    ],
)
def test_summary_of_structured_column(default_wb: Workbench, cells: list[Any]) -> None:
    report = default_wb.validate_column(pd.Series(cells), ALL)
    summary = report.summary()
    assert summary.rows == len(cells)
    assert summary.counts.get("unknown-code") == 1
    assert len(summary.top_invalid) >= 1
    assert report._repr_html_().startswith(summary._repr_html_())


def test_repr_html_starts_with_summary(summary_report: ValidationFrame) -> None:
    html = summary_report._repr_html_()
    summary_html = summary_report.summary()._repr_html_()
    assert html.startswith(summary_html)
    assert "valid" in summary_html
    assert "bogus" in summary_html
    assert html.index("<details>") > len(summary_html) - 1


def test_plot(default_wb: Workbench) -> None:
    data = pd.Series(
        ["bogus", "office", "in-person", "bogus", "xyz", "group", None, "bogus", "remote"]
    )
    summary = default_wb.validate_column(data, ALL, system=DEMO).summary()
    figure = summary.plot()
    assert isinstance(figure, Figure)
    assert len(figure.axes) == 2
    left, right = figure.axes
    top = summary.top_invalid
    left_widths = sorted((p.get_width() for p in left.patches), reverse=True)
    assert len(left.patches) == len(top)
    assert left_widths == sorted(top["count"].astype(float).tolist(), reverse=True)
    right_bars = {
        t.get_text(): p.get_width()
        for t, p in zip(right.get_yticklabels(), right.patches, strict=True)
    }
    assert right_bars == {k: float(v) for k, v in summary.counts.items()}
    labels = [t.get_text() for t in left.get_yticklabels()]
    assert any(label.startswith("bogus") for label in labels)
    limited = summary.plot(top=2)
    assert len(limited.axes[0].patches) == 2


# --- abstract=False --------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["constant-system", "inferred", "display-column", "coding"])
def test_abstract_codes_are_valid_unless_abstract_false(default_wb: Workbench, path: str) -> None:
    """One default everywhere: an abstract code the value set includes is valid, as
    ``validate_code`` answers it, unless ``abstract=False``."""
    codes = ["in-person", "remote", "office", "bogus"]
    data: pd.Series | pd.DataFrame
    if path == "constant-system":
        data, kwargs = pd.Series(codes), {"system": DEMO}
    elif path == "inferred":
        data, kwargs = pd.Series(codes), {}
    elif path == "display-column":
        data = pd.DataFrame({"c": codes, "d": ["Präsenzbesuch", None, None, None]})
        kwargs = {"code": "c", "system": DEMO, "display": "d"}
    else:
        data, kwargs = pd.Series([coding(c) for c in codes]), {}
    strict = default_wb.validate_column(data, ALL, abstract=False, **kwargs)
    allowed = default_wb.validate_column(data, ALL, **kwargs)
    assert strict["result"].tolist() == [False, False, True, False]
    assert strict["issue"].tolist()[:2] == ["abstract", "abstract"]
    assert allowed["result"].tolist() == [True, True, True, False]
    assert [norm(v) for v in allowed["issue"].tolist()] == [None, None, None, "unknown-code"]
    assert allowed["display"].tolist()[:2] == ["In-person visit", "Remote visit"]
    for i, c in enumerate(codes):
        expected = default_wb.validate_code(ALL, code=c, system=DEMO)
        assert rows_of(allowed)[i][:4] == as_row(expected)[:4]


# --- Coding versions ------------------------------------------------------------------------


def test_coding_version_is_honoured(default_wb: Workbench) -> None:
    cells = [coding("office", version="9.9"), coding("office", version="1.0.0")]
    report = default_wb.validate_column(pd.Series(cells), ALL)
    assert rows_of(report) == [reference_structured(default_wb, ALL, c) for c in cells]
