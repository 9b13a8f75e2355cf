"""The hot path: operation calls on exact paths, answered without the router.

``$validate-code``, ``$lookup`` and the other operations at system and type level are what
terminology clients call most, thousands of times a second. ``OperationDispatch`` finds their
path in a dict and sends the answer itself: no route matching, no per-request exception
wrappers, the response headers built from constants. A WorkbenchError becomes its
OperationOutcome here, exactly as the app's exception handler would answer it; anything else
propagates to the outer ``Guard`` (a 500). Every other request (instance level, REST, other
methods) goes on to the router. Paths are compared after the prefix the app is mounted or
proxied under (``root_path``), as the router compares them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

from workbench import jsonio
from workbench.errors import WorkbenchError
from workbench.server.prefix import route_path

Answer = Callable[[Scope, Receive], Awaitable[bytes]]
_CONTENT_TYPE = (b"content-type", b"application/fhir+json")
_METHODS = frozenset({"GET", "POST"})


class OperationDispatch:
    """Serve the paths of ``answers`` (path -> a coroutine giving the body) directly."""

    def __init__(self, app: ASGIApp, *, answers: Mapping[str, Answer]) -> None:
        self.app = app
        self.answers = dict(answers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = self.answers.get(route_path(scope)) if scope["type"] == "http" else None
        if answer is None or scope["method"] not in _METHODS:
            await self.app(scope, receive, send)
            return
        try:
            body = await answer(scope, receive)
            status = 200
        except WorkbenchError as exc:
            body, status = jsonio.dumps(exc.to_outcome()), exc.status
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [_CONTENT_TYPE, (b"content-length", b"%d" % len(body))],
            }
        )
        await send({"type": "http.response.body", "body": body})
