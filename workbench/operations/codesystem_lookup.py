"""CodeSystem/$lookup (type level): display, designations and properties of a code."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import RequiredError
from workbench.operations.base import Inputs, Operation, honoured, one_of
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.requests import LookupRequest

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-CodeSystem-lookup.json")


#: The inputs the operation consumes itself; the others are fields of LookupRequest.
OWN = ("coding",)


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """Look up code+system or a Coding; ``property`` selects the properties returned."""
    given = one_of(inputs, ("code", "coding"), "look up")
    if given == "code":
        system, code, version = inputs.get("system"), inputs["code"], inputs.get("version")
    else:
        coding = inputs["coding"]
        system, code = coding.get("system"), coding.get("code")
        version = inputs.get("version") or coding.get("version")
    if not system or not code:
        raise RequiredError("$lookup needs both a system and a code")
    found = svc.lookup(
        LookupRequest.from_inputs(inputs, own=OWN, system=system, code=code, version=version)
    )
    return {
        "name": found.name,
        "system": found.system,
        "version": found.version,
        "code": found.code,
        "display": found.display if found.display is not None else found.code,
        "definition": found.definition,
        "abstract": found.abstract,
        "designation": [
            {"language": d.get("language"), "use": d.get("use"), "value": d.get("value")}
            for d in found.designations
        ],
        "property": [
            {
                "code": name,
                "value": value,
                "description": value.description,
                "code-display": value.code_display,
            }
            for name, value in found.typed_properties
        ],
    }


OPERATION = Operation(DEFINITION, run, honoured(DEFINITION, LookupRequest, OWN), memo=True)
