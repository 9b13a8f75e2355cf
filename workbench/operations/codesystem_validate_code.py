"""CodeSystem/$validate-code (type and instance level): is the code in the code system?"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from workbench.errors import RequiredError
from workbench.operations.base import (
    ACCEPT_LANGUAGE,
    Inputs,
    NothingGivenError,
    Operation,
    honoured,
    one_of,
)
from workbench.operations.caching import CACHE_ID
from workbench.operations.client_inputs import (
    CLIENT_STATE,
    Clock,
    codesystem_diagnostics,
    with_mode,
)
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.requests import CodeSystemValidateRequest
from workbench.terminology.result import Issue
from workbench.terminology.validate.coding import (
    NO_SYSTEM,
    ValidationResult,
    combine_codings,
    located,
)

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-CodeSystem-validate-code.json")


#: The inputs the operation consumes itself; the others are fields of
#: CodeSystemValidateRequest (one per code checked).
OWN = ("coding", "codeableConcept", "system", ACCEPT_LANGUAGE, "mode", "diagnostics", *CLIENT_STATE)


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """Validate a code, Coding or CodeableConcept against the code system ``url``/instance;
    ``diagnostics=true`` adds how the answer was reached."""
    clock = Clock()
    inputs = with_mode(inputs)
    url = inputs.get("url")
    if resource is not None:
        if url is not None and url != resource.get("url"):
            raise RequiredError(  # (a rule between inputs: the document states it)
                f"The 'url' parameter ({url}) does not match the CodeSystem instance "
                f"({resource.get('url')})"
            )
        url = resource.get("url")
        inputs = {**inputs, "version": inputs.get("version") or resource.get("version")}
    given = one_of(inputs, ("code", "coding", "codeableConcept"), "validate")
    url = url or _system_given(inputs, given)
    if not url and given != "code":
        return without_system(inputs, given).outputs()
    if not url:
        raise RequiredError(
            "Parameter 'url' is required when the operation is not called on a CodeSystem "
            "instance and the input names no system (coding.system, or system with code)"
        )
    base = CodeSystemValidateRequest.from_inputs(inputs, own=OWN, system=str(url))

    def check(code: Any, display: Any, system: Any = None, version: Any = None) -> ValidationResult:
        """One code; a Coding's own ``version`` (when it has one) is the version it names."""
        if system is not None and system != url:
            other = replace(base, system=str(system), code=str(code), version=version)
            return svc.validate_in_codesystem(replace(other, display=display))
        named = base if version is None else replace(base, version=str(version))
        return svc.validate_in_codesystem(replace(named, code=code, display=display))

    if given == "code":
        result = check(inputs["code"], inputs.get("display"))
    elif given == "coding":
        coding = inputs["coding"]
        result = located(check(*_parts(coding)), "Coding")
    else:
        codings = inputs["codeableConcept"].get("coding") or []
        if not codings:
            raise NothingGivenError("The codeableConcept has no coding to validate")
        result = combine_codings([check(*_parts(c)) for c in codings])
        result = replace(result, concept=inputs["codeableConcept"])  # echoed
    outputs = result.outputs()
    if inputs.get("diagnostics") is True:
        outputs["diagnostics"] = codesystem_diagnostics(svc, base, result, clock=clock)
    return outputs


def without_system(inputs: Inputs, given: str) -> ValidationResult:
    """The answer for a Coding (or a CodeableConcept's first coding) that names no system,
    with no ``url`` either: not valid, with a warning, never an error (the HL7 validator
    sends such codings, and reads the answer)."""
    if given == "coding":
        coding, path = inputs["coding"], "Coding"
    else:
        coding, path = (
            (inputs["codeableConcept"].get("coding") or [{}])[0],
            "CodeableConcept.coding[0]",
        )
    code = coding.get("code")
    issue = Issue("warning", "invalid-data", NO_SYSTEM, "unknown-system", "system", path)
    return ValidationResult(
        False, NO_SYSTEM, None, str(code) if code else None, None, None, "unknown-system", (issue,)
    )


def _parts(coding: Any) -> tuple[Any, Any, Any, Any]:
    """A Coding's code, display, system and version."""
    return coding.get("code"), coding.get("display"), coding.get("system"), coding.get("version")


def _system_given(inputs: Inputs, given: str) -> str | None:
    """The code system the input names when ``url`` is absent (a12): ``coding.system``,
    ``system`` beside ``code``, or the first coding's system of a CodeableConcept."""
    if given == "coding":
        found = inputs["coding"].get("system")
    elif given == "code":
        found = inputs.get("system")
    else:
        codings = inputs["codeableConcept"].get("coding") or [{}]
        found = codings[0].get("system")
    return str(found) if found else None


OPERATION = Operation(
    DEFINITION,
    run,
    honoured(DEFINITION, CodeSystemValidateRequest, (*OWN, CACHE_ID)),
    cached=True,
    memo=True,
)
