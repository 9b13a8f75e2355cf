"""BCP-13 media types (``urn:ietf:bcp:13``), built in.

A code is a media type by RFC 6838's syntax (``type/subtype``, each a restricted-name of at
most 127 characters) with a registered top-level type, optionally followed by parameters
(``text/plain; charset=UTF-8``: ``; name=value``, the value a token or a quoted string).
Case-insensitive: the type, subtype and parameter names in lower case are the
``normalized-code``. No maintained package ships the IANA media-type registry's names, so
the display is the media type itself, and a ``extension`` property gives the file
extensions Python's ``mimetypes`` knows for it. A grammar: not listable.
"""

from __future__ import annotations

import mimetypes
import re

import numpy as np
import pandas as pd

from workbench.releases.codes.base import GrammarProvider, resource
from workbench.releases.kinds import BuiltinKind
from workbench.terminology.concepts import Concept
from workbench.terminology.provider import CodeSystemProvider

SYSTEM = "urn:ietf:bcp:13"
#: The longest media type checked, parameters included.
MAX_LENGTH = 1024
TOP_LEVEL = frozenset(
    [
        "application",
        "audio",
        "example",
        "font",
        "haptics",
        "image",
        "message",
        "model",
        "multipart",
        "text",
        "video",
    ]
)
_NAME = r"[A-Za-z0-9][A-Za-z0-9!#$&\-^_.+]{0,126}"
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = r'"(?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\[\x09\x20-\x7e])*"'
_TYPE = re.compile(rf"(?P<type>{_NAME})/(?P<subtype>{_NAME})(?P<params>(?:[ \t]*;.*)?)", re.DOTALL)
_PARAM = re.compile(rf"[ \t]*;[ \t]*({_TOKEN})=({_TOKEN}|{_QUOTED})[ \t]*")
_NOT_LISTABLE = (
    "BCP-13 (urn:ietf:bcp:13) is a grammar of media types: a value set that takes all of "
    "it can validate media types but cannot be expanded; list the media types instead"
)


def _parameters(text: str) -> list[tuple[str, str]] | None:
    """The parameters after the subtype, or None when they are malformed."""
    found: list[tuple[str, str]] = []
    at = 0
    while at < len(text):
        match = _PARAM.match(text, at)
        if match is None:
            return None
        found.append((match[1].lower(), match[2]))
        at = match.end()
    return found


class Bcp13Provider(GrammarProvider):
    """BCP-13 media types: RFC 6838's syntax with a registered top-level type."""

    url = SYSTEM
    not_listable = _NOT_LISTABLE

    def __init__(self) -> None:
        super().__init__()
        self.version: str | None = None
        self.property_types = {"extension": "string"}
        self.resource = resource(
            SYSTEM,
            "BCP13",
            "BCP-13 media types",
            None,
            publisher="IETF",
            caseSensitive=False,
            property=[{"code": "extension", "type": "string"}],
        )

    def __reduce__(self) -> tuple[type[Bcp13Provider], tuple[()]]:
        """Pickled as a fresh provider."""
        return (Bcp13Provider, ())

    def concepts_frame(self) -> pd.DataFrame:
        """The media types Python's ``mimetypes`` knows (any other well-formed one is a
        code too)."""
        mimetypes.init()
        codes = sorted({t.lower() for t in mimetypes.types_map.values()})
        return pd.DataFrame(
            {
                "code": codes,
                "display": codes,
                "abstract": np.zeros(len(codes), dtype=bool),
                "inactive": np.zeros(len(codes), dtype=bool),
            }
        )

    def check(self, code: str) -> str | None:
        """Why ``code`` is no media type (None when it is one)."""
        if len(code) > MAX_LENGTH:
            return f"a media type has at most {MAX_LENGTH} characters here"
        found = _TYPE.fullmatch(code)
        if found is None:
            return "not a media type 'type/subtype' (RFC 6838)"
        if found["type"].lower() not in TOP_LEVEL:
            return f"'{found['type']}' is no registered top-level media type"
        if _parameters(found["params"]) is None:
            return "its parameters are not '; name=value' (a token or a quoted string)"
        return None

    def concept_of(self, code: str) -> Concept:
        """The media type with its type, subtype and parameter names in lower case."""
        found = _TYPE.fullmatch(code)
        assert found is not None
        essence = f"{found['type']}/{found['subtype']}".lower()
        params = _parameters(found["params"]) or []
        canonical = essence + "".join(f"; {name}={value}" for name, value in params)
        extensions = sorted(mimetypes.guess_all_extensions(essence, strict=False))
        return Concept(
            code=canonical,
            display=canonical,
            definition=None,
            order=0,
            properties={"extension": extensions} if extensions else {},
        )


class Bcp13Kind(BuiltinKind):
    """BCP-13 media types: a grammar, always loaded."""

    name = "bcp13"
    title = "BCP-13 media types (built in)"
    system = SYSTEM

    def provider(self) -> CodeSystemProvider:
        """A new ``Bcp13Provider``."""
        return Bcp13Provider()


KIND = Bcp13Kind()
