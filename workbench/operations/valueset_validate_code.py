"""ValueSet/$validate-code (type and instance level)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import RequiredError
from workbench.operations.base import Inputs, Operation, honoured, one_of, target_valueset
from workbench.operations.caching import CACHE_ID
from workbench.operations.client_inputs import (
    CLIENT_STATE,
    Clock,
    validation_diagnostics,
    with_mode,
)
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.requests import ValidateRequest

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-ValueSet-validate-code.json")


#: The inputs the operation consumes itself; the others are fields of ValidateRequest.
OWN = ("url", "valueSet", "version", "mode", "diagnostics", *CLIENT_STATE)


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """Validate code+system, a Coding or a CodeableConcept; result=false is not an error.
    ``diagnostics=true`` adds how the answer was reached."""
    clock = Clock()
    target = target_valueset(inputs, resource)
    given = one_of(inputs, ("code", "coding", "codeableConcept"), "validate")
    if given == "code" and not inputs.get("system") and not inputs.get("inferSystem"):
        raise RequiredError(
            "Parameter 'system' is required with 'code' (or set inferSystem=true to infer it "
            "from the value set)"
        )
    if inputs.get("version") is not None and inputs.get("systemVersion") is None:
        inputs = {**inputs, "systemVersion": inputs["version"]}  # the name tx.fhir.org takes
    inputs = with_mode(inputs)
    req = ValidateRequest.from_inputs(inputs, own=OWN, valueset=target)
    if inputs.get("diagnostics") is not True:
        return svc.validate(req).outputs()
    cached = not req.tx_resources and svc.terminology.is_compiled(
        target, req.valueset_version, req.policy
    )
    result = svc.validate(req)
    outputs = result.outputs()
    outputs["diagnostics"] = validation_diagnostics(svc, req, result, cached=cached, clock=clock)
    return outputs


OPERATION = Operation(
    DEFINITION,
    run,
    honoured(DEFINITION, ValidateRequest, (*OWN, CACHE_ID)),
    cached=True,
    memo=True,
)
