"""ValueSet/$expand (type and instance level); returns the expanded ValueSet (rule 6)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from workbench.errors import InvalidRequestError, TooCostlyError
from workbench.operations.base import Inputs, Operation, honoured, target_valueset
from workbench.operations.caching import CACHE_ID
from workbench.operations.client_inputs import CLIENT_STATE
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.expand.expansion import Expansion
from workbench.terminology.requests import ExpandRequest

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-ValueSet-expand.json")


#: The inputs the operation consumes itself (``excludePostCoordinated=true`` leaves out the
#: post-coordinated expressions a value set lists, which are expanded as listed); the
#: others are fields of ExpandRequest.
OWN: tuple[str, ...] = (
    "url",
    "valueSet",
    "excludePostCoordinated",
    "_limit",
    "_incomplete",
    "incomplete-ok",
    *CLIENT_STATE,
)
#: R4's extension marking an expansion cut short because the whole is too costly.
TOO_COSTLY = "http://hl7.org/fhir/StructureDefinition/valueset-toocostly"


#: The inputs refused when negative (the OpenAPI document states it as their minimum).
NON_NEGATIVE_INPUTS = ("offset", "count", "_limit")


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """Expand; ``count=0`` gives the total only. ``excludeNested=false`` nests each code
    under its parent (when not paged); otherwise contains are flat."""
    target = target_valueset(inputs, resource)
    offset = inputs.get("offset", 0)
    count = inputs.get("count")
    if offset < 0 or (count is not None and count < 0):
        raise InvalidRequestError("Parameters 'offset' and 'count' must be 0 or more")
    limit = inputs.get("_limit")
    if limit is not None and limit < 0:
        raise InvalidRequestError(f"Parameter '_limit' must be 0 or more, not {limit}")
    if limit is not None and (count is None or count > limit):
        inputs = {**inputs, "count": limit}
    expansion = svc.expand(ExpandRequest.from_inputs(inputs, own=OWN, valueset=target))
    if inputs.get("excludePostCoordinated") is True:
        expansion = _without_expressions(svc, expansion)
    valueset = expansion.to_valueset()
    if limit is not None and count is None:
        valueset = _limited(valueset, limit, inputs)
    return {"return": valueset}


def _limited(valueset: dict[str, Any], limit: int, inputs: Inputs) -> dict[str, Any]:
    """An expansion asked for with ``_limit`` (the HL7 validator's): whole when it has at
    most ``limit`` codes; else its first ``limit`` codes marked too costly when the client
    takes an incomplete one (``_incomplete``, ``incomplete-ok``), else TooCostlyError."""
    expansion = valueset.get("expansion", {})
    total = expansion.get("total")
    if not isinstance(total, int) or total <= limit:
        return valueset
    if inputs.get("_incomplete") is not True and inputs.get("incomplete-ok") is not True:
        raise TooCostlyError(
            f"The expansion has {total} codes, more than the {limit} the request allows "
            "(_limit); send _incomplete=true to take its first codes, or narrow it with filter"
        )
    marked = [*expansion.get("extension", []), {"url": TOO_COSTLY, "valueBoolean": True}]
    return {**valueset, "expansion": {**expansion, "extension": marked}}


def _without_expressions(svc: TerminologyService, expansion: Expansion) -> Expansion:
    """The expansion without its post-coordinated expressions (codes of a compositional
    code system, SNOMED CT, that its provider reads as expressions)."""
    providers: dict[tuple[str, str | None], Any] = {}
    kept = []
    for entry in expansion.entries:
        key = (entry.system, entry.version)
        if key not in providers:
            found = svc.terminology.codesystem(entry.system, entry.version)
            providers[key] = found if found is not None and found.expressions else None
        cs = providers[key]
        if cs is None or not cs.is_expression(entry.code):
            kept.append(entry)
    if len(kept) == len(expansion.entries):
        return expansion
    return dataclasses.replace(expansion, entries=tuple(kept))


OPERATION = Operation(
    DEFINITION,
    run,
    honoured(DEFINITION, ExpandRequest, (*OWN, CACHE_ID)),
    blocking=True,
    cached=True,
)
