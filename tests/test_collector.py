"""The cyclic garbage collector is paused while the engine builds what it keeps (code system
indexes, compiled value sets, bulk answer tables, loaded packages), and left as it was."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pytest

from workbench import Workbench, collector
from workbench.terminology.codesystem import CodeSystemIndex

SYSTEM = "http://example.org/fhir/CodeSystem/many"
VS = "http://example.org/fhir/ValueSet/many"
CONCEPTS = 20_000  # enough containers for many collections of the youngest generation


def _codesystem() -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": SYSTEM,
        "status": "active",
        "content": "complete",
        "property": [{"code": "parent", "type": "code"}],
        "concept": [
            {
                "code": f"c{i}",
                "display": f"Concept {i}",
                "property": [{"code": "parent", "valueCode": f"c{i // 10}"}] if i else [],
            }
            for i in range(CONCEPTS)
        ],
    }


def _valueset() -> dict[str, Any]:
    return {
        "resourceType": "ValueSet",
        "url": VS,
        "status": "active",
        "compose": {
            "include": [
                {"system": SYSTEM, "filter": [{"property": "concept", "op": "is-a", "value": "c1"}]}
            ]
        },
    }


@contextlib.contextmanager
def _collections() -> Iterator[list[int]]:
    """The generations of the collections that start inside the block."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and threading.current_thread() is threading.main_thread():
            seen.append(int(info["generation"]))

    gc.collect()
    gc.callbacks.append(record)
    try:
        yield seen
    finally:
        gc.callbacks.remove(record)


def _index() -> Callable[[], object]:
    resource = _codesystem()
    return lambda: CodeSystemIndex(resource)


def _load() -> Callable[[], object]:
    resources = [_codesystem(), _valueset()]
    return lambda: Workbench().load(resources, progress=False)


def _validate_column() -> Callable[[], object]:
    wb = Workbench()
    wb.load([_codesystem(), _valueset()], progress=False)
    codes = pd.Series([f"c{i}" for i in range(CONCEPTS)] + ["nope", None])
    return lambda: wb.validate_column(codes, VS)  # compiles, expands and answers


BUILDS: dict[str, Callable[[], Callable[[], object]]] = {
    "code system index": _index,
    "package of resources": _load,
    "first validate_column": _validate_column,
}


@pytest.mark.parametrize("prepare", list(BUILDS.values()), ids=list(BUILDS))
def test_builds_run_without_the_collectors_passes(
    prepare: Callable[[], Callable[[], object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build with the pause against the same build with the pause made a no-op: the
    collector's passes (a young collection every 700 new containers, and the older
    generations' rescans of everything built so far) drop to the one or few deferred to
    the end of the build; the collector is on again afterwards."""
    counts = {}
    for paused in (True, False):
        build = prepare()
        with monkeypatch.context() as patch:
            if not paused:
                patch.setattr(collector, "paused", contextlib.nullcontext)
            with _collections() as seen:
                build()
        assert gc.isenabled()
        counts[paused] = len(seen)
    assert counts[False] >= 20, counts
    assert counts[True] * 10 <= counts[False], counts


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_it_was(enabled: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with collector.paused():
            assert not gc.isenabled()
            with collector.paused():  # nested: the inner block must not turn it back on
                assert not gc.isenabled()
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(ZeroDivisionError), collector.paused():
            _ = 1 / 0
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_a_cycle_made_while_paused_is_collected_afterwards() -> None:
    class Node:
        other: Any = None

    import weakref

    with collector.paused():
        a, b = Node(), Node()
        a.other, b.other = b, a
        ref = weakref.ref(a)
        del a, b
        assert ref() is not None  # only the cyclic collector can free a cycle
    gc.collect()
    assert ref() is None
