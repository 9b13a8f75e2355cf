"""The engine itself, shipped to Dask and Spark workers: one answer path on every backend.

A worker answers its keys with the very engine ``validate_code`` runs (a ``Checker`` over
``batch.CodingCheck``), not a copy of its rules. ``ShippedChecker`` carries the engine as
``ShippedEngine``: in the process that made it (Dask's threaded scheduler) the live engine
is used as it is; pickled, it travels as the engine's own pickle (its registry and its
release providers, whose stores pickle as their folders) made once, under a token that
names the engine and its state, and a worker process unpickles it once per token and
keeps it (with what it learns: compiled value sets, answer tables) for the next tasks.
"""

from __future__ import annotations

import pickle
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from workbench.bulk.checker import Checker, make_checker
from workbench.terminology.engine import Terminology

MAX_ENGINES = 2  # engines a worker process keeps (the latest shipped)
_ENGINES: OrderedDict[str, Terminology] = OrderedDict()
_NAMES: weakref.WeakKeyDictionary[Terminology, str] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def engine_token(engine: Terminology) -> str:
    """A name for ``engine`` in its current state: the same engine with the same
    resources and providers gives the same token; any change gives another."""
    with _LOCK:
        name = _NAMES.get(engine)
        if name is None:
            name = _NAMES[engine] = uuid.uuid4().hex
    providers = ",".join(str(id(p)) for p in engine.providers())
    return f"{name}-{engine.registry.generation}-{providers}"


class ShippedEngine:
    """An engine that can travel to workers (see the module docstring)."""

    def __init__(self, engine: Terminology, token: str | None = None) -> None:
        self.engine = engine
        self.token = token or engine_token(engine)
        self._payload: bytes | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        if self._payload is None:  # pickled once, however many tasks carry it
            self._payload = pickle.dumps(self.engine, protocol=pickle.HIGHEST_PROTOCOL)
        return (_arrived, (self.token, self._payload))


def _arrived(token: str, payload: bytes) -> ShippedEngine:
    """The engine on a worker: unpickled once per token in this process, then reused."""
    with _LOCK:
        found = _ENGINES.get(token)
        if found is not None:
            _ENGINES.move_to_end(token)
            return ShippedEngine(found, token)
    engine = pickle.loads(payload)
    with _LOCK:
        engine = _ENGINES.setdefault(token, engine)
        while len(_ENGINES) > MAX_ENGINES:
            _ENGINES.popitem(last=False)
    return ShippedEngine(engine, token)


class ShippedChecker:
    """A ``Checker`` to be made where the keys are answered: the shipped engine, the value
    set and the switches of the call."""

    def __init__(
        self, engine: Terminology, valueset: str | Mapping[str, Any], abstract: bool | None
    ) -> None:
        self.shipped = ShippedEngine(engine)
        self.valueset = valueset
        self.abstract = abstract

    def open(self) -> Checker:
        """The checker over the engine here (its answers kept with the engine)."""
        return make_checker(self.shipped.engine, self.valueset, self.abstract)
