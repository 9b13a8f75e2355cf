"""``GET [base]/$versions``: the FHIR versions served here, and the default (system level)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.operations.base import Inputs, Operation
from workbench.operations.definitions import load_definition
from workbench.resources import Resource

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-CapabilityStatement-versions.json")
#: The FHIR version of this base, as ``MAJOR.MINOR`` (what ``$versions`` names).
SERVED = ("4.0",)


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """The versions served (R4 only) and the default one."""
    return {"version": list(SERVED), "default": SERVED[0]}


OPERATION = Operation(DEFINITION, run, frozenset())
