"""ValueSet/$expand (type and instance level); returns the expanded ValueSet (rule 6)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import InvalidRequestError
from workbench.operations.base import Inputs, Operation, honoured, target_valueset
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.requests import ExpandRequest

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-ValueSet-expand.json")


#: The inputs the operation consumes itself (``excludePostCoordinated`` is accepted and
#: changes nothing: there are no post-coordinated codes in an expansion here); the others
#: are fields of ExpandRequest.
OWN = ("url", "valueSet", "excludePostCoordinated")


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
    expansion = svc.expand(ExpandRequest.from_inputs(inputs, own=OWN, valueset=target))
    return {"return": expansion.to_valueset()}


OPERATION = Operation(DEFINITION, run, honoured(DEFINITION, ExpandRequest, OWN), blocking=True)
