"""ValueSet/$validate-code (type and instance level)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import RequiredError
from workbench.operations.base import (
    ACCEPT_LANGUAGE,
    Inputs,
    Operation,
    one_of,
    target_valueset,
)
from workbench.operations.definitions import load_definition
from workbench.resources import Resource

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-ValueSet-validate-code.json")


def strictness(inputs: Inputs) -> dict[str, Any]:
    """The version parameters and strictness switches of $validate-code, as keywords of
    ``Workbench.validate_code``."""
    return {
        "system_version": inputs.get("system-version"),
        "force_system_version": inputs.get("force-system-version"),
        "check_system_version": inputs.get("check-system-version"),
        "default_valueset_version": inputs.get("default-valueset-version"),
        "abstract": inputs.get("abstract", False),
        "lenient_display": inputs.get("lenient-display-validation", False),
        "membership_only": inputs.get("valueset-membership-only", False),
        "active_only": inputs.get("activeOnly", False),
        "tx_resources": inputs.get("tx-resource"),
        "display_language": inputs.get("displayLanguage"),
        "accept_language": inputs.get(ACCEPT_LANGUAGE),
        "use_supplements": inputs.get("useSupplement"),
    }


def run(wb: TerminologyService, inputs: Inputs, resource: Resource | None = None) -> dict[str, Any]:
    """Validate code+system, a Coding or a CodeableConcept; result=false is not an error."""
    target = target_valueset(inputs, resource)
    given = one_of(inputs, ("code", "coding", "codeableConcept"), "validate")
    if given == "code" and not inputs.get("system") and not inputs.get("inferSystem"):
        raise RequiredError(
            "Parameter 'system' is required with 'code' (or set inferSystem=true to infer it "
            "from the value set)"
        )
    kwargs: dict[str, Any] = {
        "valueset_version": inputs.get("valueSetVersion") if isinstance(target, str) else None,
        **strictness(inputs),
    }
    if given == "code":
        kwargs.update(
            code=inputs["code"],
            system=inputs.get("system"),
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
    return result.outputs()


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
            "inferSystem",
            "activeOnly",
            "lenient-display-validation",
            "valueset-membership-only",
            "system-version",
            "check-system-version",
            "force-system-version",
            "default-valueset-version",
            "tx-resource",
            "displayLanguage",
            "useSupplement",
        }
    ),
)
