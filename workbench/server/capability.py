"""What the server says about itself: the CapabilityStatement at ``GET {base}/metadata`` and
the TerminologyCapabilities at ``GET {base}/metadata?mode=terminology``."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from workbench.operations import Operation
from workbench.registry import TERMINOLOGY_TYPES
from workbench.server import search

TERMINOLOGY_SERVER = "http://hl7.org/fhir/CapabilityStatement/terminology-server"
SECURITY = {
    "description": "Send Authorization: Bearer <token> on every request but GET /metadata",
    "service": [{"text": "Bearer token (RFC 6750)"}],
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
                "searchParam": [
                    {"name": n, "type": search.TYPES[n]} for n in search.parameters(rtype)
                ],
                "operation": ops,
            }
        )
    resources.append({"type": "OperationDefinition", "interaction": [{"code": "read"}]})
    system_ops = [
        {"name": op.definition.code, "definition": op.definition.url}
        for op in operations
        if op.definition.system
    ]
    rest: dict[str, Any] = {"mode": "server", "security": SECURITY, "resource": resources}
    if system_ops:
        rest["operation"] = system_ops
    return {
        "resourceType": "CapabilityStatement",
        "instantiates": [TERMINOLOGY_SERVER],
        "status": "active",
        "date": datetime.now(timezone.utc).date().isoformat(),
        "kind": "instance",
        "software": {"name": "FHIR terminology workbench"},
        "implementation": {"description": "FHIR terminology workbench", "url": base_url},
        "fhirVersion": "4.0.1",
        "format": ["application/fhir+json", "json"],
        "rest": [rest],
    }


def terminology_capabilities(
    workbench: Any, operations: tuple[Operation, ...], base_url: str
) -> dict[str, Any]:
    """Every code system the server supports, with all its versions (resources and
    terminologies loaded from release files), and the expansion parameters it honours."""
    versions: dict[str, list[str]] = {}
    defaults: dict[str, str] = {}
    for resource in workbench.registry.all("CodeSystem"):
        url = resource.get("url")
        if not url or resource.get("content") == "supplement":
            continue
        versions.setdefault(url, []).append(str(resource.get("version") or ""))
    for url in versions:
        best = workbench.registry.get("CodeSystem", url)
        defaults[url] = str((best or {}).get("version") or "")
    for provider in workbench.terminology.providers():
        known = versions.setdefault(provider.url, [])
        if not known:
            defaults[provider.url] = str(provider.version or "")
        known.append(str(provider.version or ""))
    code_systems = []
    for url in sorted(versions):
        entry: dict[str, Any] = {"uri": url}
        listed = [v for v in dict.fromkeys(versions[url]) if v]
        if listed:
            entry["version"] = [{"code": v, "isDefault": v == defaults.get(url)} for v in listed]
        code_systems.append(entry)
    expand = next(op for op in operations if op.definition.id == "ValueSet-expand")
    return {
        "resourceType": "TerminologyCapabilities",
        "status": "active",
        "date": datetime.now(timezone.utc).date().isoformat(),
        "kind": "instance",
        "software": {"name": "FHIR terminology workbench"},
        "implementation": {"description": "FHIR terminology workbench", "url": base_url},
        "codeSystem": code_systems,
        "expansion": {
            "hierarchical": False,
            "paging": True,
            "incomplete": False,
            "parameter": [{"name": name} for name in sorted(expand.supported)],
        },
        "codeSearch": "all",
        "validateCode": {"translations": False},
        # $translate uses every fitting map when the client names none
        "translation": {"needsMap": False},
    }
