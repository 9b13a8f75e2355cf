"""The CapabilityStatement served at ``GET {base}/metadata``."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from workbench.operations import Operation
from workbench.registry import TERMINOLOGY_TYPES
from workbench.server.store import SEARCH_PARAMETERS

_SEARCH_TYPES = {
    "url": "uri",
    "version": "token",
    "name": "string",
    "title": "string",
    "status": "token",
    "_id": "token",
}


def capability_statement(operations: tuple[Operation, ...], base_url: str) -> dict[str, Any]:
    """Describe the resources, interactions and operations this server offers."""
    resources = []
    for rtype in TERMINOLOGY_TYPES:
        ops = [
            {"name": op.definition.code, "definition": op.definition.url}
            for op in operations
            if rtype in op.definition.resource_types
        ]
        resources.append(
            {
                "type": rtype,
                "interaction": [
                    {"code": c} for c in ("read", "create", "update", "delete", "search-type")
                ],
                "versioning": "versioned-update",
                "updateCreate": True,
                "conditionalUpdate": False,
                "searchParam": [{"name": n, "type": _SEARCH_TYPES[n]} for n in SEARCH_PARAMETERS],
                "operation": ops,
            }
        )
    resources.append({"type": "OperationDefinition", "interaction": [{"code": "read"}]})
    system_ops = [
        {"name": op.definition.code, "definition": op.definition.url}
        for op in operations
        if op.definition.system
    ]
    rest: dict[str, Any] = {
        "mode": "server",
        "security": {
            "description": "Send Authorization: Bearer <token> on every request but GET /metadata"
        },
        "resource": resources,
    }
    if system_ops:
        rest["operation"] = system_ops
    return {
        "resourceType": "CapabilityStatement",
        "status": "active",
        "date": datetime.now(timezone.utc).date().isoformat(),
        "kind": "instance",
        "software": {"name": "FHIR terminology workbench"},
        "implementation": {"description": "FHIR terminology workbench", "url": base_url},
        "fhirVersion": "4.0.1",
        "format": ["application/fhir+json", "json"],
        "rest": [rest],
    }
