"""ValueSet/$validate-code (type and instance level)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import RequiredError
from workbench.operations.base import Inputs, Operation, one_of, target_valueset
from workbench.operations.definitions import load_definition
from workbench.resources import Resource

if TYPE_CHECKING:
    from workbench.workbench import Workbench

DEFINITION = load_definition("OperationDefinition-ValueSet-validate-code.json")


def run(wb: Workbench, inputs: Inputs, resource: Resource | None = None) -> dict[str, Any]:
    """Validate code+system, a Coding or a CodeableConcept; result=false is not an error."""
    target = target_valueset(inputs, resource)
    given = one_of(inputs, ("code", "coding", "codeableConcept"), "validate")
    if given == "code" and not inputs.get("system"):
        raise RequiredError("Parameter 'system' is required with 'code'")
    kwargs: dict[str, Any] = {
        "valueset_version": inputs.get("valueSetVersion") if isinstance(target, str) else None,
        "abstract": inputs.get("abstract", False),
    }
    if given == "code":
        kwargs.update(
            code=inputs["code"],
            system=inputs["system"],
            version=inputs.get("systemVersion"),
            display=inputs.get("display"),
        )
    elif given == "coding":
        coding = inputs["coding"]
        if inputs.get("display") is not None:
            coding = {**coding, "display": inputs["display"]}
        kwargs["coding"] = coding
    else:
        kwargs["codeable_concept"] = inputs["codeableConcept"]
    if isinstance(target, str):
        result = wb.validate_code(target, **kwargs)
    else:
        result = wb.validate_code(valueset=target, **kwargs)
    return {"result": result.result, "message": result.message, "display": result.display}


OPERATION = Operation(
    DEFINITION,
    run,
    frozenset(
        {
            "url",
            "valueSet",
            "valueSetVersion",
            "code",
            "system",
            "systemVersion",
            "display",
            "coding",
            "codeableConcept",
            "abstract",
        }
    ),
)
