"""ValueSet/$compare (type level): two value sets side by side, as tx.fhir.org offers it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import InvalidRequestError, RequiredError
from workbench.operations.base import Inputs, Operation, honoured
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.requests import CompareRequest

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-ValueSet-compare.json")

#: The inputs the operation consumes itself; the others are fields of CompareRequest.
OWN: tuple[str, ...] = ("thisUrl", "thisValueSet", "otherUrl", "otherValueSet", "diagnostics")


def _side(inputs: Inputs, name: str) -> Any:
    """The ``{name}Url`` or the ``{name}ValueSet`` input: exactly one of them."""
    url, given = inputs.get(f"{name}Url"), inputs.get(f"{name}ValueSet")
    if url is not None and given is not None:
        raise InvalidRequestError(f"Give {name}Url or {name}ValueSet, not both")
    if url is None and given is None:
        raise RequiredError(f"Parameter '{name}Url' (or '{name}ValueSet') is required")
    return url if url is not None else given


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """Compare value set *this* with *other*: result, the codes each way, whether
    expansions were compared, and a message."""
    req = CompareRequest.from_inputs(
        inputs, own=OWN, this=_side(inputs, "this"), other=_side(inputs, "other")
    )
    comparison = svc.compare(req)
    out = comparison.outputs()
    if inputs.get("diagnostics") is True:
        how = "expansions" if comparison.performed_expansion else "normalised definitions"
        out["diagnostics"] = f"{comparison.this} and {comparison.other} compared by their {how}"
    return out


OPERATION = Operation(DEFINITION, run, honoured(DEFINITION, CompareRequest, OWN), blocking=True)
