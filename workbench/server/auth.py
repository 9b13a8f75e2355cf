"""Bearer-token authentication: the first rule of the request chain (``chain.RequestChain``)."""

from __future__ import annotations

import hmac
import secrets

import orjson
from starlette.types import Scope

from workbench.errors import LoginError
from workbench.server.prefix import route_path
from workbench.server.protocol import Reply

# WebSocket close code 1008 (RFC 6455): the request breaks the server's policy
POLICY_VIOLATION = 1008


def new_token() -> str:
    """Return a fresh random token, as Jupyter does when none is configured."""
    return secrets.token_urlsafe(24)


class TokenRule:
    """Require ``Authorization: Bearer <token>`` on everything but GET (and HEAD) of
    ``open_paths`` and of the paths under ``open_prefix`` (compared after the prefix the
    app is mounted or proxied under). A WebSocket handshake needs the token too."""

    def __init__(self, *, token: str, open_paths: frozenset[str], open_prefix: str) -> None:
        self.expected = token.encode()
        self.open_paths = open_paths
        self.open_prefix = open_prefix

    def admits(self, scope: Scope) -> bool:
        """Whether a WebSocket handshake carries the token."""
        return self._authorized(_authorization(scope))

    def refused(self, scope: Scope) -> Reply | None:
        """The 401 an HTTP request gets, or None when it may go on."""
        if scope["method"] in ("GET", "HEAD"):
            path = route_path(scope)
            if path in self.open_paths or path.startswith(self.open_prefix):
                return None
        given = _authorization(scope)
        if self._authorized(given):
            return None
        text = "A bearer token is required" if not given else "The bearer token is not valid"
        body = orjson.dumps(LoginError(text).to_outcome())
        headers = [
            (b"content-type", b"application/fhir+json"),
            (b"www-authenticate", b'Bearer realm="workbench"'),
            (b"content-length", str(len(body)).encode()),
        ]
        return 401, headers, body

    def _authorized(self, given: bytes) -> bool:
        """Whether the Authorization header ``given`` carries the expected bearer token."""
        scheme, _, credentials = given.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(
            credentials.strip(), self.expected
        )


def _authorization(scope: Scope) -> bytes:
    """The Authorization header (empty when absent)."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            return bytes(value)
    return b""
