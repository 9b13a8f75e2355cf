"""Routes generated from the OperationDefinitions, plus the resource interactions.

For every operation and every resource type in its definition, the ``system``, ``type`` and
``instance`` flags decide which paths exist; GET is refused (405) for ``affectsState``
operations. Catch-all operation routes answer 405 for an operation that exists at another
level and 404 for one that does not exist at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from workbench.errors import MethodNotAllowedError, UnknownOperationError
from workbench.operations import Operation
from workbench.operations.codec import build_output, parse_parameters, parse_query, query_items
from workbench.server.responses import fhir, outcome, read_json
from workbench.server.store import ResourceStore, etag

Endpoint = Callable[[Request], Awaitable[Response]]


def _pretty(request: Request) -> bool:
    return request.query_params.get("_pretty") == "true"


def _header(scope: Mapping[str, Any], name: bytes) -> str | None:
    """A request header's value (latin-1, as Starlette reads it), or None."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class OperationRoutes:
    """Builds the operation endpoints of an app from ``OPERATIONS``."""

    def __init__(
        self, operations: tuple[Operation, ...], store: ResourceStore, max_body: int
    ) -> None:
        self.operations = operations
        self.store = store
        self.max_body = max_body

    def routes(self, base: str) -> list[Route]:
        """One route per (operation, resource type, level), then the catch-alls."""
        out: list[Route] = []
        for op in self.operations:
            d = op.definition
            if d.system:
                out.append(
                    Route(f"{base}/${d.code}", self._endpoint(op, None), methods=["GET", "POST"])
                )
            for rtype in d.resource_types:
                if d.type:
                    out.append(
                        Route(
                            f"{base}/{rtype}/${d.code}",
                            self._endpoint(op, rtype),
                            methods=["GET", "POST"],
                        )
                    )
                if d.instance:
                    out.append(
                        Route(
                            f"{base}/{rtype}/{{rid}}/${d.code}",
                            self._endpoint(op, rtype),
                            methods=["GET", "POST"],
                        )
                    )
        out += [
            Route(f"{base}/${{name}}", self._fallback("system"), methods=["GET", "POST"]),
            Route(f"{base}/{{rtype}}/${{name}}", self._fallback("type"), methods=["GET", "POST"]),
            Route(
                f"{base}/{{rtype}}/{{rid}}/${{name}}",
                self._fallback("instance"),
                methods=["GET", "POST"],
            ),
        ]
        return out

    def _endpoint(self, op: Operation, rtype: str | None) -> Endpoint:
        definition = op.definition

        async def endpoint(request: Request) -> Response:
            scope = request.scope
            # the query string is read once, straight from the scope (no QueryParams)
            query = query_items(scope["query_string"])
            if scope["method"] == "GET":
                if definition.affects_state:
                    raise MethodNotAllowedError(
                        f"${definition.code} changes state, so it cannot be invoked with GET"
                    )
                inputs = parse_query(definition, query)
            else:
                inputs = parse_parameters(definition, await read_json(request, self.max_body))
            rid = scope["path_params"].get("rid")
            resource = self.store.read(rtype, rid) if rid is not None and rtype else None
            wb = self.store.workbench
            language = _header(scope, b"accept-language")
            if op.blocking:
                outputs = await run_in_threadpool(
                    partial(op.run, accept_language=language), wb, inputs, resource
                )
            else:
                outputs = op.run(wb, inputs, resource, accept_language=language)
            pretty = ("_pretty", "true") in query
            return fhir(build_output(definition, outputs), pretty=pretty)

        return endpoint

    def _fallback(self, level: str) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            name = request.path_params["name"]
            rtype = request.path_params.get("rtype")
            known = [
                op.definition
                for op in self.operations
                if op.definition.code == name
                and (rtype is None or rtype in op.definition.resource_types)
            ]
            if not known:
                where = f" on {rtype}" if rtype else ""
                raise UnknownOperationError(f"Unknown operation ${name}{where}")
            levels = sorted(
                {
                    lvl
                    for d in known
                    for lvl in ("system", "type", "instance")
                    if d.available_at(lvl)
                }
            )
            raise MethodNotAllowedError(
                f"${name} is not available at {level} level (only at {', '.join(levels)})"
            )

        return endpoint


def resource_routes(base: str, store: ResourceStore, max_body: int) -> list[Route]:
    """read, create, update, delete and search of ValueSet and CodeSystem."""

    async def search_or_create(request: Request) -> Response:
        rtype = request.path_params["rtype"]
        if request.method == "GET":
            strict = "handling=strict" in request.headers.get("prefer", "").replace(" ", "")
            root = str(request.base_url).rstrip("/") + base
            bundle = store.search(
                rtype,
                request.query_params.multi_items(),
                self_url=str(request.url),
                root=root,
                strict=strict,
            )
            return fhir(bundle, pretty=_pretty(request))
        body = await read_json(request, max_body, exact_decimals=True)
        created = store.create(rtype, body)
        return _resource_response(created, 201, base)

    async def instance(request: Request) -> Response:
        rtype, rid = request.path_params["rtype"], request.path_params["rid"]
        if rid.startswith("$"):
            raise MethodNotAllowedError(
                f"Operations take GET or POST, not {request.method} ({rtype}/{rid})"
            )
        if request.method == "GET":
            return _resource_response(store.read(rtype, rid), 200, base, _pretty(request))
        if request.method == "DELETE":
            store.delete(rtype, rid)
            return Response(status_code=204)
        body = await read_json(request, max_body, exact_decimals=True)
        stored, created = store.update(rtype, rid, body, request.headers.get("if-match"))
        return _resource_response(stored, 201 if created else 200, base)

    return [
        Route(f"{base}/{{rtype}}", search_or_create, methods=["GET", "POST"]),
        Route(f"{base}/{{rtype}}/{{rid}}", instance, methods=["GET", "PUT", "DELETE"]),
    ]


def _resource_response(
    resource: dict[str, Any], status: int, base: str, pretty: bool = False
) -> Response:
    rtype, rid = resource["resourceType"], resource["id"]
    headers = {"ETag": etag(resource)}
    meta = resource.get("meta") or {}
    if meta.get("lastUpdated"):
        headers["Last-Modified"] = str(meta["lastUpdated"])
    if status == 201:
        headers["Location"] = f"{base}/{rtype}/{rid}/_history/{meta.get('versionId', '1')}"
    return fhir(resource, status, headers, pretty=pretty)


def not_found(request: Request) -> Response:
    """Fallback for any other path."""
    return outcome(
        "not-found",
        f"No such endpoint: {request.method} {request.url.path}",
        status=404,
        msg_id="WB-HTTP-404",
    )
