"""Bearer-token authentication as a plain ASGI middleware (no per-request thread hop)."""

from __future__ import annotations

import hmac
import secrets

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from workbench.errors import LoginError


def new_token() -> str:
    """Return a fresh random token, as Jupyter does when none is configured."""
    return secrets.token_urlsafe(24)


class BearerAuth:
    """Require ``Authorization: Bearer <token>`` on everything but ``GET {base}/metadata``."""

    def __init__(self, app: ASGIApp, *, token: str, base: str) -> None:
        self.app = app
        self.expected = token.encode()
        self.open_paths = {f"{base}/metadata", f"{base}/metadata/"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (
            scope["method"] in ("GET", "HEAD") and scope["path"] in self.open_paths
        ):
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value
                break
        scheme, _, credentials = given.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self.expected):
            await self.app(scope, receive, send)
            return
        text = "A bearer token is required" if not given else "The bearer token is not valid"
        body = orjson.dumps(LoginError(text).to_outcome())
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/fhir+json"),
                    (b"www-authenticate", b'Bearer realm="workbench"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
