"""Content negotiation: the server speaks FHIR JSON only, so ``_format`` or ``Accept`` asking
for anything else (XML, Turtle, HTML) is a 406 OperationOutcome, before any work is done: the
second rule of the request chain (``chain.RequestChain``)."""

from __future__ import annotations

from urllib.parse import parse_qsl

import orjson
from starlette.types import Scope

from workbench.errors import NotAcceptableError
from workbench.server.protocol import Reply, fhir_reply

JSON_FORMATS = frozenset(
    {"json", "application/json", "application/fhir+json", "application/json+fhir"}
)
_ANY = frozenset({"*/*", "application/*"})


def _media(value: str) -> str:
    return value.split(";")[0].strip().lower()


def refusal(format_param: str | None, accept: str | None) -> str | None:
    """Why the request cannot be answered in JSON, or None when it can.

    ``_format`` wins over ``Accept`` (http.html 3.1.0.1.10).
    """
    if format_param is not None:
        if _media(format_param.replace(" ", "+")) in JSON_FORMATS:
            return None
        return f"_format={format_param} is not served: this server answers in JSON only"
    if not accept or not accept.strip():
        return None
    for item in accept.split(","):
        media, _, params = item.partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 1.0
        if quality > 0 and (_media(media) in JSON_FORMATS or _media(media) in _ANY):
            return None
    return f"Accept: {accept} cannot be served: this server answers in application/fhir+json only"


class FormatRule:
    """Answer 406 when ``_format`` or ``Accept`` asks for a format other than JSON."""

    def refused(self, scope: Scope) -> Reply | None:
        """The 406 an HTTP request gets, or None when it can be answered in JSON."""
        query = scope.get("query_string", b"")
        format_param = None
        if b"_format" in query:
            for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
                if name == "_format":
                    format_param = value
        accept = None
        for name, value in scope["headers"]:
            if name == b"accept":
                accept = value.decode("latin-1")
                break
        if format_param is None and accept is None:
            return None  # nothing asked for: JSON it is
        why = refusal(format_param, accept)
        if why is None:
            return None
        return fhir_reply(406, orjson.dumps(NotAcceptableError(why).to_outcome()))
