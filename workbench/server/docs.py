"""``{base}/openapi.json`` and the interactive ``{base}/docs`` page, served offline.

Swagger UI's files (JS, CSS, favicon) come from the installed ``swagger-ui-bundle-v2``
package, served by StaticFiles under ``{base}/docs/assets``: the page loads nothing from any
other host. These paths need no token (``OPEN_PATHS``). At the app root, ``/docs`` and
``/openapi.json`` redirect to them (where FastAPI users look first).
"""

from __future__ import annotations

from typing import Any

import orjson
import swagger_ui_bundle
from fastapi.openapi.docs import get_swagger_ui_html
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from workbench.server.openapi import with_server

ASSETS = "/docs/assets"
UI_PARAMETERS = {
    "persistAuthorization": True,  # the token survives a reload of the page
    "validatorUrl": None,  # no badge fetched from the online validator
    "tryItOutEnabled": True,
    "displayRequestDuration": True,
}


def open_paths(base: str) -> tuple[frozenset[str], str]:
    """The paths (after any mount prefix) that need no token for GET, and the open prefix."""
    paths = {f"{base}/metadata", f"{base}/metadata/", f"{base}/openapi.json", f"{base}/docs"}
    if base:
        paths |= {"/docs", "/openapi.json"}
    return frozenset(paths), f"{base}{ASSETS}/"


def docs_routes(base: str, document: dict[str, Any], title: str) -> list[BaseRoute]:
    """The OpenAPI document, the Swagger UI page, its assets and the root redirects."""

    async def openapi_json(request: Request) -> Response:
        served = with_server(document, request.scope.get("root_path", "") + base)
        return Response(orjson.dumps(served), media_type="application/json")

    async def docs_page(request: Request) -> Response:
        here = request.scope.get("root_path", "") + base
        return get_swagger_ui_html(
            openapi_url=f"{here}/openapi.json",
            title=f"{title} - API documentation",
            swagger_js_url=f"{here}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{here}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{here}{ASSETS}/favicon-32x32.png",
            swagger_ui_parameters=UI_PARAMETERS,
        )

    def redirect(target: str) -> Any:
        async def endpoint(request: Request) -> Response:
            return RedirectResponse(request.scope.get("root_path", "") + base + target)

        return endpoint

    routes: list[BaseRoute] = [
        Route(f"{base}/openapi.json", openapi_json, methods=["GET"]),
        Route(f"{base}/docs", docs_page, methods=["GET"]),
        Mount(
            f"{base}{ASSETS}",
            app=StaticFiles(directory=str(swagger_ui_bundle.swagger_ui_path)),
            name="docs-assets",
        ),
    ]
    if base:
        routes += [
            Route("/docs", redirect("/docs"), methods=["GET"]),
            Route("/openapi.json", redirect("/openapi.json"), methods=["GET"]),
        ]
    return routes
