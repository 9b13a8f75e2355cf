"""What the OpenAPI document's paths imply: the links from a create and a read to the
operations on that instance, and the ``Allow`` header of a 405 (the methods of the path)."""

from __future__ import annotations

import re
from typing import Any

from workbench.registry import TERMINOLOGY_TYPES


def add_links(paths: dict[str, dict[str, Any]]) -> None:
    """OpenAPI links from a create (201) and a read (200) of each resource type to the
    operations on that instance: read, history, vread, update, delete and the instance
    operations (the id from the body; a vread's version from ``meta.versionId``)."""
    for rtype in TERMINOLOGY_TYPES:
        instance = f"/{rtype}/{{id}}"
        links: dict[str, Any] = {}
        for path, item in paths.items():
            if path != instance and not path.startswith(instance + "/"):
                continue
            for operation in item.values():
                parameters = {"id": "$response.body#/id"}
                if path.endswith("{vid}"):
                    parameters["vid"] = "$response.body#/meta/versionId"
                links[operation["operationId"]] = {
                    "operationId": operation["operationId"],
                    "parameters": parameters,
                }
        paths[f"/{rtype}"]["post"]["responses"]["201"]["links"] = links
        read = paths[instance]["get"]["responses"]["200"]
        read["links"] = {k: v for k, v in links.items() if k != f"read-{rtype}"}


_SEGMENT = {"{id}": "[A-Za-z0-9\\-.]{1,64}", "{vid}": "[A-Za-z0-9\\-.]{1,64}"}
_HTTP_METHODS = ("get", "put", "post", "delete", "patch")


class AllowedMethods:
    """The methods the document lists for a request path (the ``Allow`` header of a 405,
    RFC 9110 section 15.5.6): each path template as a pattern under the FHIR base."""

    def __init__(self, document: dict[str, Any], base: str) -> None:
        self.patterns: list[tuple[re.Pattern[str], str]] = []
        for path, item in document["paths"].items():
            methods = [m.upper() for m in _HTTP_METHODS if m in item]
            if "GET" in methods:
                methods.insert(methods.index("GET") + 1, "HEAD")
            parts = re.split(r"(\{id\}|\{vid\})", path)
            pattern = "".join(_SEGMENT.get(p, re.escape(p)) for p in parts)
            self.patterns.append(
                (re.compile(".*" + re.escape(base) + pattern + "/?"), ", ".join(methods))
            )

    def __call__(self, path: str) -> str | None:
        """The ``Allow`` value for ``path``, None if no path of the document matches."""
        for pattern, methods in self.patterns:
            if pattern.fullmatch(path):
                return methods
        return None
