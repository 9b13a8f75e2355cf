"""``[base]/$closure`` and ``[base]/ConceptMap/$closure`` (R4's ConceptMap-closure): closure
tables. R4 defines the operation at system level; it is served at type level too, where
clients call it as ``ConceptMap/$closure`` (TermX serves it there), so the definition this
server publishes says ``type: true``.

A call that names a closure and sends no concept (and no ``version``) initialises it (an
empty table at version 0, replacing one of that name); a call with ``concept``s adds them
and answers the relationships that are new, as a ConceptMap whose ``version`` is the
table's after the call; a call with ``version`` answers every relationship added after that
version (resynchronisation). The tables are the server's (``inputs[CLOSURES]``, a
``ClosureTables``: its database, shared by every worker and every instance of a fleet).
The concepts are of any loaded code system with a hierarchy (SNOMED CT, LOINC, ICD-10-CM,
a CodeSystem resource); the call changes state, so it is POST only (``affectsState``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from workbench.errors import InvalidRequestError, NotSupportedError
from workbench.operations.base import CLOSURES, Inputs, Operation
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.closure import (
    ClosureTables,
    check_name,
    check_version,
    conceptmap,
    planner,
    resolve,
    unknown_closure,
)

if TYPE_CHECKING:
    from workbench.service import TerminologyService

_R4_DEFINITION = load_definition("OperationDefinition-ConceptMap-closure.json")
DEFINITION = replace(_R4_DEFINITION, type=True, resource={**_R4_DEFINITION.resource, "type": True})


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """Initialise, add to or replay the closure table the inputs name."""
    tables = inputs.get(CLOSURES)
    if not isinstance(tables, ClosureTables):
        raise NotSupportedError("$closure needs a server: there are no closure tables here")
    name = check_name(inputs.get("name"))
    concepts = inputs.get("concept") or []
    raw_version = inputs.get("version")
    if concepts and raw_version is not None:
        raise InvalidRequestError(  # (a rule between inputs: the document states it)
            "$closure takes either 'concept' (to add) or 'version' (to replay), not both"
        )
    now = time.time()
    date = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    if raw_version is not None:
        check_version(raw_version, name)  # (malformed: before the database is asked)
        found = tables.since(name, check_version(raw_version, name), now)
        if found is None:
            raise unknown_closure(name)
        current, entries = found
        check_version(raw_version, name, current)
        return {"return": conceptmap(name, current, entries, date)}
    if not concepts:
        return {"return": conceptmap(name, tables.initialise(name, now), [], date)}
    engine = svc.engine()
    resolved = resolve(concepts, engine.require_codesystem)
    added = tables.add(name, planner(resolved), now)
    if added is None:
        raise unknown_closure(name)
    return {"return": conceptmap(name, added[0], added[1], date)}


OPERATION = Operation(
    DEFINITION, run, frozenset({"name", "concept", "version"}), blocking=True, with_closures=True
)
