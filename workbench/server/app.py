"""The app factory: a FHIR R4 terminology server over one Workbench's in-memory data."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from workbench.errors import InvalidRequestError, MethodNotAllowedError, ResourceNotFoundError
from workbench.operations import OPERATIONS
from workbench.server.auth import BearerAuth
from workbench.server.capability import (
    OPERATION_DEFINITION_SEARCH as DEFINITION_SEARCH,
)
from workbench.server.capability import (
    capability_statement,
    search_definitions,
    terminology_capabilities,
)
from workbench.server.dispatch import OperationDispatch
from workbench.server.errors import HANDLERS
from workbench.server.negotiation import FormatNegotiation
from workbench.server.offload import Limits, Offloader
from workbench.server.protocol import Guard
from workbench.server.responses import fhir
from workbench.server.routes import OperationRoutes, resource_routes
from workbench.server.store import ResourceStore

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFAULT_BASE = "/fhir/R4"
DEFAULT_MAX_BODY = 10 * 1024 * 1024
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]


def applied_url(type_url: str, request: Request) -> str:
    """The search's URL with only the parameters an OperationDefinition search applies."""
    kept = [(k, v) for k, v in request.query_params.multi_items() if k in DEFINITION_SEARCH]
    return type_url + ("?" + urlencode(kept, safe=":/,|") if kept else "")


def read_only(request: Request) -> None:
    """Refuse anything but GET (405) on read-only endpoints."""
    if request.method not in ("GET", "HEAD"):
        raise MethodNotAllowedError(
            f"{request.method} is not allowed on {request.url.path}: it is read-only (use GET)"
        )


def create_app(
    workbench: TerminologyService,
    *,
    token: str,
    base: str = DEFAULT_BASE,
    data_dir: str | Path | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    limits: Limits | None = None,
) -> Starlette:
    """Build the server app. It serves ``workbench`` itself, so changes show both ways.

    ``data_dir`` persists writes (and is loaded now); ``max_body`` limits request bodies;
    ``limits`` bounds the work of one operation (steps, seconds; see ``offload.Limits``).
    """
    base = "/" + base.strip("/") if base.strip("/") else ""
    store = ResourceStore(workbench, data_dir)
    definitions = {op.definition.id: op.definition.resource for op in OPERATIONS}

    async def metadata(request: Request) -> Response:
        read_only(request)
        root = str(request.base_url).rstrip("/") + base
        mode = request.query_params.get("mode", "full")
        if mode == "terminology":
            return fhir(terminology_capabilities(workbench, OPERATIONS, root))
        if mode not in ("full", "normative"):
            raise InvalidRequestError(
                f"Parameter 'mode' must be full, normative or terminology, not '{mode}'"
            )
        return fhir(capability_statement(OPERATIONS, root))

    async def operation_definitions(request: Request) -> Response:
        read_only(request)
        root = str(request.base_url).rstrip("/") + base
        found = search_definitions(list(definitions.values()), request.query_params.multi_items())
        entries = [
            {
                "fullUrl": f"{root}/OperationDefinition/{d['id']}",
                "resource": d,
                "search": {"mode": "match"},
            }
            for d in found
        ]
        self_url = applied_url(f"{root}/OperationDefinition", request)
        bundle: dict[str, Any] = {
            "resourceType": "Bundle",
            "type": "searchset",
            "total": len(entries),
            "link": [{"relation": "self", "url": self_url}],
        }
        if entries:
            bundle["entry"] = entries
        return fhir(bundle)

    async def operation_definition(request: Request) -> Response:
        read_only(request)
        found = definitions.get(request.path_params["rid"])
        if found is None:
            raise ResourceNotFoundError(
                f"OperationDefinition/{request.path_params['rid']} not found"
            )
        return fhir(found)

    operation_routes = OperationRoutes(OPERATIONS, store, max_body, Offloader(limits))
    routes = [
        Route(f"{base}/metadata", metadata, methods=ALL_METHODS),
        Route(f"{base}/OperationDefinition", operation_definitions, methods=ALL_METHODS),
        Route(f"{base}/OperationDefinition/{{rid}}", operation_definition, methods=ALL_METHODS),
        *operation_routes.routes(base),
        *resource_routes(base, store, max_body),
    ]
    # Plain Starlette: FastAPI's extra layers (telemetry, body limit, exit stack) cost on
    # every request and nothing here uses them (no dependencies, no Pydantic models).
    # Middleware, outermost first: whatever escapes becomes a 500 OperationOutcome (Guard),
    # then the token, then the format negotiation, then the operation calls on exact paths.
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(Guard),
            Middleware(BearerAuth, token=token, base=base),
            Middleware(FormatNegotiation),
            Middleware(OperationDispatch, answers=operation_routes.exact_paths(base)),
        ],
        exception_handlers=HANDLERS,
    )
    app.state.workbench = workbench
    app.state.store = store
    app.state.base = base
    return app
