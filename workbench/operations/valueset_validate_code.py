"""ValueSet/$validate-code (type and instance level)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import RequiredError
from workbench.operations.base import Inputs, Operation, honoured, one_of, target_valueset
from workbench.operations.caching import CACHE_ID
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.requests import ValidateRequest

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-ValueSet-validate-code.json")


#: The inputs the operation consumes itself; the others are fields of ValidateRequest.
OWN = ("url", "valueSet", "inferSystem", "version")


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """Validate code+system, a Coding or a CodeableConcept; result=false is not an error."""
    target = target_valueset(inputs, resource)
    given = one_of(inputs, ("code", "coding", "codeableConcept"), "validate")
    if given == "code" and not inputs.get("system") and not inputs.get("inferSystem"):
        raise RequiredError(
            "Parameter 'system' is required with 'code' (or set inferSystem=true to infer it "
            "from the value set)"
        )
    if inputs.get("version") is not None and inputs.get("systemVersion") is None:
        inputs = {**inputs, "systemVersion": inputs["version"]}  # the name tx.fhir.org takes
    return svc.validate(ValidateRequest.from_inputs(inputs, own=OWN, valueset=target)).outputs()


OPERATION = Operation(
    DEFINITION, run, honoured(DEFINITION, ValidateRequest, (*OWN, CACHE_ID)), cached=True
)
