"""The HTTP server's own errors as FHIR JSON.

uvicorn answers a request it cannot parse (a broken request line, a bad header, an invalid
Content-Length) itself, with a plain-text 400, before the app sees anything. These protocol
classes answer with an OperationOutcome instead; ``http_protocol()`` picks the one for the
parser uvicorn would use (httptools when installed, else h11). Pass it as ``http=`` to
``uvicorn.Config`` or ``uvicorn.run``, with ``ws="none"``: otherwise a request asking for a
WebSocket upgrade is answered by the WebSocket library in plain text (403 or 400).

``Reply`` (status, headers, body) is how the app's own layers hand a whole response over.
"""

from __future__ import annotations

import asyncio
import logging

import orjson
from starlette.types import Send

from workbench.errors import MalformedError
from workbench.server.request_ids import new_id

log = logging.getLogger("workbench.server")

FHIR_JSON = b"application/fhir+json"


def bad_request_body(message: str) -> bytes:
    """The OperationOutcome the HTTP layer sends for a request it cannot parse."""
    text = f"The HTTP request could not be parsed ({message.rstrip('.')})"
    return orjson.dumps(MalformedError(text, msg_id="WB-HTTP-400").to_outcome())


def _raw_400(message: str, default_headers: list[tuple[bytes, bytes]]) -> bytes:
    body = bad_request_body(message)
    return b"".join(
        [
            b"HTTP/1.1 400 Bad Request\r\n",
            *(name + b": " + value + b"\r\n" for name, value in default_headers),
            b"content-type: " + FHIR_JSON + b"\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"x-request-id: " + new_id() + b"\r\n",  # (the request's own was not read)
            b"connection: close\r\n\r\n",
            body,
        ]
    )


def http_protocol() -> type[asyncio.Protocol]:
    """The uvicorn HTTP protocol class whose parse errors are OperationOutcomes."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # pragma: no cover - uvicorn[standard] brings httptools
        from uvicorn.protocols.http.h11_impl import H11Protocol

        class FHIRH11Protocol(H11Protocol):
            """h11 with FHIR JSON parse errors."""

            def send_400_response(self, msg: str) -> None:
                self.transport.write(_raw_400(msg, self.server_state.default_headers))
                self.transport.close()

        return FHIRH11Protocol

    class FHIRHttpToolsProtocol(HttpToolsProtocol):
        """httptools with FHIR JSON parse errors."""

        def send_400_response(self, msg: str) -> None:
            self.transport.write(_raw_400(msg, self.server_state.default_headers))
            self.transport.close()

    return FHIRHttpToolsProtocol


#: A whole response: status, headers, body.
Reply = tuple[int, list[tuple[bytes, bytes]], bytes]


def fhir_reply(status: int, body: bytes) -> Reply:
    """A FHIR JSON response with its length."""
    return status, [(b"content-type", FHIR_JSON), (b"content-length", b"%d" % len(body))], body


async def send_reply(send: Send, reply: Reply) -> None:
    """Send a whole response: its start, then its body."""
    status, headers, body = reply
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
