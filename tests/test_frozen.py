"""``frozen.replaced`` builds what ``dataclasses.replace`` builds; ``frozen.fast_init`` gives
the instance the generated ``__init__`` gives."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from workbench import frozen
from workbench.frozen import fast_init, replaced
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


@dataclass(frozen=True, slots=True)
class _Plain:
    left: int
    right: tuple[int, ...] = ()
    note: str | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class _Fast:  # _Plain's fields, with the fast __init__
    left: int
    right: tuple[int, ...] = ()
    note: str | None = None


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((1,), {}), ((1, (2, 3)), {}), ((1,), {"note": "n"}), ((), {"left": 1, "right": (4,)})],
)
def test_fast_init_builds_what_the_generated_init_builds(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    assert "_set0" in _Fast.__init__.__code__.co_names
    fast, plain = _Fast(*args, **kwargs), _Plain(*args, **kwargs)
    assert [getattr(fast, f.name) for f in dataclasses.fields(_Fast)] == [
        getattr(plain, f.name) for f in dataclasses.fields(_Plain)
    ]
    assert fast == _Fast(*args, **kwargs) and hash(fast) == hash(_Fast(*args, **kwargs))
    assert pickle.loads(pickle.dumps(fast)) == fast
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.left = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        ((), {}, "missing 1 required positional argument: 'left'"),
        ((1,), {"nope": 2}, "unexpected keyword argument 'nope'"),
        ((1, (), None, 4), {}, "takes from 2 to 4 positional arguments but 5 were given"),
        ((1,), {"left": 2}, "multiple values for argument 'left'"),
    ],
)
def test_fast_init_refuses_what_the_generated_init_refuses(
    args: tuple[Any, ...], kwargs: dict[str, Any], error: str
) -> None:
    with pytest.raises(TypeError, match=error):
        _Plain(*args, **kwargs)
    with pytest.raises(TypeError, match=error):
        _Fast(*args, **kwargs)


@pytest.mark.parametrize("cls", [ValidationResult, Issue])
def test_the_hot_results_have_the_fast_init_and_the_generated_signature(cls: type) -> None:
    assert "_set0" in cls.__init__.__code__.co_names  # type: ignore[misc]
    defaults = {
        f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
    }
    namespace = {"__annotations__": cls.__annotations__, **defaults}
    generated: type = dataclass(frozen=True, slots=True)(type(cls.__name__, (), namespace))
    assert inspect.signature(cls) == inspect.signature(generated)


@pytest.mark.parametrize(
    "cls", [_Checked, _Computed, _KeywordsOnly, _SlottedChecked, _SlottedOwnInit, CheckOptions]
)
def test_fast_init_leaves_what_it_cannot_do_exactly(cls: type) -> None:
    """A __post_init__, init=False, keyword-only fields, no slots, a hand-written
    __init__: the class keeps its own __init__."""
    own = cls.__init__  # type: ignore[misc]
    assert fast_init(cls) is cls
    assert cls.__init__ is own  # type: ignore[misc]


def test_replaced_gives_the_same_copy_whatever_the_order_of_the_changes() -> None:
    one = replaced(RESULT, message="m", issues=(), result=True)
    other = replaced(RESULT, result=True, issues=(), message="m")
    assert one == other == dataclasses.replace(RESULT, message="m", issues=(), result=True)


def test_replaced_past_its_kept_replacers_is_still_right(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_REPLACERS a new combination of changed fields is not kept, only built."""
    monkeypatch.setattr(frozen, "_REPLACERS", {})
    monkeypatch.setattr(frozen, "MAX_REPLACERS", 1)
    assert replaced(RESULT, code="a").code == "a"
    assert replaced(RESULT, display="b", code="c") == dataclasses.replace(
        RESULT, display="b", code="c"
    )
    assert list(frozen._REPLACERS) == [(ValidationResult, ("code",))]


def test_fast_init_wants_a_dataclass() -> None:
    class Plain:
        __slots__ = ("a",)

    with pytest.raises(TypeError, match="above @dataclass"):
        fast_init(Plain)
