"""The hot path: operation calls on exact paths, answered without the router.

``$validate-code``, ``$lookup`` and the other operations at system and type level are what
terminology clients call most, thousands of times a second. ``OperationDispatch`` finds their
path in a dict and sends the answer itself: no route matching, no per-request exception
wrappers, the response headers built from constants. A WorkbenchError becomes its
OperationOutcome here, exactly as the app's exception handler would answer it; anything else
propagates to the outer ``Guard`` (a 500). Every other request (instance level, REST, other
methods) goes on to the router. Paths are compared after the prefix the app is mounted or
proxied under (``root_path``), as the router compares them.

``FastLane`` runs the app's own layers for these calls (Guard, token, format, other
processes' writes, the dispatch) in one coroutine: each layer's rule is its own function
(``BearerAuth.refused``, ``FormatNegotiation.refused``, ``WriteSync.sync``, and
``answered`` or ``refused`` for the operation's answer), called in the order the layers are
stacked, so that a request gets exactly the answer the stack would give, without an ASGI
call per layer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from workbench import jsonio
from workbench.errors import WorkbenchError
from workbench.server.auth import BearerAuth
from workbench.server.negotiation import FormatNegotiation
from workbench.server.prefix import route_path
from workbench.server.protocol import Guard, Reply, internal_error, send_reply
from workbench.server.sync import WriteSync

Answer = Callable[[Scope, Receive], Awaitable[bytes]]
_CONTENT_TYPE = (b"content-type", b"application/fhir+json")
_METHODS = frozenset({"GET", "POST"})


class OperationDispatch:
    """Serve the paths of ``answers`` (path -> a coroutine giving the body) directly."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        answers: Mapping[str, Answer],
        allowed: Callable[[str], str | None] = lambda path: None,
    ) -> None:
        self.app = app
        self.answers = dict(answers)
        self.allowed = allowed  # a path's methods, the Allow header of a 405

    def refused(self, exc: WorkbenchError, scope: Scope) -> Reply:
        """The OperationOutcome of ``exc``, a 405 with its ``Allow`` header."""
        reply = refused(exc)
        if exc.status == 405:
            allow = (self.allowed(scope["path"]) or "").encode("latin-1")
            reply = (reply[0], [*reply[1], (b"allow", allow)], reply[2])
        return reply

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = self.answers.get(route_path(scope)) if scope["type"] == "http" else None
        if answer is None or scope["method"] not in _METHODS:
            await self.app(scope, receive, send)
            return
        try:
            reply = answered(await answer(scope, receive))
        except WorkbenchError as exc:
            reply = self.refused(exc, scope)
        await send_reply(send, reply)


def answered(body: bytes, status: int = 200) -> Reply:
    """The response carrying an operation's answer (FHIR JSON)."""
    return status, [_CONTENT_TYPE, (b"content-length", b"%d" % len(body))], body


def refused(exc: WorkbenchError) -> Reply:
    """The OperationOutcome of a WorkbenchError an operation call raised."""
    return answered(jsonio.dumps(exc.to_outcome()), exc.status)


class FastLane:
    """The layers ``Guard``, ``BearerAuth``, ``FormatNegotiation``, optionally
    ``WriteSync``, then ``OperationDispatch``, as one ASGI app (see the module
    docstring); ``FastLane.over(stack)`` builds it over a stack of exactly these layers
    and returns any other stack as it is."""

    def __init__(
        self,
        stack: ASGIApp,
        auth: BearerAuth,
        formats: FormatNegotiation,
        writes: WriteSync | None,
        dispatch: OperationDispatch,
    ) -> None:
        self.stack = stack
        self.auth = auth
        self.formats = formats
        self.writes = writes
        self.dispatch = dispatch

    @classmethod
    def over(cls, stack: ASGIApp) -> ASGIApp:
        """The fast lane over ``stack``, or ``stack`` when its layers are other ones."""
        layers: list[object] = []
        layer: object = stack
        while isinstance(layer, Guard | BearerAuth | FormatNegotiation | WriteSync):
            layers.append(layer)
            layer = layer.app
        kinds = [type(x) for x in layers]
        if isinstance(layer, OperationDispatch) and kinds in (
            [Guard, BearerAuth, FormatNegotiation],
            [Guard, BearerAuth, FormatNegotiation, WriteSync],
        ):
            writes = layers[3] if len(layers) == 4 else None
            auth, formats = layers[1], layers[2]
            assert isinstance(auth, BearerAuth) and isinstance(formats, FormatNegotiation)
            assert writes is None or isinstance(writes, WriteSync)
            return cls(stack, auth, formats, writes, layer)
        return stack

    def answer_for(self, scope: Scope) -> Answer | None:
        """The answer of an HTTP request that the dispatch serves, else None."""
        return self.dispatch.answers.get(route_path(scope)) if scope["method"] in _METHODS else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = self.answer_for(scope) if scope["type"] == "http" else None
        if answer is None:
            await self.stack(scope, receive, send)
            return
        await self.serve(answer, scope, receive, send)

    async def serve(self, answer: Answer, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve an HTTP request with ``answer`` (``answer_for`` it) through the layers."""
        started = False  # whether the response has begun (Guard's rule)
        try:
            reply = self.auth.refused(scope) or self.formats.refused(scope)
            if reply is None:
                if self.writes is not None:
                    await self.writes.sync()
                try:
                    reply = answered(await answer(scope, receive))
                except WorkbenchError as exc:
                    reply = self.dispatch.refused(exc, scope)
            started = True
            # send_reply's two messages, without a coroutine of their own
            await send({"type": "http.response.start", "status": reply[0], "headers": reply[1]})
            await send({"type": "http.response.body", "body": reply[2]})
        except ClientDisconnect:
            return  # the client is gone (or sent a body the parser refused): nobody to answer
        except Exception:
            error = internal_error(scope)
            if started:
                raise
            await send_reply(send, error)
