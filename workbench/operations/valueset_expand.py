"""ValueSet/$expand (type and instance level); returns the expanded ValueSet (rule 6)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import InvalidRequestError
from workbench.operations.base import ACCEPT_LANGUAGE, Inputs, Operation, target_valueset
from workbench.operations.definitions import load_definition
from workbench.resources import Resource

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-ValueSet-expand.json")


def run(wb: TerminologyService, inputs: Inputs, resource: Resource | None = None) -> dict[str, Any]:
    """Expand; ``count=0`` gives the total only. ``excludeNested=false`` nests each code
    under its parent (when not paged); otherwise contains are flat."""
    target = target_valueset(inputs, resource)
    offset = inputs.get("offset", 0)
    count = inputs.get("count")
    if offset < 0 or (count is not None and count < 0):
        raise InvalidRequestError("Parameters 'offset' and 'count' must be 0 or more")
    expansion = wb.expand(
        target,
        version=inputs.get("valueSetVersion") if isinstance(target, str) else None,
        filter=inputs.get("filter"),
        offset=offset,
        count=count,
        active_only=inputs.get("activeOnly", False),
        include_designations=inputs.get("includeDesignations", False),
        display_language=inputs.get("displayLanguage"),
        tx_resources=inputs.get("tx-resource"),
        include_definition=inputs.get("includeDefinition", False),
        properties=inputs.get("property"),
        exclude_nested=inputs.get("excludeNested"),
        system_version=inputs.get("system-version"),
        check_system_version=inputs.get("check-system-version"),
        force_system_version=inputs.get("force-system-version"),
        default_valueset_version=inputs.get("default-valueset-version"),
        accept_language=inputs.get(ACCEPT_LANGUAGE),
        use_supplements=inputs.get("useSupplement"),
        designations=inputs.get("designation"),
    )
    return {"return": expansion.to_valueset()}


OPERATION = Operation(
    DEFINITION,
    run,
    frozenset(
        {
            "url",
            "valueSet",
            "valueSetVersion",
            "filter",
            "offset",
            "count",
            "activeOnly",
            "includeDesignations",
            "displayLanguage",
            "excludeNested",
            "excludePostCoordinated",
            "tx-resource",
            "includeDefinition",
            "property",
            "system-version",
            "check-system-version",
            "force-system-version",
            "default-valueset-version",
            "useSupplement",
            "designation",
        }
    ),
    blocking=True,
)
