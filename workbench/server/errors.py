"""Exception handlers: every failure becomes an OperationOutcome, never ``{"detail": …}``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from workbench.errors import WorkbenchError
from workbench.server.responses import fhir, outcome

log = logging.getLogger("workbench.server")

_HTTP_CODES = {
    401: "login",
    403: "forbidden",
    404: "not-found",
    405: "not-supported",
    413: "too-long",
    415: "not-supported",
}


def with_allow(request: Request, response: Response) -> Response:
    """A 405 with its ``Allow`` header (RFC 9110): the methods the OpenAPI document lists
    for the path."""
    if response.status_code == 405:
        response.headers["Allow"] = request.app.state.allowed_methods(request.url.path) or ""
    return response


async def workbench_error(request: Request, exc: Exception) -> Response:
    """A WorkbenchError carries its own status, issue code and message id."""
    assert isinstance(exc, WorkbenchError)
    return with_allow(request, fhir(exc.to_outcome(), exc.status))


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (no route, wrong method) as OperationOutcomes."""
    assert isinstance(exc, HTTPException)
    text = {
        404: f"No such endpoint: {request.method} {request.url.path}",
        405: f"Method {request.method} is not allowed on {request.url.path}",
    }.get(exc.status_code, str(exc.detail))
    answer = outcome(
        _HTTP_CODES.get(exc.status_code, "processing"),
        text,
        status=exc.status_code,
        msg_id=f"WB-HTTP-{exc.status_code}",
    )
    return with_allow(request, answer)


async def unexpected_error(request: Request, exc: Exception) -> Response:
    """Anything else: 500 with an OperationOutcome; the traceback goes to the log only."""
    log.exception("Unexpected error on %s %s", request.method, request.url.path)
    return outcome(
        "exception",
        "Internal server error; the server log has the details",
        status=500,
        msg_id="WB-HTTP-500",
    )


async def validation_error(request: Request, exc: Exception) -> Response:
    """FastAPI's request validation (of routes added with FastAPI's decorators) as a 400
    OperationOutcome, not FastAPI's 422 ``{"detail": …}``."""
    assert isinstance(exc, RequestValidationError)
    problems = "; ".join(
        f"{'.'.join(str(part) for part in error.get('loc', ()))}: {error.get('msg')}"
        for error in exc.errors()
    )
    return outcome("invalid", f"The request is not valid: {problems}", msg_id="WB-HTTP-400")


Handler = Callable[[Request, Any], Coroutine[Any, Any, Response]]
HANDLERS: dict[int | type[Exception], Handler] = {
    WorkbenchError: workbench_error,
    HTTPException: http_error,
    RequestValidationError: validation_error,
    Exception: unexpected_error,
}
