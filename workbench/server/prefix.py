"""Where a request came in: the path prefix in front of the app.

The app may be mounted in another app (``outer.mount("/tx", create_app(...))``) or served
behind a proxy that strips a prefix (uvicorn's ``--root-path``). Either way the ASGI scope
carries the prefix as ``root_path`` and the full path as ``path`` (uvicorn ≥ 0.26, Starlette's
``Mount``). The app's own routes, exemptions and fast paths compare the path *after* the
prefix; the links it writes (Bundle links, ``Location``) carry the prefix, so a client can
follow them from where it stands.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.requests import Request


def route_path(scope: Mapping[str, Any]) -> str:
    """The request path inside the app: ``path`` without the ``root_path`` prefix (as
    Starlette's router matches it)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        rest = path[len(root) :]
        if not rest or rest[0] == "/":
            return rest
    return path


def public_base(request: Request, base: str) -> str:
    """The absolute FHIR base URL as the client sees it: scheme, host, the prefix in front of
    the app (mount point, proxy root path) and ``base``."""
    url = request.url
    return f"{url.scheme}://{url.netloc}{request.scope.get('root_path', '')}{base}"
