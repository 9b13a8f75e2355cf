"""The app factory: a FHIR R4 terminology server over one Workbench's in-memory data.

``create_app`` returns a FastAPI application: mount it in your own
(``outer.mount("/tx", create_app(...))``) or serve it alone. Its routes are plain Starlette
routes generated from the OperationDefinitions; FastAPI's routing and pydantic are not on
the way of a request, and the operation calls at system and type level are answered by the
pure ASGI ``OperationDispatch`` before any router. Errors are OperationOutcomes, never
``{"detail": …}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from fastapi import FastAPI
from fastapi.telemetry import TelemetryConfig
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from workbench.errors import InvalidRequestError, MethodNotAllowedError, ResourceNotFoundError
from workbench.operations import OPERATIONS
from workbench.server import request_ids
from workbench.server.auth import BearerAuth
from workbench.server.capability import (
    OPERATION_DEFINITION_SEARCH as DEFINITION_SEARCH,
)
from workbench.server.capability import (
    capability_statement,
    search_definitions,
    terminology_capabilities,
)
from workbench.server.closing import Closing
from workbench.server.database import open_caches, open_closures
from workbench.server.dispatch import FastLane, OperationDispatch
from workbench.server.docs import docs_routes, open_paths
from workbench.server.errors import HANDLERS
from workbench.server.negotiation import FormatNegotiation
from workbench.server.offload import Limits, Offloader
from workbench.server.openapi import openapi_document, with_server
from workbench.server.openapi_links import AllowedMethods
from workbench.server.prefix import public_base
from workbench.server.protocol import Guard
from workbench.server.request_ids import request_id
from workbench.server.responses import fhir
from workbench.server.routes import OperationRoutes, resource_routes
from workbench.server.store import ResourceStore
from workbench.server.sync import WriteSync
from workbench.terminology.client_caches import CacheLimits, ClientCaches

if TYPE_CHECKING:
    from workbench.service import TerminologyService

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
    """A FastAPI app whose OpenAPI document is the one generated from the
    OperationDefinitions (``openapi.py``): its routes are plain Starlette routes, which
    FastAPI's own generator leaves out.

    GET and POST on the exact operation paths take the fast lane: the app's own layers
    (Guard, token, format, other processes' writes, the operation dispatch) without
    FastAPI's and Starlette's outer middleware (error page, telemetry, body limit), which
    these requests never need: their errors are OperationOutcomes from the Guard and the
    dispatch, and their bodies are limited by the operation's reader. Middleware added to
    the app later (``app.add_middleware``) closes the fast lane, so that it sees every
    request."""

    generated: dict[str, Any] | None = None
    fast_lane: FastLane | None = None
    fast_layers = 0  # len(user_middleware) when the fast lane was built

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        rid = request_id(scope)  # (every response, errors too, carries it: request_ids)
        token = request_ids.CURRENT.set(rid.decode("ascii"))
        try:
            send = request_ids.stamped(send, rid)
            lane = self.fast_lane
            if lane is not None and len(self.user_middleware) == self.fast_layers:
                answer = lane.answer_for(scope)
                if answer is not None:
                    await lane.serve(answer, scope, receive, send)
                    return
            await super().__call__(scope, receive, send)
        finally:
            request_ids.CURRENT.reset(token)

    def openapi(self) -> dict[str, Any]:
        """The generated document (servers: the FHIR base), else FastAPI's own."""
        return self.generated if self.generated is not None else super().openapi()


def fast_lane(middleware: list[Middleware], inner: ASGIApp) -> FastLane | None:
    """The app's own middleware around ``inner``, without FastAPI's outer layers, as one
    ``FastLane`` (None if they are not the app's usual ones)."""
    lane = inner
    for layer in reversed(middleware):
        factory, args, kwargs = layer
        lane = factory(lane, *args, **kwargs)
    fused = FastLane.over(lane)
    return fused if isinstance(fused, FastLane) else None


def create_app(
    workbench: TerminologyService,
    *,
    token: str,
    base: str = DEFAULT_BASE,
    data_dir: str | Path | None = None,
    database: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    limits: Limits | None = None,
    telemetry: TelemetryConfig | None = None,
) -> FastAPI:
    """Build the server app. It serves ``workbench`` itself, so changes show both ways.

    ``data_dir`` persists writes (and is loaded now), unless ``database`` (a
    ``postgresql://`` URL, shared by several servers) holds them; ``max_body`` limits
    request bodies;
    ``limits`` bounds the work of one operation (steps, seconds; see ``offload.Limits``);
    ``telemetry`` is FastAPI's OpenTelemetry configuration (off by default).
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
        *conformance_routes(workbench, base, caches.limits.idle_seconds),
        *operation_routes.routes(base),
        *resource_routes(base, store, max_body),
    ]
    free, free_prefix = open_paths(base)
    answers = operation_routes.exact_paths(base)
    # Middleware, outermost first: whatever escapes becomes a 500 OperationOutcome (Guard),
    # then the token, then the format negotiation, then (with a data folder, which other
    # processes may write) the writes of other processes, then the operation calls on exact
    # paths.
    synced = [Middleware(WriteSync, store=store)] if store.db.shared else []
    middleware = [
        Middleware(Guard),
        Middleware(BearerAuth, token=token, open_paths=free, open_prefix=free_prefix),
        Middleware(FormatNegotiation),
        *synced,
        Middleware(OperationDispatch, answers=answers, allowed=allowed_methods),
    ]
    closing = Closing(store, shared, closures)  # at shutdown: connections, listening thread
    app = TerminologyApp(
        title=TITLE,
        version=VERSION,
        routes=routes,
        middleware=middleware,
        exception_handlers=HANDLERS,
        openapi_url=None,  # served under the FHIR base by docs_routes, with the prefix
        docs_url=None,
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
        telemetry=NO_TELEMETRY if telemetry is None else telemetry,
        lifespan=closing.lifespan,
    )
    app.generated = with_server(document, base)
    app.fast_lane = fast_lane(middleware, app.router)
    app.fast_layers = len(app.user_middleware)
    app.state.workbench = workbench
    app.state.store = store
    app.state.base = base
    app.state.caches = caches
    app.state.closures = closures
    app.state.allowed_methods = allowed_methods
    app.state.closing = closing
    return app
