"""What the server says about itself: the CapabilityStatement at ``GET {base}/metadata`` and
the TerminologyCapabilities at ``GET {base}/metadata?mode=terminology``."""

from __future__ import annotations

from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from workbench.operations import Operation
from workbench.registry import TERMINOLOGY_TYPES
from workbench.server.search import COMMON_PARAMETERS, MODIFIERS, SEARCH_PARAMETERS
from workbench.terminology.cache_ends import IDLE_OPTION, duration_text
from workbench.terminology.client_caches import CacheLimits

TERMINOLOGY_SERVER = "http://hl7.org/fhir/CapabilityStatement/terminology-server"
SECURITY = {
    "description": "Send Authorization: Bearer <token> on every request but GET /metadata",
    "service": [{"text": "Bearer token (RFC 6750)"}],
}

FEATURE = "http://hl7.org/fhir/uv/application-feature/StructureDefinition/feature"
#: The version of HL7's terminology test cases (fhir-tx-ecosystem-ig) this server answers
#: to; from 1.7.8 on, the HL7 validator sends its codings in $batch-validate-code.
TX_TEST_VERSION = "1.7.8"
TX_TEST_FEATURE = "http://hl7.org/fhir/uv/tx-tests/FeatureDefinition/test-version"
CODE_SYSTEM_AS_PARAMETER = (
    "http://hl7.org/fhir/uv/tx-ecosystem/FeatureDefinition/CodeSystemAsParameter"
)


def cache_documentation(idle_seconds: float) -> str:
    """What ``/metadata`` says of the client caches: the idle timeout, what keeps a cache
    alive, what ``$cache-control?mode=check`` answers."""
    return (
        f"Client caches (X-Cache-Id): a cache unused for {duration_text(idle_seconds)} "
        f"({int(idle_seconds)} seconds: the idle timeout, {IDLE_OPTION}) is dropped; any "
        "request naming it, $cache-control?mode=check included, keeps it alive. mode=check "
        "answers valid, sealed, resource-count, idle and timeout (seconds); a cache that is "
        "gone answers valid=false with an outcome that says why (closed, expired, cleared, "
        "never known), and any other request naming it 404 cache-id-unknown with that outcome."
    )


def software_version() -> str:
    """The installed workbench's version (the same in the CapabilityStatement and the
    TerminologyCapabilities, which the HL7 validator compares)."""
    try:
        return metadata.version("workbench")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a bare checkout
        return "0.0.0"


def software() -> dict[str, str]:
    """``software`` of both statements."""
    return {"name": "FHIR terminology workbench", "version": software_version()}


def features() -> list[dict[str, Any]]:
    """The application-feature extensions the HL7 validator reads before it uses a server:
    the tx test-cases version it conforms to, and that CodeSystems may be sent as
    ``tx-resource`` parameters."""

    def feature(definition: str, value: dict[str, Any]) -> dict[str, Any]:
        return {
            "url": FEATURE,
            "extension": [
                {"url": "definition", "valueCanonical": definition},
                {"url": "value", **value},
            ],
        }

    return [
        feature(TX_TEST_FEATURE, {"valueCode": TX_TEST_VERSION}),
        feature(CODE_SYSTEM_AS_PARAMETER, {"valueBoolean": True}),
    ]


SEARCH_PARAMETER_BASE = "http://hl7.org/fhir/SearchParameter/"
INTERACTIONS = (
    "read",
    "vread",
    "history-instance",
    "history-type",
    "create",
    "update",
    "delete",
    "search-type",
)
# GET {base}/OperationDefinition searches the operations this server defines by these.
OPERATION_DEFINITION_SEARCH = {"_id": "token", "url": "uri", "name": "string", "code": "token"}


def _search_params(rtype: str) -> list[dict[str, Any]]:
    out = []
    for param in SEARCH_PARAMETERS[rtype].values():
        modifiers = ", ".join(":" + m for m in MODIFIERS[param.type])
        entry = {
            "name": param.name,
            "type": param.type,
            "documentation": f"{param.documentation}; modifiers {modifiers}",
        }
        if param.name in COMMON_PARAMETERS and param.name != "_id":
            entry["definition"] = f"{SEARCH_PARAMETER_BASE}conformance-{param.name}"
        elif param.name != "_id":
            entry["definition"] = f"{SEARCH_PARAMETER_BASE}{rtype}-{param.name}"
        out.append(entry)
    return out


def search_definitions(
    definitions: list[dict[str, Any]], params: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """The OperationDefinitions matching a search by ``_id``, ``url``, ``name`` (prefix,
    case-insensitive) or ``code``; other parameters are ignored."""
    fields = {"_id": "id", "url": "url", "name": "name", "code": "code"}
    found = definitions
    for name, value in params:
        if name not in fields:
            continue
        options = value.split(",")
        key = fields[name]
        if name == "name":
            found = [
                d
                for d in found
                if any(str(d.get(key, "")).casefold().startswith(o.casefold()) for o in options)
            ]
        else:
            found = [
                d
                for d in found
                if str(d.get(key, "")).lstrip("$") in options or str(d.get(key, "")) in options
            ]
    return found


def capability_statement(
    operations: tuple[Operation, ...],
    base_url: str,
    cache_idle: float = CacheLimits.idle_seconds,
) -> dict[str, Any]:
    """Describe the resources, interactions and operations this server offers
    (``cache_idle``: the client caches' idle timeout, in seconds)."""
    resources = []
    for rtype in TERMINOLOGY_TYPES:
        ops = [
            {"name": op.definition.code, "definition": op.definition.url}
            for op in operations
            if rtype in op.definition.resource_types
            and (op.definition.type or op.definition.instance)  # ($closure: system level)
        ]
        resources.append(
            {
                "type": rtype,
                "interaction": [{"code": c} for c in INTERACTIONS],
                "versioning": "versioned-update",
                "readHistory": True,
                "updateCreate": True,
                "conditionalCreate": True,
                "conditionalUpdate": False,
                "conditionalDelete": "not-supported",
                "searchParam": _search_params(rtype),
                "operation": ops,
            }
        )
    resources.append(
        {
            "type": "OperationDefinition",
            "interaction": [{"code": "read"}, {"code": "search-type"}],
            "searchParam": [{"name": n, "type": t} for n, t in OPERATION_DEFINITION_SEARCH.items()],
        }
    )
    system_ops = [
        {"name": op.definition.code, "definition": op.definition.url}
        for op in operations
        if op.definition.system
    ]
    for op in system_ops:
        if op["name"] == "cache-control":
            op["documentation"] = cache_documentation(cache_idle)
    rest: dict[str, Any] = {
        "mode": "server",
        "documentation": f"OpenAPI description: {base_url}/openapi.json; interactive "
        f"documentation (Swagger UI, no token needed to open it): {base_url}/docs",
        "security": SECURITY,
        "resource": resources,
        "interaction": [{"code": "history-system"}],
    }
    if system_ops:
        rest["operation"] = system_ops
    return {
        "resourceType": "CapabilityStatement",
        "extension": features(),
        "version": software_version(),
        "instantiates": [TERMINOLOGY_SERVER],
        "status": "active",
        "date": datetime.now(timezone.utc).date().isoformat(),
        "kind": "instance",
        "software": software(),
        "implementation": {"description": "FHIR terminology workbench", "url": base_url},
        "fhirVersion": "4.0.1",
        "format": ["application/fhir+json", "json"],
        "rest": [rest],
    }


def terminology_capabilities(
    workbench: Any,
    operations: tuple[Operation, ...],
    base_url: str,
    cache_idle: float = CacheLimits.idle_seconds,
) -> dict[str, Any]:
    """Every code system the server supports, with all its versions (resources and
    terminologies loaded from release files), and the expansion parameters it honours
    (``cache-id`` documented with the client caches' idle timeout, ``cache_idle``)."""
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
        "software": software(),
        "implementation": {"description": "FHIR terminology workbench", "url": base_url},
        "codeSystem": code_systems,
        "expansion": {
            "hierarchical": False,
            "paging": True,
            "incomplete": False,
            "parameter": [
                {"name": name, "documentation": cache_documentation(cache_idle)}
                if name == "cache-id"
                else {"name": name}
                for name in sorted(expand.supported)
            ],
        },
        "codeSearch": "all",
        "validateCode": {"translations": False},
        # $translate uses every fitting map when the client names none
        "translation": {"needsMap": False},
    }
