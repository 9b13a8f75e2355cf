"""``frozen.replaced`` builds what ``dataclasses.replace`` builds."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from workbench.frozen import replaced
from workbench.terminology.concept_check import CheckOptions
from workbench.terminology.result import Issue, ValidationResult


@dataclass(frozen=True)
class _Checked:
    low: int
    high: int = 10

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError("low above high")


@dataclass(frozen=True)
class _Computed:
    base: int
    twice: int = dataclasses.field(init=False)
    kind: ClassVar[str] = "computed"

    def __post_init__(self) -> None:
        object.__setattr__(self, "twice", 2 * self.base)


@dataclass(frozen=True, kw_only=True)
class _KeywordsOnly:
    a: int
    b: str = "b"


ISSUE = Issue("error", "invalid-code", "Unknown code", "unknown-code")
RESULT = ValidationResult(False, "Unknown code", None, code="x", system="http://s", issues=(ISSUE,))


@pytest.mark.parametrize(
    ("obj", "changes"),
    [
        (RESULT, {"issues": (ISSUE, ISSUE)}),
        (RESULT, {"issues": (), "message": None, "result": True}),
        (RESULT, {}),
        (CheckOptions(), {"supplements": frozenset({"http://sup"}), "languages": None}),
        (ISSUE, {"path": "Coding"}),
        (_Checked(1), {"high": 5}),
        (_Computed(3), {"base": 4}),
        (_KeywordsOnly(a=1), {"b": "c"}),
    ],
)
def test_replaced_is_dataclasses_replace(obj: Any, changes: dict[str, Any]) -> None:
    got = replaced(obj, **changes)
    assert got == dataclasses.replace(obj, **changes)
    assert type(got) is type(obj)
    assert got is not obj


@pytest.mark.parametrize(
    ("obj", "changes", "error"),
    [
        (_Checked(1), {"low": 50}, ValueError),  # __post_init__ runs
        (RESULT, {"nope": 1}, TypeError),  # not a field
        (_Computed(3), {"twice": 1}, ValueError),  # init=False: replace refuses it
    ],
)
def test_replaced_refuses_what_replace_refuses(
    obj: Any, changes: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        dataclasses.replace(obj, **changes)
    with pytest.raises(error):
        replaced(obj, **changes)


def test_replaced_wants_a_dataclass() -> None:
    with pytest.raises(TypeError, match="dataclass"):
        replaced(object())
