"""One way through the app: every request passes one chain of rules, then one handler.

The rules, in this order, each written once, in the module that owns it:

1. the token (``auth.TokenRule.refused``: 401 without ``Authorization: Bearer``);
2. the format (``negotiation.FormatRule.refused``: 406 for anything but JSON);
3. with a database that other processes write, their writes first (``sync.WriteSync.sync``);

then exactly one handler: the operation of an exact system- or type-level path (a dict
lookup: ``$validate-code``, ``$lookup`` and the other calls terminology clients make
thousands of times a second, without route matching), or else the router (instance-level
operations, REST, ``/metadata``, the OpenAPI page). Whatever either raises becomes its
OperationOutcome by one rule (``errors.reply_for``): a WorkbenchError its own status and
issue, Starlette's 404 and 405 theirs (with ``Allow``), anything else a 500 whose traceback
goes to the log only. Sizes are bounded where a body is read (``responses.read_body``, the
one reader of both handlers).

The chain is the app's innermost layer: middleware added with ``app.add_middleware`` wraps it
and sees every request (``app.TerminologyApp``). Paths are compared after the prefix the app
is mounted or proxied under (``root_path``), as the router compares them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from workbench.errors import MethodNotAllowedError
from workbench.server.auth import POLICY_VIOLATION, TokenRule
from workbench.server.errors import reply_for
from workbench.server.negotiation import FormatRule
from workbench.server.prefix import route_path
from workbench.server.protocol import fhir_reply, send_reply
from workbench.server.sync import WriteSync

Answer = Callable[[Scope, Receive], Awaitable[bytes]]
#: The methods an operation answers (HEAD as GET, without the body).
OPERATION_METHODS = frozenset({"GET", "HEAD", "POST"})


class RequestChain:
    """The rules, then the operation of an exact path (``answers``: path -> a coroutine
    giving the body) or the ``router``; ``allowed`` gives a path's methods (the ``Allow``
    header of a 405)."""

    def __init__(
        self,
        router: ASGIApp,
        *,
        token: TokenRule,
        formats: FormatRule,
        writes: WriteSync | None,
        answers: Mapping[str, Answer],
        allowed: Callable[[str], str | None],
    ) -> None:
        self.router = router
        self.token = token
        self.formats = formats
        self.writes = writes
        self.answers = dict(answers)
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self.http(scope, receive, send)
        elif kind == "lifespan":
            await self.router(scope, receive, send)
        elif kind == "websocket":  # refused before it is accepted: the server answers 403
            if self.token.admits(scope):
                await self.router(scope, receive, send)
            else:
                await send({"type": "websocket.close", "code": POLICY_VIOLATION})
        else:
            raise RuntimeError(f"The app refuses ASGI scopes of type {kind!r}")

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve an HTTP request: the rules, then its one handler."""
        try:
            reply = self.token.refused(scope) or self.formats.refused(scope)
            if reply is None:
                if self.writes is not None:
                    await self.writes.sync()
                answer = self.answers.get(route_path(scope))
                if answer is None:
                    await self.routed(scope, receive, send)
                    return
                if scope["method"] not in OPERATION_METHODS:
                    raise MethodNotAllowedError(
                        f"Method {scope['method']} is not allowed on {scope['path']}",
                        msg_id="WB-HTTP-405",
                    )
                reply = fhir_reply(200, await answer(scope, receive))
        except ClientDisconnect:
            return  # the client is gone (or sent a body the parser refused): nobody to answer
        except Exception as exc:
            reply = reply_for(exc, scope, self.allowed)
        await send({"type": "http.response.start", "status": reply[0], "headers": reply[1]})
        head = scope["method"] == "HEAD"  # (its length is the GET's, without the body)
        await send({"type": "http.response.body", "body": b"" if head else reply[2]})

    async def routed(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve an HTTP request with the router; what it raises before its response
        began becomes the reply (after, the server closes the connection)."""
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.router(scope, receive, tracked)
        except ClientDisconnect:
            return
        except Exception as exc:
            if started:
                raise
            await send_reply(send, reply_for(exc, scope, self.allowed))
