"""FHIR JSON responses and request bodies."""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import Receive, Scope

from workbench import jsonio
from workbench.errors import (
    MalformedError,
    TooLargeError,
    UnsupportedMediaTypeError,
    WorkbenchError,
)

FHIR_JSON = "application/fhir+json"
_ACCEPTED_TYPES = ("application/fhir+json", "application/json")


class FHIRResponse(Response):
    """A response whose body is FHIR JSON (serialised by orjson)."""

    media_type = FHIR_JSON

    def render(self, content: Any) -> bytes:
        """Serialise the content (exact decimals)."""
        return jsonio.dumps(content)


def fhir(
    content: Any, status: int = 200, headers: dict[str, str] | None = None, pretty: bool = False
) -> Response:
    """Return FHIR JSON, indented when ``pretty``."""
    if pretty:
        return Response(jsonio.dumps(content, pretty=True), status, headers, media_type=FHIR_JSON)
    return FHIRResponse(content, status, headers)


def outcome(code: str, text: str, *, status: int = 400, msg_id: str = "WB-HTTP") -> Response:
    """An OperationOutcome response with one error issue."""
    error = WorkbenchError(text, code=code, status=status, msg_id=msg_id)
    return fhir(error.to_outcome(), status)


def _unsupported(media: str) -> UnsupportedMediaTypeError:
    shown = media or "none"
    return UnsupportedMediaTypeError(
        f"Content-Type {shown} is not supported; send application/fhir+json"
    )


def _body_headers(headers: list[tuple[bytes, bytes]]) -> tuple[str, str | None]:
    """The Content-Type (empty when absent) and Content-Length (None when absent) headers,
    read in one pass over the raw headers (the first of each, as Starlette reads them)."""
    content_type: str | None = None
    length: str | None = None
    for name, value in headers:
        if name == b"content-type" and content_type is None:
            content_type = value.decode("latin-1")
        elif name == b"content-length" and length is None:
            length = value.decode("latin-1")
    return content_type or "", length


def parse_json(data: bytes, *, exact_decimals: bool = False) -> Any:
    """Parse a body read by ``read_body`` (400 ``structure`` when it is not JSON)."""
    try:
        return jsonio.loads_body(data, exact_decimals=exact_decimals)
    except jsonio.BodyError as exc:
        raise MalformedError(f"The body is not valid JSON: {exc}") from None


async def read_body(
    scope: Scope, receive: Receive, max_bytes: int, *, empty_ok: bool = False
) -> bytes | None:
    """Read the JSON body's bytes of the request (its ASGI ``scope`` and ``receive``),
    checking the content type and the size limit (not parsed: a large body is parsed off
    the event loop).

    With ``empty_ok`` an empty body (of any content type) is None.
    """
    content_type, declared = _body_headers(scope["headers"])
    media = content_type.split(";")[0].strip().lower()
    if empty_ok and declared == "0":
        return None
    untyped = media not in _ACCEPTED_TYPES
    if untyped and not (empty_ok and not media):
        raise _unsupported(media)
    if (
        declared is not None
        and declared.isascii()
        and declared.isdigit()
        and int(declared) > max_bytes
    ):
        raise TooLargeError(f"The body is larger than the limit of {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    while True:  # the ASGI messages themselves (no async generator per body)
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            raise TooLargeError(f"The body is larger than the limit of {max_bytes} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    if empty_ok and size == 0:
        return None
    if untyped:
        raise _unsupported(media)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
