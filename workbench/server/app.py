"""The app factory: a FHIR R4 terminology server over one Workbench's in-memory data.

``create_app`` returns a FastAPI application: mount it in your own
(``outer.mount("/tx", create_app(...))``) or serve it alone. Every request takes one way
through it (``chain.RequestChain``): one chain of rules (token, format, other processes'
writes), then one handler, the operation of an exact system- or type-level path or else the
router, whose routes are plain Starlette routes generated from the OperationDefinitions
(FastAPI's routing and pydantic are not on the way of a request). Errors are
OperationOutcomes, never ``{"detail": …}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from fastapi import FastAPI
from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware
from fastapi.telemetry import TelemetryConfig
from starlette.middleware.errors import ServerErrorMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from workbench.errors import InvalidRequestError, MethodNotAllowedError, ResourceNotFoundError
from workbench.operations import OPERATIONS
from workbench.server import request_ids
from workbench.server.auth import TokenRule
from workbench.server.capability import (
    OPERATION_DEFINITION_SEARCH as DEFINITION_SEARCH,
)
from workbench.server.capability import (
    capability_statement,
    search_definitions,
    terminology_capabilities,
)
from workbench.server.chain import RequestChain
from workbench.server.closing import Closing
from workbench.server.database import open_caches, open_closures
from workbench.server.docs import docs_routes, open_paths
from workbench.server.errors import unexpected_error
from workbench.server.negotiation import FormatRule
from workbench.server.offload import Limits, Offloader
from workbench.server.openapi import openapi_document, with_server
from workbench.server.openapi_links import AllowedMethods
from workbench.server.prefix import public_base
from workbench.server.r5 import VersionAdapter
from workbench.server.request_ids import request_id
from workbench.server.responses import fhir
from workbench.server.routes import OperationRoutes, resource_routes
from workbench.server.store import ResourceStore
from workbench.server.sync import WriteSync
from workbench.terminology.client_caches import CacheLimits, ClientCaches

if TYPE_CHECKING:
    from workbench.service import ServiceHolder, TerminologyService

DEFAULT_BASE = "/fhir/R4"
DEFAULT_MAX_BODY = 10 * 1024 * 1024
TITLE = "FHIR terminology workbench"
VERSION = "0.1.0"
# FastAPI's own OpenTelemetry checks cost microseconds on every request; an app that mounts
# this one instruments the whole request itself.
NO_TELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}
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


def conformance_routes(
    workbench: TerminologyService, base: str, cache_idle: float = CacheLimits.idle_seconds
) -> list[Route]:
    """``{base}/metadata`` (CapabilityStatement, TerminologyCapabilities, which document the
    client caches' idle timeout ``cache_idle``) and the OperationDefinitions (search and
    read)."""
    definitions = {op.definition.id: op.definition.resource for op in OPERATIONS}

    async def metadata(request: Request) -> Response:
        read_only(request)
        root = public_base(request, base)
        mode = request.query_params.get("mode", "full")
        if mode == "terminology":
            return fhir(terminology_capabilities(workbench, OPERATIONS, root, cache_idle))
        if mode not in ("full", "normative"):
            raise InvalidRequestError(
                f"Parameter 'mode' must be full, normative or terminology, not '{mode}'"
            )
        return fhir(capability_statement(OPERATIONS, root, cache_idle))

    async def operation_definitions(request: Request) -> Response:
        read_only(request)
        root = public_base(request, base)
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

    return [
        Route(f"{base}/metadata", metadata, methods=ALL_METHODS),
        Route(f"{base}/OperationDefinition", operation_definitions, methods=ALL_METHODS),
        Route(f"{base}/OperationDefinition/{{rid}}", operation_definition, methods=ALL_METHODS),
    ]


class TerminologyApp(FastAPI):
    """A FastAPI app whose requests all take one way (``chain.RequestChain``) and whose
    OpenAPI document is the one generated from the OperationDefinitions (``openapi.py``):
    its routes are plain Starlette routes, which FastAPI's own generator leaves out.

    Every response carries an ``X-Request-Id`` (``request_ids``). The chain is the whole
    stack; middleware added with ``app.add_middleware`` wraps it (under FastAPI's outermost
    layer, whose 500 is an OperationOutcome too) and so sees every request."""

    generated: dict[str, Any] | None = None
    chain: RequestChain | None = None
    versions: VersionAdapter | None = None  # R5 (issue 49, point 5): server/r5.py

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        rid = request_id(scope)  # (every response, errors too, carries it: request_ids)
        token = request_ids.CURRENT.set(rid.decode("ascii"))
        try:
            send = request_ids.stamped(send, rid)
            # R5 (issue 49, point 5): a request on the R5 base or naming a fhirVersion is
            # converted to R4, served as any request (the chain, all its rules), and its
            # answer converted back (server/r5.py)
            versions = self.versions
            if versions is not None and versions.claims(scope):
                await versions.serve(scope, receive, send, super().__call__)
                return
            await super().__call__(scope, receive, send)
        finally:
            request_ids.CURRENT.reset(token)

    def build_middleware_stack(self) -> ASGIApp:
        """The request chain, wrapped in the middleware a user added (if any)."""
        if self.chain is None:
            return super().build_middleware_stack()
        app: ASGIApp = self.chain
        if not self.user_middleware:
            return app
        for factory, args, kwargs in reversed(self.user_middleware):
            app = factory(app, *args, **kwargs)
        return ServerErrorMiddleware(app, handler=unexpected_error)

    def openapi(self) -> dict[str, Any]:
        """The generated document (servers: the FHIR base), else FastAPI's own."""
        return self.generated if self.generated is not None else super().openapi()


def create_app(
    workbench: TerminologyService | ServiceHolder,
    *,
    token: str,
    base: str = DEFAULT_BASE,
    data_dir: str | Path | None = None,
    database: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    limits: Limits | None = None,
    telemetry: TelemetryConfig | None = None,
    r5_base: str | bool = True,
) -> FastAPI:
    """Build the server app. It serves ``workbench`` itself (a ``Workbench``, or the
    service one holds), so changes show both ways.

    ``data_dir`` persists writes (and is loaded now), unless ``database`` (a
    ``postgresql://`` URL, shared by several servers) holds them; ``max_body`` limits
    request bodies;
    ``limits`` bounds the work of one operation (steps, seconds; see ``offload.Limits``);
    ``telemetry`` is FastAPI's OpenTelemetry configuration (off by default).
    ``r5_base`` is where the same data is served in R5 (``server/r5.py``): True (the
    default) puts it beside ``base`` (``/fhir/R4`` -> ``/fhir/R5``; any other base ->
    ``{base}/R5``, see ``r5.r5_base_for``), a path puts it there, False serves no R5 base
    (requests naming ``fhirVersion=5.0`` on ``base`` are still answered in R5).
    The app serves ``{base}/openapi.json`` and ``{base}/docs`` without a token.
    """
    base = "/" + base.strip("/") if base.strip("/") else ""
    store = ResourceStore(workbench, data_dir, database=database)
    offloader = Offloader(limits)
    shared = open_caches(store.data_dir, database)
    caches = ClientCaches(offloader.limits.cache_limits(), shared)
    closures = open_closures(store.data_dir, database)
    operation_routes = OperationRoutes(OPERATIONS, store, max_body, offloader, caches, closures)
    document = openapi_document(OPERATIONS, title=TITLE, version=VERSION)
    allowed_methods = AllowedMethods(document, base)
    routes = [
        *docs_routes(base, document, TITLE),
        *conformance_routes(store.workbench, base, caches.limits.idle_seconds),
        *operation_routes.routes(base),
        *resource_routes(base, store, max_body),
    ]
    free, free_prefix = open_paths(base)
    closing = Closing(store, shared, closures)  # at shutdown: connections, listening thread
    app = TerminologyApp(
        title=TITLE,
        version=VERSION,
        routes=routes,
        openapi_url=None,  # served under the FHIR base by docs_routes, with the prefix
        docs_url=None,
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
        telemetry=NO_TELEMETRY if telemetry is None else telemetry,
        lifespan=closing.lifespan,
    )
    app.generated = with_server(document, base)
    # the router's FastAPI routes (a user may add some) need FastAPI's exit stack
    app.chain = RequestChain(
        AsyncExitStackMiddleware(app.router),
        token=TokenRule(token=token, open_paths=free, open_prefix=free_prefix),
        formats=FormatRule(),
        writes=WriteSync(store) if store.db.shared else None,
        answers=operation_routes.exact_paths(base),
        allowed=allowed_methods,
    )
    app.versions = VersionAdapter.beside(base, r5_base, max_body)  # R5 (issue 49, point 5)
    app.state.workbench = workbench
    app.state.store = store
    app.state.base = base
    app.state.r5_base = app.versions.r5_base
    app.state.caches = caches
    app.state.closures = closures
    app.state.allowed_methods = allowed_methods
    app.state.closing = closing
    return app
