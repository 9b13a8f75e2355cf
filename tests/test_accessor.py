"""The ``.fhir`` pandas accessor: it only delegates, to the Workbench given, else the one
chosen with ``workbench.use``, else the only one that exists; with several and none chosen it
raises an error naming them; an error from a call names the Workbench it used."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import workbench
import workbench.workbench
from workbench import Workbench, WorkbenchChoiceError

VALUESETS = Path(__file__).resolve().parent.parent / "valuesets"
DEMO = "http://example.org/fhir/CodeSystem/workbench-demo"
ALL = "http://example.org/fhir/ValueSet/workbench-demo-all"
MAP = {
    "resourceType": "ConceptMap",
    "url": "http://example.org/cm/demo",
    "group": [
        {
            "source": DEMO,
            "target": "http://example.org/other",
            "element": [{"code": "office", "target": [{"code": "o", "equivalence": "equal"}]}],
        }
    ],
}


@pytest.fixture
def alone() -> Iterator[None]:
    """No other Workbench is alive (the session's shared ones are hidden for the test)."""
    hidden = dict(workbench.workbench._LIVE)
    workbench.workbench._LIVE.clear()
    yield
    workbench.workbench._LIVE.update(hidden)


def _recording(monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    original = getattr(Workbench, name)

    def record(self: Workbench, *args: Any, **kwargs: Any) -> Any:
        calls.append((self, args, kwargs))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Workbench, name, record)
    return calls


def _fresh() -> Workbench:
    found = Workbench()
    found.load(VALUESETS, progress=False)
    found.load(MAP, progress=False)
    return found


CALLS: list[tuple[str, str, Callable[..., Any], dict[str, Any]]] = [
    (
        "frame-validate",
        "validate_column",
        lambda data, **kw: data.fhir.validate(ALL, code="c", system=DEMO, abstract=True, **kw),
        {"code": "c", "system": DEMO, "system_column": None, "display": None, "abstract": True},
    ),
    (
        "series-validate",
        "validate_column",
        lambda data, **kw: data["c"].fhir.validate(ALL, system=DEMO, **kw),
        {"system": DEMO, "abstract": None},
    ),
    (
        "frame-translate",
        "translate_column",
        lambda data, **kw: data.fhir.translate(MAP["url"], code="c", system=DEMO, **kw),
        {"code": "c", "system": DEMO, "system_column": None, "target_system": None},
    ),
    (
        "series-translate",
        "translate_column",
        lambda data, **kw: data["c"].fhir.translate(MAP["url"], system=DEMO, **kw),
        {"system": DEMO, "target_system": None},
    ),
]
IDS = [c[0] for c in CALLS]
DATA = pd.DataFrame({"c": ["office", "bogus", None]}, index=list("xyz"))


@pytest.mark.parametrize("how", ["given", "chosen", "chosen-in-block", "only-one"])
@pytest.mark.parametrize(("_id", "method", "call", "kwargs"), CALLS, ids=IDS)
def test_delegates_to_the_right_workbench(
    alone: None,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    _id: str,
    method: str,
    call: Callable[..., Any],
    kwargs: dict[str, Any],
) -> None:
    target = _fresh()
    other = _fresh() if how != "only-one" else None
    direct = call(DATA, workbench=target)
    calls = _recording(monkeypatch, method)
    if how == "given":
        via = call(DATA, workbench=target)
    elif how == "chosen":
        chosen = workbench.use(target)
        try:
            via = call(DATA)
        finally:
            chosen.__exit__(None, None, None)
    elif how == "chosen-in-block":
        with workbench.use(target) as entered:
            assert entered is target
            via = call(DATA)
    else:
        via = call(DATA)
    assert len(calls) == 1
    self, args, passed = calls[0]
    assert self is target and self is not other
    assert args[0] is DATA or args[0].equals(DATA["c"])
    assert passed == kwargs
    pd.testing.assert_frame_equal(pd.DataFrame(via), pd.DataFrame(direct))


@pytest.mark.parametrize(("_id", "method", "call", "kwargs"), CALLS, ids=IDS)
def test_several_workbenches_and_none_chosen_is_an_error_naming_them(
    alone: None, _id: str, method: str, call: Callable[..., Any], kwargs: dict[str, Any]
) -> None:
    first, second = _fresh(), Workbench()
    with pytest.raises(WorkbenchChoiceError) as caught:
        call(DATA)
    text = str(caught.value)
    assert "2 Workbenches exist" in text
    assert repr(first) in text and repr(second) in text
    assert "workbench=wb" in text and "workbench.use(wb)" in text
    # chosen: the call runs on it, and says so when it fails
    with workbench.use(second), pytest.raises(Exception) as failed:
        call(DATA)
    assert f"(this .fhir call used {second!r})" in getattr(failed.value, "__notes__", [])
    assert "0 ValueSets" in repr(second)


def test_no_workbench_at_all(alone: None) -> None:
    with pytest.raises(WorkbenchChoiceError, match="No Workbench exists: create one"):
        DATA.fhir.validate(ALL, code="c")


def test_the_only_one_left_is_used_once_the_others_are_gone(alone: None) -> None:
    kept, dropped = _fresh(), _fresh()
    with pytest.raises(WorkbenchChoiceError):
        workbench.current()
    del dropped
    gc.collect()
    assert workbench.current() is kept


def test_use_restores_the_previous_choice(alone: None) -> None:
    a, b = Workbench(), Workbench()
    with workbench.use(a):
        assert workbench.current() is a
        with workbench.use(b):
            assert workbench.current() is b
        assert workbench.current() is a
    with pytest.raises(WorkbenchChoiceError):
        workbench.current()
    with workbench.use(a), workbench.use(None), pytest.raises(WorkbenchChoiceError):
        workbench.current()  # None clears the choice


@pytest.mark.parametrize("bad", ["wb", 1, pd.DataFrame()])
def test_use_and_workbench_take_a_workbench(bad: Any) -> None:
    with pytest.raises(workbench.InvalidRequestError, match="takes a Workbench"):
        workbench.use(bad)
    with pytest.raises(TypeError, match="workbench= takes a Workbench"):
        DATA.fhir.validate(ALL, code="c", workbench=bad)


def test_a_missing_column_names_the_workbench_too(alone: None) -> None:
    wb = _fresh()
    with pytest.raises(KeyError) as caught:
        DATA.fhir.validate(ALL, code="nope")
    assert caught.value.__notes__ == [f"(this .fhir call used {wb!r})"]
