"""CodeSystem/$subsumes (type and instance level)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import InvalidRequestError, RequiredError
from workbench.operations.base import ACCEPT_LANGUAGE, Inputs, Operation, honoured
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.requests import SubsumesRequest

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-CodeSystem-subsumes.json")


#: The inputs the operation consumes itself; the others are fields of SubsumesRequest.
OWN = ("codingA", "codingB", ACCEPT_LANGUAGE)


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """Compare codeA with codeB (or codingA with codingB) in one code system."""
    system = inputs.get("system")
    version = inputs.get("version")
    if resource is not None:
        system, version = resource.get("url"), version or resource.get("version")
    codes: list[str] = []
    for side in ("A", "B"):
        code, coding = inputs.get(f"code{side}"), inputs.get(f"coding{side}")
        if (code is None) == (coding is None):
            raise RequiredError(f"Give exactly one of code{side} and coding{side}")
        if coding is not None:
            if system is not None and coding.get("system") not in (None, system):
                raise InvalidRequestError(
                    f"coding{side} is from {coding.get('system')}, not from {system}"
                )
            system = system or coding.get("system")
            code = coding.get("code")
        if not code:
            raise RequiredError(f"coding{side} has no code")
        codes.append(str(code))
    if not system:
        raise RequiredError("Parameter 'system' is required (or call it on a CodeSystem)")
    req = SubsumesRequest.from_inputs(
        inputs, own=OWN, system=system, version=version, code_a=codes[0], code_b=codes[1]
    )
    return {"outcome": svc.subsumes(req)}


OPERATION = Operation(DEFINITION, run, honoured(DEFINITION, SubsumesRequest, OWN), memo=True)
