"""CodeSystem/$validate-code (type and instance level): is the code in the code system?"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import InvalidRequestError, RequiredError
from workbench.operations.base import Inputs, Operation, one_of
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.validation import ValidationResult, combine_codings, located

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-CodeSystem-validate-code.json")


def run(wb: TerminologyService, inputs: Inputs, resource: Resource | None = None) -> dict[str, Any]:
    """Validate a code, Coding or CodeableConcept against the code system ``url``/instance."""
    url = inputs.get("url")
    if resource is not None:
        if url is not None and url != resource.get("url"):
            raise InvalidRequestError(
                f"The 'url' parameter ({url}) does not match the CodeSystem instance "
                f"({resource.get('url')})"
            )
        url = resource.get("url")
        inputs = {**inputs, "version": inputs.get("version") or resource.get("version")}
    if not url:
        raise RequiredError(
            "Parameter 'url' is required when the operation is not called on a CodeSystem instance"
        )
    given = one_of(inputs, ("code", "coding", "codeableConcept"), "validate")
    version, abstract = inputs.get("version"), inputs.get("abstract", True)

    extra = inputs.get("tx-resource")

    def check(code: Any, display: Any, system: Any = None) -> ValidationResult:
        if system is not None and system != url:
            return wb.validate_in_codesystem(
                str(system), str(code), display=display, abstract=abstract, tx_resources=extra
            )
        return wb.validate_in_codesystem(
            str(url), code, version=version, display=display, abstract=abstract, tx_resources=extra
        )

    if given == "code":
        result = check(inputs["code"], inputs.get("display"))
    elif given == "coding":
        coding = inputs["coding"]
        result = located(
            check(coding.get("code"), coding.get("display"), coding.get("system")), "Coding"
        )
    else:
        codings = inputs["codeableConcept"].get("coding") or []
        if not codings:
            raise RequiredError("The codeableConcept has no coding to validate")
        result = combine_codings(
            [check(c.get("code"), c.get("display"), c.get("system")) for c in codings]
        )
    return result.outputs()


OPERATION = Operation(
    DEFINITION,
    run,
    frozenset(
        {
            "url",
            "code",
            "version",
            "display",
            "coding",
            "codeableConcept",
            "abstract",
            "tx-resource",
        }
    ),
)
