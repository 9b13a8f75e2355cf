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


@dataclass(frozen=True, slots=True)
class _SlottedChecked:
    low: int
    high: int = 10

    def __post_init__(self) -> None:
        if self.low > self.high:
            raise ValueError("low above high")


@dataclass(frozen=True, slots=True)
class _SlottedOwnInit:
    a: int
    b: int = 0

    def __init__(self, a: int, b: int = 0) -> None:
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b + 100)  # more than setting the slots


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
        (_SlottedChecked(1), {"high": 5}),
        (_SlottedOwnInit(1), {"a": 2}),
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
        (_SlottedChecked(1), {"low": 50}, ValueError),  # slotted too
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


def test_a_slotted_result_is_built_through_its_slots_and_stays_frozen() -> None:
    """ValidationResult (slotted, generated ``__init__``) is built without ``__init__``: the
    same value, still frozen, every slot set."""
    got = replaced(RESULT, message="Other", issues=())
    assert got == dataclasses.replace(RESULT, message="Other", issues=())
    assert hash(got) == hash(dataclasses.replace(RESULT, message="Other", issues=()))
    assert all(hasattr(got, f.name) for f in dataclasses.fields(ValidationResult))
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.message = "changed"  # type: ignore[misc]
