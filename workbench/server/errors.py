"""One rule for every failure: an OperationOutcome, never ``{"detail": …}``.

``reply_for`` turns whatever a handler raised into the reply the client gets: a
WorkbenchError carries its own status, issue code and message id; Starlette's own errors
(no route, wrong method) and FastAPI's request validation (of routes a user adds with
FastAPI's decorators) get theirs; anything else is a 500 whose traceback goes to the log
only. A 405 carries the ``Allow`` header (RFC 9110): the methods the OpenAPI document lists
for the path. ``request_chain.RequestChain`` applies it to every request; ``unexpected_error``
is the same rule as the handler of FastAPI's outermost layer, for middleware a user adds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from workbench.errors import WorkbenchError
from workbench.server.protocol import Reply, fhir_reply

log = logging.getLogger("workbench.server")

_HTTP_CODES = {
    401: "login",
    403: "forbidden",
    404: "not-found",
    405: "not-supported",
    413: "too-long",
    415: "not-supported",
}


def as_workbench_error(exc: Exception, scope: Mapping[str, Any]) -> WorkbenchError:
    """The WorkbenchError that stands for ``exc`` (raised while serving ``scope``)."""
    if isinstance(exc, WorkbenchError):
        return exc
    method, path = scope.get("method"), scope.get("path")
    if isinstance(exc, HTTPException):
        status = exc.status_code
        text = {
            404: f"No such endpoint: {method} {path}",
            405: f"Method {method} is not allowed on {path}",
        }.get(status, str(exc.detail))
        code = _HTTP_CODES.get(status, "processing")
        return WorkbenchError(text, code=code, status=status, msg_id=f"WB-HTTP-{status}")
    if isinstance(exc, RequestValidationError):
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error.get('loc', ()))}: {error.get('msg')}"
            for error in exc.errors()
        )
        text = f"The request is not valid: {problems}"
        return WorkbenchError(text, code="invalid", status=400, msg_id="WB-HTTP-400")
    log.exception("Unexpected error on %s %s", method, path)
    return WorkbenchError(
        "Internal server error; the server log has the details",
        code="exception",
        status=500,
        msg_id="WB-HTTP-500",
    )


def reply_for(
    exc: Exception,
    scope: Mapping[str, Any],
    allowed: Callable[[str], str | None] = lambda path: None,
) -> Reply:
    """The reply to a request whose handler raised ``exc``; ``allowed`` gives a path's
    methods (the ``Allow`` header of a 405)."""
    error = as_workbench_error(exc, scope)
    status, headers, body = fhir_reply(error.status, orjson.dumps(error.to_outcome()))
    if status == 405:
        allow = allowed(scope.get("path", "")) or ""
        headers = [*headers, (b"allow", allow.encode("latin-1"))]
    return status, headers, body


async def unexpected_error(request: Request, exc: Exception) -> Response:
    """``reply_for`` as a Starlette exception handler (FastAPI's outermost layer)."""
    status, headers, body = reply_for(exc, request.scope, request.app.state.allowed_methods)
    allow = dict((k.decode("latin-1"), v.decode("latin-1")) for k, v in headers[2:])
    return Response(body, status, headers=allow, media_type="application/fhir+json")
