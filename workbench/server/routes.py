"""Routes generated from the OperationDefinitions, plus the resource interactions.

For every operation and every resource type in its definition, the ``system``, ``type`` and
``instance`` flags decide which paths exist; GET is refused (405) for ``affectsState``
operations. Catch-all operation routes answer 405 for an operation that exists at another
level and 404 for one that does not exist at all.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime
from functools import partial
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope

from workbench import jsonio, structure
from workbench.errors import (
    MethodNotAllowedError,
    UnknownOperationError,
)
from workbench.operations import Operation
from workbench.operations.caching import CACHE_ID
from workbench.operations.codec import build_output, parse_query, query_items
from workbench.registry import TERMINOLOGY_TYPES
from workbench.server import forked
from workbench.server import search as fhir_search
from workbench.server.answer_memo import AnswerMemo
from workbench.server.bounds import post_inputs
from workbench.server.call_headers import (
    OPERATION_HEADERS,
    cache_header,
    check_cost,
    names_cache,
    read_headers,
    strict_handling,
    too_costly_threshold,
    with_query,
)
from workbench.server.chain import Answer
from workbench.server.history_pages import instant, many_history, parse_history, resource_history
from workbench.server.offload import Offloader
from workbench.server.prefix import public_base
from workbench.server.responses import FHIR_JSON, fhir, outcome, parse_json, read_body
from workbench.server.store import ResourceStore, etag, etag_version, read_resource, version_of
from workbench.terminology.budget import WouldBlock
from workbench.terminology.client_caches import ClientCaches
from workbench.terminology.closure import ClosureTables

Endpoint = Callable[[Request], Awaitable[Response]]
# A write body from this size on is parsed and checked in a forked child (``resource_body``).
LARGE_BODY = 256 * 1024
WRITE_NICE = 5


def _pretty(request: Request) -> bool:
    return request.query_params.get("_pretty") == "true"


class OperationRoutes:
    """Builds the operation endpoints of an app from ``OPERATIONS``."""

    def __init__(
        self,
        operations: tuple[Operation, ...],
        store: ResourceStore,
        max_body: int,
        offloader: Offloader | None = None,
        caches: ClientCaches | None = None,
        closures: ClosureTables | None = None,
    ) -> None:
        self.operations = operations
        self.store = store
        self.max_body = max_body
        self.offloader = offloader or Offloader()
        # calls in a client cache change it: they run in this process, never in a child
        self.in_process = Offloader(replace(self.offloader.limits, processes=False))
        self.caches = caches
        self.closures = closures
        capacity = self.offloader.limits.memo_bytes
        self.memo = AnswerMemo(capacity) if capacity > 0 else None

    def routes(self, base: str) -> list[Route]:
        """The router's operation routes: one per (operation, resource type) at instance
        level, then the catch-alls (404 for an unknown operation, 405 for one at another
        level). The system- and type-level paths are not routes: the request chain answers
        them (``exact_paths``), so that no path has two handlers."""
        out: list[Route] = []
        for op in self.operations:
            d = op.definition
            if d.instance:
                out += [
                    Route(
                        f"{base}/{rtype}/{{rid}}/${d.code}",
                        self._endpoint(op, rtype),
                        methods=["GET", "POST"],
                    )
                    for rtype in d.resource_types
                ]
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

    def exact_paths(self, base: str) -> dict[str, Answer]:
        """The system- and type-level operation paths, each with its answer: what the
        request chain serves without the router (instance-level paths, which carry an id,
        go through the router)."""
        out: dict[str, Answer] = {}
        for op in self.operations:
            d = op.definition
            if d.system:
                out.setdefault(f"{base}/${d.code}", partial(self.answer, op, None))
            for rtype in d.resource_types:
                if d.type:
                    out.setdefault(f"{base}/{rtype}/${d.code}", partial(self.answer, op, rtype))
        return out

    async def answer(
        self, op: Operation, rtype: str | None, scope: Scope, receive: Receive
    ) -> bytes:
        """Run ``op`` on the request and return the response body (FHIR JSON); a problem
        raises a WorkbenchError. A GET asked again while the content is unchanged gets the
        body of its first answer (``answer_memo``: the same request, the same headers that
        change an answer, no client cache)."""
        heads = read_headers(scope, OPERATION_HEADERS)
        memo = self.memo
        if (
            memo is None
            or not op.memo
            or scope["method"] not in ("GET", "HEAD")
            or heads[3] is not None  # X-Cache-Id
            or scope.get("path_params")  # an instance-level call
        ):
            return (await self.compute(op, rtype, scope, receive, heads))[0]
        key = (op.definition.code, rtype, scope["query_string"], *heads[:3])
        revision = self.store.workbench.terminology.revision()  # before the answer is made
        body = memo.get(key, revision)
        if body is None:
            body, inputs = await self.compute(op, rtype, scope, receive, heads)
            memo.put(key, body, revision, inputs)
        return body

    async def compute(
        self,
        op: Operation,
        rtype: str | None,
        scope: Scope,
        receive: Receive,
        heads: list[str | None],
    ) -> tuple[bytes, Mapping[str, Any]]:
        """The answer of ``answer`` made: its body, and the inputs it was made from
        (``heads``: the ``OPERATION_HEADERS`` sent)."""
        definition = op.definition
        limits = self.offloader.limits
        # the query string is read once, straight from the scope (no QueryParams)
        query = query_items(scope["query_string"])
        language, costly, preference = heads[:3]
        strict = strict_handling(preference)
        inputs, large, queried = await self.inputs(op, scope, receive, query, strict)
        received = time.monotonic()  # the deadline counts from here
        params = scope.get("path_params")
        rid = params.get("rid") if params else None
        resource = None
        if rid is not None and rtype:
            resource = await read_resource(self.store, rtype, rid)
        wb = self.store.workbench
        threshold = too_costly_threshold(costly)
        cache_id = cache_header(scope) if op.cached or op.with_caches else None
        caches, closures = self.caches, self.closures
        pretty = ("_pretty", "true") in query

        def respond() -> bytes:
            # the answer is serialised where the work ran: a child process sends bytes back
            given = inputs
            if large is not None:
                given = post_inputs(definition, large, limits, strict=strict)
                given = given if queried is None else with_query(queried, given)
            outputs = op.run(
                wb,
                given,
                resource,
                accept_language=language,
                caches=caches,
                cache_id=cache_id,
                closures=closures,
            )
            if threshold is not None and definition.code == "expand":
                check_cost(outputs, given, threshold)
            return jsonio.dumps(build_output(definition, outputs), pretty=pretty)

        offloader = self.offloader
        if (
            op.with_caches
            or op.with_closures
            or op.many
            or cache_id is not None
            or (op.cached and names_cache(large))
        ):
            offloader = self.in_process
        stored = self._in_database(op, cache_id, inputs, large)
        if op.blocking or large is not None or stored:
            body = await offloader.run(
                respond, blocking=op.blocking or stored, since=received, scan=large is not None
            )
            return body, inputs
        tried = offloader.trial(respond)  # a cheap call answers here, without a coroutine
        if not isinstance(tried, WouldBlock):
            return tried, inputs
        body = await offloader.elsewhere(respond, since=received, building=tried.building)
        return body, inputs

    async def inputs(
        self,
        op: Operation,
        scope: Scope,
        receive: Receive,
        query: list[tuple[str, str]],
        strict: bool,
    ) -> tuple[dict[str, Any], bytes | None, dict[str, Any] | None]:
        """The call's inputs; a body too large to decode on the event loop (decoded where
        the operation runs: the inputs are then empty); the query's inputs when they join
        a body's (``?mode=start`` of ``$cache-control``, decoded where it runs)."""
        definition = op.definition
        if scope["method"] == "GET":
            if definition.affects_state:
                raise MethodNotAllowedError(
                    f"${definition.code} changes state, so it cannot be invoked with GET"
                )
            return parse_query(definition, query, strict=strict), None, None
        raw = await read_body(scope, receive, self.max_body, empty_ok=True)
        large: bytes | None = None
        if raw is None:  # a POST without a body is the operation without inputs
            inputs = parse_query(definition, query, strict=strict)
        elif len(raw) <= self.offloader.limits.loop_body_bytes:
            inputs = post_inputs(definition, raw, self.offloader.limits, strict=strict)
        else:
            inputs, large = {}, raw
        queried: dict[str, Any] | None = None
        if op.with_caches and query and raw is not None:  # ``?mode=start`` with a body
            queried = parse_query(definition, query, strict=strict)
            inputs = with_query(queried, inputs)
        return inputs, large, queried

    def _in_database(
        self, op: Operation, cache_id: str | None, inputs: Mapping[str, Any], large: bytes | None
    ) -> bool:
        """Whether the call reads or writes the database (the closure tables, client caches
        shared through it): then it never runs on the event loop, not even its trial."""
        if op.with_closures:
            return self.closures is not None and self.closures.in_database
        if self.caches is None or self.caches.backing is None:
            return False
        named = cache_id is not None or CACHE_ID in inputs or names_cache(large)
        return op.with_caches or (op.cached and named)

    def _endpoint(self, op: Operation, rtype: str | None) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            body = await self.answer(op, rtype, request.scope, request.receive)
            return Response(body, media_type=FHIR_JSON)

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


def prefer(request: Request) -> dict[str, str]:
    """The ``Prefer`` header as a dict: ``return=minimal, handling=strict`` → two entries."""
    out = {}
    for part in request.headers.get("prefer", "").split(","):
        name, _, value = part.strip().partition("=")
        if name:
            out[name.strip().lower()] = value.strip().strip('"')
    return out


def not_modified(request: Request, resource: dict[str, Any]) -> bool:
    """A conditional read the client's copy answers (304): ``If-None-Match`` names the
    current version (``W/"3"``, ``"3"`` or ``*``), or, without it, ``If-Modified-Since`` is
    not before ``meta.lastUpdated`` (RFC 9110 13.1.2/13.1.3)."""
    tags = request.headers.get("if-none-match")
    if tags is not None:
        current = version_of(resource)
        return any(
            tag.strip() == "*" or etag_version(tag.strip()) == current for tag in tags.split(",")
        )
    since = request.headers.get("if-modified-since")
    updated = (resource.get("meta") or {}).get("lastUpdated")
    if since is None or not updated:
        return False
    changed = instant(str(updated))
    try:
        asked = parsedate_to_datetime(since)
    except (TypeError, ValueError):
        return False  # an unreadable date is ignored, as RFC 9110 says
    if asked.tzinfo is None or changed is None:
        return False
    return changed.replace(microsecond=0) <= asked


def http_date(instant: Any) -> str | None:
    """A FHIR instant as an HTTP-date (``Tue, 01 Oct 2024 12:00:00 GMT``), or None."""
    try:
        when = datetime.fromisoformat(str(instant).replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return format_datetime(when.astimezone(timezone.utc), usegmt=True)


def resource_routes(base: str, store: ResourceStore, max_body: int) -> list[Route]:
    """read, vread, history, create, update, delete and search of the terminology types."""
    return ResourceRoutes(base, store, max_body).routes()


class ResourceRoutes:
    """The REST interactions' endpoints over one ResourceStore, under the FHIR base."""

    def __init__(self, base: str, store: ResourceStore, max_body: int) -> None:
        self.base = base
        self.store = store
        self.max_body = max_body

    async def resource_body(self, rtype: str, request: Request) -> dict[str, Any]:
        """The body of a create or update, parsed and checked (``ResourceStore.checked``)
        off the event loop: in a worker thread, or for a large body (an import of a big code
        system: seconds of checks) in a forked child (``forked.py``), so that it does not
        hold this process's interpreter lock while cheap requests wait."""
        data = await read_body(request.scope, request.receive, self.max_body)
        assert data is not None  # not empty_ok

        def check() -> dict[str, Any]:
            return self.store.checked(rtype, parse_json(data, exact_decimals=True))

        if len(data) >= LARGE_BODY and forked.available():
            return await run_in_threadpool(forked.run_forked, check, nice=WRITE_NICE)
        return await run_in_threadpool(check)

    def root_of(self, request: Request) -> str:
        """The FHIR base URL the client sees (prefix and proxy included)."""
        return public_base(request, self.base)

    async def search_or_create(self, request: Request) -> Response:
        rtype = request.path_params["rtype"]
        if rtype == "_history":
            raise MethodNotAllowedError(f"A history takes GET, not {request.method}")
        root = self.root_of(request)
        if request.method == "GET":
            # every resource of the type is tested: not on the event loop
            bundle = await run_in_threadpool(
                partial(
                    self.store.search,
                    rtype,
                    request.query_params.multi_items(),
                    type_url=f"{root}/{rtype}",
                    strict=prefer(request).get("handling") == "strict",
                )
            )
            return fhir(bundle, pretty=_pretty(request))
        self.store.check_type(rtype)
        resource = await self.resource_body(rtype, request)
        condition = request.headers.get("if-none-exist")
        if condition is None and any(
            not name.startswith(("_format", "_pretty")) for name in request.query_params
        ):
            # POST {type}?{search}: the criteria in the query, as clients such as fhirpy send
            condition = request.url.query
        # fsync and index updates of a large body take a while: not on the event loop
        stored, created = await run_in_threadpool(
            partial(self.store.create, rtype, resource, condition, prechecked=True)
        )
        return _written(request, stored, 201 if created else 200, root)

    async def instance(self, request: Request) -> Response:
        rtype, rid = request.path_params["rtype"], request.path_params["rid"]
        if rid.startswith("$"):
            raise MethodNotAllowedError(
                f"Operations take GET or POST, not {request.method} ({rtype}/{rid})"
            )
        if rid == "_history":
            raise MethodNotAllowedError(f"A history takes GET, not {request.method}")
        root = self.root_of(request)
        if request.method in ("GET", "HEAD"):
            resource = await read_resource(self.store, rtype, rid)
            shaped = _shaped(request, resource)  # (a malformed _summary is refused first)
            if not_modified(request, resource):
                return _resource_response(request, resource, 304, root, body=False)
            return _resource_response(request, shaped, 200, root)
        if request.method == "DELETE":
            await run_in_threadpool(self.store.delete, rtype, rid, request.headers.get("if-match"))
            return Response(status_code=204)
        self.store.check_type(rtype)
        self.store.check_id(rid)
        resource = await self.resource_body(rtype, request)
        if_match = request.headers.get("if-match")
        stored, created = await run_in_threadpool(
            partial(self.store.update, rtype, rid, resource, if_match, prechecked=True)
        )
        return _written(request, stored, 201 if created else 200, root)

    async def history(self, request: Request) -> Response:
        rtype, rid = request.path_params["rtype"], request.path_params["rid"]
        versions = await run_in_threadpool(self.store.versions, rtype, rid)
        bundle = resource_history(versions, self.root_of(request), rtype, rid)
        return fhir(bundle, pretty=_pretty(request))

    async def many_histories(self, request: Request) -> Response:
        rtype = request.path_params.get("rtype")
        root = self.root_of(request)
        query = parse_history(
            request.query_params.multi_items(),
            strict=prefer(request).get("handling") == "strict",
        )
        rtypes = TERMINOLOGY_TYPES if rtype is None else (rtype,)
        url = f"{root}/_history" if rtype is None else f"{root}/{rtype}/_history"
        bundle = await run_in_threadpool(
            lambda: many_history(self.store.histories(rtypes), query, root, url)
        )
        return fhir(bundle, pretty=_pretty(request))

    async def vread(self, request: Request) -> Response:
        rtype, rid = request.path_params["rtype"], request.path_params["rid"]
        resource = await run_in_threadpool(self.store.vread, rtype, rid, request.path_params["vid"])
        return _resource_response(request, _shaped(request, resource), 200, self.root_of(request))

    def routes(self) -> list[Route]:
        """The routes, under the FHIR base."""
        base = self.base
        return [
            Route(f"{base}/_history", self.many_histories, methods=["GET"]),
            Route(f"{base}/{{rtype}}/_history", self.many_histories, methods=["GET"]),
            Route(f"{base}/{{rtype}}", self.search_or_create, methods=["GET", "POST"]),
            Route(f"{base}/{{rtype}}/{{rid}}", self.instance, methods=["GET", "PUT", "DELETE"]),
            Route(f"{base}/{{rtype}}/{{rid}}/_history", self.history, methods=["GET"]),
            Route(f"{base}/{{rtype}}/{{rid}}/_history/{{vid}}", self.vread, methods=["GET"]),
        ]


def _shaped(request: Request, resource: dict[str, Any]) -> dict[str, Any]:
    """``_summary`` and ``_elements`` on a read."""
    summary = request.query_params.get("_summary")
    elements = request.query_params.get("_elements")
    if summary is None and elements is None:
        return resource
    query = fhir_search.parse(
        resource["resourceType"],
        [(k, v) for k, v in request.query_params.multi_items() if k in ("_summary", "_elements")],
    )
    return fhir_search.shape(resource, query.summary, query.elements)


def _written(request: Request, resource: dict[str, Any], status: int, root: str) -> Response:
    """The answer to a create or update, as ``Prefer: return=`` asks (representation by
    default, ``minimal`` for headers only, ``OperationOutcome`` for an outcome)."""
    wanted = prefer(request).get("return", "representation")
    if wanted == "minimal":
        return _resource_response(request, resource, status, root, body=False, written=True)
    if wanted.lower() == "operationoutcome":
        rtype, rid = resource["resourceType"], resource["id"]
        what = {201: "created", 200: "updated"}[status]
        if status == 200 and request.method == "POST":
            what = "already there (If-None-Exist matched it); nothing was created"
        text = f"{rtype}/{rid} {what} (version {version_of(resource)})"
        issue = {"severity": "information", "code": "informational", "details": {"text": text}}
        gaps = [  # what was stored although R4 requires it (issue 22, e2)
            {
                "severity": "warning",
                "code": "structure",
                "details": {"text": gap},
                "expression": [where],
                "location": [where],
            }
            for where, gap in structure.tolerated_gaps(resource)
        ]
        outcome_body = {"resourceType": "OperationOutcome", "issue": [issue, *gaps]}
        return _resource_response(
            request, resource, status, root, content=outcome_body, written=True
        )
    return _resource_response(request, resource, status, root, written=True)


def _resource_response(
    request: Request,
    resource: dict[str, Any],
    status: int,
    root: str,
    *,
    body: bool = True,
    content: dict[str, Any] | None = None,
    written: bool = False,
) -> Response:
    """A resource (or its headers alone): ETag, Last-Modified; after a write the version's
    URL (with the mount or proxy prefix in ``root``) as Content-Location, and as Location
    when it was created."""
    rtype, rid = resource["resourceType"], resource["id"]
    headers = {"ETag": etag(resource)}
    modified = http_date((resource.get("meta") or {}).get("lastUpdated"))
    if modified:
        headers["Last-Modified"] = modified
    version_url = f"{root}/{rtype}/{rid}/_history/{version_of(resource)}"
    if written:
        headers["Content-Location"] = version_url
    if status == 201:
        headers["Location"] = version_url
    if not body:
        return Response(status_code=status, headers=headers)
    return fhir(content or resource, status, headers, pretty=_pretty(request))


def not_found(request: Request) -> Response:
    """Fallback for any other path."""
    return outcome(
        "not-found",
        f"No such endpoint: {request.method} {request.url.path}",
        status=404,
        msg_id="WB-HTTP-404",
    )
