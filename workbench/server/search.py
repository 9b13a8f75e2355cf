"""The search parameters of each resource type and how a resource matches one (FHIR R4).

Every type has ``url``, ``version``, ``name``, ``title``, ``status`` and ``_id``; a
ConceptMap also has ``source``/``target`` (its scope, a value set canonical or uri: a
value without ``|version`` matches any version), ``source-uri``/``target-uri``,
``source-system``/``target-system`` (a group's systems) and ``source-code``/``target-code``
(an element's or a target's code, optionally as ``system|code``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from workbench.resources import Resource, split_canonical

COMMON = ("url", "version", "name", "title", "status", "_id")
CONCEPTMAP = (
    "source",
    "target",
    "source-uri",
    "target-uri",
    "source-system",
    "target-system",
    "source-code",
    "target-code",
)
#: search parameter -> FHIR search parameter type
TYPES = {
    "url": "uri",
    "version": "token",
    "name": "string",
    "title": "string",
    "status": "token",
    "_id": "token",
    "source": "reference",
    "target": "reference",
    "source-uri": "reference",
    "target-uri": "reference",
    "source-system": "uri",
    "target-system": "uri",
    "source-code": "token",
    "target-code": "token",
}


def parameters(resource_type: str) -> tuple[str, ...]:
    """The search parameters a resource type supports."""
    return COMMON + CONCEPTMAP if resource_type == "ConceptMap" else COMMON


def matches(resource: Resource, name: str, value: str) -> bool:
    """FHIR search semantics: uri/token exact; string case-insensitive prefix; a
    reference without a version matches every version; commas OR."""
    options = value.split(",")
    if name in CONCEPTMAP:
        return any(_conceptmap(resource, name, option) for option in options)
    have = resource.get("id" if name == "_id" else name)
    if have is None:
        return False
    if name in ("name", "title"):
        text = str(have).casefold()
        return any(text.startswith(o.casefold()) for o in options)
    return str(have) in options


def _scope(resource: Resource, side: str, kinds: tuple[str, ...]) -> Iterator[str]:
    for kind in kinds:
        found = resource.get(f"{side}{kind}")
        if isinstance(found, str):
            yield found


def _canonical_matches(have: str, wanted: str) -> bool:
    url, version = split_canonical(wanted)
    have_url, have_version = split_canonical(have)
    return have_url == url and (version is None or have_version == version)


def _groups(resource: Resource) -> list[dict[str, Any]]:
    groups = resource.get("group")
    return [g for g in groups if isinstance(g, dict)] if isinstance(groups, list) else []


def _conceptmap(resource: Resource, name: str, value: str) -> bool:
    side, _, what = name.partition("-")
    if what in ("", "uri"):
        kinds = ("Uri", "Canonical") if what == "" else ("Uri",)
        return any(_canonical_matches(h, value) for h in _scope(resource, side, kinds))
    if what == "system":
        return any(g.get(side) == value for g in _groups(resource))
    system, bar, code = value.rpartition("|")
    for group in _groups(resource):
        if bar and system and group.get(side) != system:
            continue
        for element in group.get("element", []):
            codes = (
                [element.get("code")]
                if side == "source"
                else [t.get("code") for t in element.get("target", [])]
            )
            if code in codes:
                return True
    return False
