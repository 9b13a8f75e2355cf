"""R5 beside R4: the requests an R5 client sends, answered by the same app.

``VersionAdapter`` decides the release of a request: a path under the R5 base
(``/fhir/R5``, see ``r5_base``), or, on any path, a media type naming ``fhirVersion`` in
Content-Type (the body's release) or Accept (the release wanted back; ``_format`` in the
query, which wins over Accept, may name it too), each falling back on
the other (FHIR http.html, "FHIR Version parameter"; the HL7 validator sends
``application/fhir+json; fhirVersion=5.0`` when the content it validates is R5, and
tx.fhir.org serves ``/r5`` beside ``/r4``). An R5 request is converted to R4 (path, the
operation's parameter names, its body: ``workbench.r5``) and passed to the R4 app, where
every rule (token, format, sizes, the operation itself) applies as to any request; the
answer is converted back to R5, its links to the R4 base moved to the R5 base for a request
on the R5 base, and its Content-Type names ``fhirVersion=5.0``. One answer path: no
operation is implemented twice.

A ``fhirVersion`` other than 4.0 and 5.0 (or 4.0 on the R5 base) is refused: 406 when Accept
names it, 415 when Content-Type does. The body is read and converted only when the R4 app
reads it (after the token was checked), at most ``max_body`` bytes of it (more goes through
as it came, for the R4 reader to refuse); bodies over ``OFF_LOOP`` bytes are converted off
the event loop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import URL
from starlette.types import Message, Receive, Scope, Send

from workbench import jsonio
from workbench.errors import NotAcceptableError, UnsupportedMediaTypeError
from workbench.r5 import R4, R5, fhir_version
from workbench.r5.operations import inputs_to_r4, outputs_to_r5, query_to_r4
from workbench.server.errors import reply_for
from workbench.server.prefix import route_path
from workbench.server.protocol import send_reply

ASGI = Callable[[Scope, Receive, Send], Awaitable[None]]
OFF_LOOP = 64 * 1024
_MEDIA = {
    R4: b"application/fhir+json; fhirVersion=4.0",
    R5: b"application/fhir+json; fhirVersion=5.0",
}
_LINK_HEADERS = (b"location", b"content-location")


def r5_base_for(base: str) -> str:
    """The R5 base beside an R4 base: its last segment ``R4`` (any case) made ``R5``
    (``/fhir/R4`` -> ``/fhir/R5``, ``/r4`` -> ``/r5``); for any other base, ``{base}/R5``
    (``/tx`` -> ``/tx/R5``, ``""`` -> ``/R5``)."""
    head, _, last = base.rpartition("/")
    if last.lower() == "r4":
        return f"{head}/{'R5' if last == 'R4' else 'r5'}"
    return f"{base}/R5"


@dataclass(frozen=True)
class Plan:
    """How one request is served: the release of its body and query (``reads``), of its
    answer (``answers``), whether it came on the R5 base, the operation it calls."""

    reads: str
    answers: str
    on_r5_base: bool
    operation: str | None
    pretty: bool = False


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _format_param(scope: Scope) -> str | None:
    """The ``_format`` of the query string when it names a ``fhirVersion``, else None (a
    substring test first: the hot path pays no parse)."""
    query = scope.get("query_string", b"")
    if b"_format" not in query or b"ersion" not in query:
        return None
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if name == "_format" and fhir_version(value) is not None:
            return value
    return None


class VersionAdapter:
    """Serve R5 requests through the R4 app (see the module docstring)."""

    def __init__(self, base: str, r5_base: str | None, max_body: int) -> None:
        self.base = base
        self.r5_base = r5_base
        self.max_body = max_body

    @classmethod
    def beside(cls, base: str, r5_base: str | bool, max_body: int) -> VersionAdapter:
        """The adapter of an app on ``base``: ``r5_base`` True serves R5 at
        ``r5_base_for(base)``, a path at that path, False on no base of its own
        (ValueError for the root or the R4 base itself)."""
        if r5_base is True:
            r5_base = r5_base_for(base)
        path = "/" + str(r5_base).strip("/") if r5_base is not False else None
        if path is not None and (path == "/" or path == base):
            raise ValueError(f"r5_base {r5_base!r} must be a path other than the base {base!r}")
        return cls(base, path, max_body)

    def claims(self, scope: Scope) -> bool:
        """Whether a request needs the adapter: on the R5 base, or naming a fhirVersion
        (cheap: the hot path pays a substring test of its path and of each header)."""
        r5 = self.r5_base
        if r5 is not None and r5 in scope["path"] and self.on_r5_base(scope):
            return True
        if _format_param(scope) is not None:
            return True
        for key, value in scope["headers"]:
            if (
                b"ersion" in value
                and (key == b"accept" or key == b"content-type")
                and b"fhirversion" in value.lower()
            ):
                return True
        return False

    def on_r5_base(self, scope: Scope) -> bool:
        """Whether a request's path is under the R5 base."""
        r5, path = self.r5_base, route_path(scope)
        return r5 is not None and (path == r5 or path.startswith(r5 + "/"))

    def plan(self, scope: Scope) -> Plan:
        """The releases of a request; a WorkbenchError (406, 415) for one not served."""
        path = route_path(scope)
        on_r5 = self.on_r5_base(scope)
        home = R5 if on_r5 else R4
        sent = fhir_version(_header(scope, b"content-type"))
        asked = _format_param(scope)  # (``_format`` wins over Accept)
        wanted = fhir_version(asked or _header(scope, b"accept"))
        served = (R5,) if on_r5 else (R4, R5)
        if wanted is not None and wanted not in served:
            where = "_format" if asked else "Accept"
            raise NotAcceptableError(
                f"fhirVersion={wanted} ({where}) is not served here: this base answers "
                f"fhirVersion {' or '.join(served)}",
                msg_id="WB-R5-406",
            )
        if sent is not None and sent not in served:
            raise UnsupportedMediaTypeError(
                f"fhirVersion={sent} (Content-Type) is not read here: this base reads "
                f"fhirVersion {' or '.join(served)}",
                msg_id="WB-R5-415",
            )
        last = path.rsplit("/", 1)[-1]
        operation = last[1:] if last.startswith("$") else None
        pretty = b"_pretty=true" in scope.get("query_string", b"")
        return Plan(sent or wanted or home, wanted or sent or home, on_r5, operation, pretty)

    async def serve(self, scope: Scope, receive: Receive, send: Send, inner: ASGI) -> None:
        """Serve a request the adapter ``claims`` through ``inner`` (the R4 app)."""
        plan: Plan | None = None
        try:
            plan = self.plan(scope)
            inner_scope = self.r4_scope(scope, plan)
            if plan.reads == R5:
                receive = self.r4_receive(receive, plan)
            await inner(inner_scope, receive, self.r5_send(send, scope, plan))
        except Exception as exc:  # (the request chain's one rule for errors: errors.reply_for)
            if plan is not None:
                media: bytes | None = _MEDIA[plan.answers]
            else:
                media = _MEDIA[R5] if self.on_r5_base(scope) else None
            await send_reply(send, _typed(reply_for(exc, scope), media))

    def r4_scope(self, scope: Scope, plan: Plan) -> Scope:
        """The request as the R4 app reads it: on the R4 base, with R4's parameter names
        and media types without ``fhirVersion``; its Content-Length dropped when the body
        is converted (the reader counts what it gets)."""
        out = dict(scope)
        if plan.on_r5_base and self.r5_base is not None:
            root = scope.get("root_path", "")
            rest = route_path(scope)[len(self.r5_base) :]
            out["path"] = f"{root}{self.base}{rest}"
            out["raw_path"] = out["path"].encode("utf-8")
        query = scope.get("query_string")
        if query and ((plan.reads == R5 and plan.operation) or _format_param(scope)):
            items = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
            # ``_format``'s media type without its fhirVersion (the R4 app's own rule reads it)
            renamed = [(k, v.split(";")[0].strip() if k == "_format" else v) for k, v in items]
            if plan.reads == R5 and plan.operation:
                renamed = query_to_r4(plan.operation, renamed)
            if renamed != items:
                out["query_string"] = urlencode(renamed, safe=":/|,$").encode("latin-1")
        headers = []
        for key, value in scope["headers"]:
            if key in (b"accept", b"content-type") and b"fhirversion" in value.lower():
                value = b"application/fhir+json"
            elif key == b"content-length" and plan.reads == R5 and value.strip() != b"0":
                continue
            headers.append((key, value))
        out["headers"] = headers
        return out

    def r4_receive(self, receive: Receive, plan: Plan) -> Receive:
        """``receive`` giving the body converted to R4, read whole when first asked for."""
        done = False

        async def converted() -> Message:
            nonlocal done
            if done:
                return await receive()
            done = True
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return message
                chunks.append(message.get("body", b""))
                size += len(chunks[-1])
                if size > self.max_body or not message.get("more_body", False):
                    break
            body = b"".join(chunks)
            more = size > self.max_body and bool(message.get("more_body", False))
            if size <= self.max_body and body.strip():
                body = await _off_loop(len(body), _body_to_r4, body, plan.operation)
            return {"type": "http.request", "body": body, "more_body": more}

        return converted

    def r5_send(self, send: Send, scope: Scope, plan: Plan) -> Send:
        """``send`` turning the R4 app's answer into the release ``plan.answers``."""
        start: Message | None = None
        chunks: list[bytes] = []
        links = self._links(scope) if plan.on_r5_base else None

        async def converted(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = b"".join(chunks)
            headers = list(start.get("headers") or ())
            fhir = any(k == b"content-type" and b"fhir+json" in v for k, v in headers)
            if fhir and plan.answers == R5 and body:
                body = await _off_loop(len(body), _body_to_r5, body, plan, links)
            headers = _answer_headers(headers, body, fhir, _MEDIA[plan.answers], links)
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        return converted

    def _links(self, scope: Scope) -> tuple[str, str]:
        url = URL(scope=scope)
        root = f"{url.scheme}://{url.netloc}{scope.get('root_path', '')}"
        return f"{root}{self.base}", f"{root}{self.r5_base}"


def _typed(reply: tuple[int, list[tuple[bytes, bytes]], bytes], media: bytes | None) -> Any:
    if media is None:
        return reply
    status, headers, body = reply
    return status, [(k, media if k == b"content-type" else v) for k, v in headers], body


def _answer_headers(
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    fhir: bool,
    media: bytes,
    links: tuple[str, str] | None,
) -> list[tuple[bytes, bytes]]:
    out = []
    for key, value in headers:
        if key == b"content-type" and fhir:
            value = media
        elif key == b"content-length" and value != b"%d" % len(body) and body:
            value = b"%d" % len(body)
        elif key in _LINK_HEADERS and links is not None:
            value = _moved(value.decode("latin-1"), links).encode("latin-1")
        out.append((key, value))
    return out


def _moved(text: str, links: tuple[str, str]) -> str:
    r4, r5 = links
    if text == r4 or text.startswith((r4 + "/", r4 + "?")):
        return r5 + text[len(r4) :]
    return text


def _rebased(value: Any, links: tuple[str, str]) -> Any:
    """``value`` with every string that is a URL on the R4 base moved to the R5 base."""
    if isinstance(value, str):
        return _moved(value, links)
    if isinstance(value, list):
        return [_rebased(v, links) for v in value]
    if isinstance(value, dict):
        return {k: _rebased(v, links) for k, v in value.items()}
    return value


async def _off_loop(size: int, job: Callable[..., bytes], *args: Any) -> bytes:
    if size > OFF_LOOP:
        return await run_in_threadpool(job, *args)
    return job(*args)


def _body_to_r4(body: bytes, operation: str | None) -> bytes:
    """A request body in R4 (one that is not a JSON object goes as it came, for the R4
    reader to refuse)."""
    try:
        parsed = jsonio.loads_body(body, exact_decimals=True)
    except jsonio.BodyError:
        return body
    if not isinstance(parsed, dict):
        return body
    return jsonio.dumps(inputs_to_r4(operation, parsed))


def _body_to_r5(body: bytes, plan: Plan, links: tuple[str, str] | None) -> bytes:
    """An answer's body in R5, its links moved to the R5 base when ``links`` is given."""
    parsed = jsonio.loads_body(body, exact_decimals=True)
    if not isinstance(parsed, dict):
        return body
    converted = outputs_to_r5(plan.operation, parsed)
    if links is not None:
        converted = _rebased(converted, links)
    return jsonio.dumps(converted, pretty=plan.pretty)
