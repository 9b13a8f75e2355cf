"""History Bundles: of one resource, of a resource type, and of the whole server.

``GET [base]/[type]/[id]/_history``, ``GET [base]/[type]/_history`` and ``GET [base]/_history``
(FHIR R4 http.html#history) answer a Bundle of type ``history``: one entry per version, newest
first, each with the request that made it (``PUT``, or ``DELETE`` for a deletion) and its
``response`` (status, ``W/"n"`` etag, ``lastModified``). A resource that was loaded and never
written has one version: the one served. Type and system history take ``_count`` (default
100, at most 1000), ``_offset`` (the absolute ``next``/``previous`` links use it) and ``_since``
(an instant with a time zone: only versions written at or after it). Other parameters are
ignored, unless the request says ``Prefer: handling=strict`` (then 400).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

from workbench.errors import InvalidRequestError
from workbench.server.database import Version
from workbench.server.search import DEFAULT_COUNT, MAX_COUNT, whole_number

#: The form of ``_since`` (and a calendar date and time, which the OpenAPI document states
#: as the format ``date-time``).
INSTANT_FORM = (
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})"
)
_INSTANT = re.compile(INSTANT_FORM)
_GENERAL = frozenset({"_format", "_pretty"})
_OLDEST = datetime.min.replace(tzinfo=timezone.utc)


@dataclass
class HistoryQuery:
    """The parameters of a type or system history."""

    count: int = DEFAULT_COUNT
    offset: int = 0
    since: datetime | None = None
    applied: list[tuple[str, str]] = field(default_factory=list)
    count_given: bool = False


def instant(text: str) -> datetime | None:
    """A FHIR instant as an aware datetime, or None when it is not one."""
    if not _INSTANT.fullmatch(text):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def parse_history(params: Iterable[tuple[str, str]], *, strict: bool = False) -> HistoryQuery:
    """Read ``_count``, ``_offset`` and ``_since``; see the module docstring."""
    query = HistoryQuery()
    for name, value in params:
        if name == "_count":
            query.count = whole_number("_count", value, MAX_COUNT)
            query.count_given = True
        elif name == "_offset":
            query.offset = whole_number("_offset", value)
        elif name == "_since":
            query.since = instant(value)
            if query.since is None:
                raise InvalidRequestError(
                    f"_since must be an instant with a time zone (2024-01-31T12:00:00Z), "
                    f"not '{value}'"
                )
            query.applied.append((name, value))
        elif name not in _GENERAL and strict:
            raise InvalidRequestError(
                f"Unknown parameter '{name}' for a history (known: _count, _offset, _since)"
            )
    return query


def written_at(version: Version) -> datetime:
    """When a version was written (``meta.lastUpdated``); the oldest time when unknown."""
    found = instant(str((version.resource.get("meta") or {}).get("lastUpdated") or ""))
    return found if found is not None else _OLDEST


def entry(version: Version, older: Version | None, root: str) -> dict[str, Any]:
    """The history entry of one version (``older`` is the version before it, if known)."""
    rtype, rid = version.resource["resourceType"], version.resource["id"]
    if version.deleted:
        method, status = "DELETE", "204 No Content"
    elif version.number == 1 or (older is not None and older.deleted):
        method, status = "PUT", "201 Created"
    else:
        method, status = "PUT", "200 OK"
    out: dict[str, Any] = {"fullUrl": f"{root}/{rtype}/{rid}"}
    if not version.deleted:
        out["resource"] = version.resource
    out["request"] = {"method": method, "url": f"{rtype}/{rid}"}
    response = {"status": status, "etag": f'W/"{version.number}"'}
    when = (version.resource.get("meta") or {}).get("lastUpdated")
    if when:
        response["lastModified"] = when
    out["response"] = response
    return out


def resource_history(versions: list[Version], root: str, rtype: str, rid: str) -> dict[str, Any]:
    """The history Bundle of one resource, newest version first (``versions`` in that order)."""
    entries = [
        entry(v, versions[i + 1] if i + 1 < len(versions) else None, root)
        for i, v in enumerate(versions)
    ]
    return {
        "resourceType": "Bundle",
        "type": "history",
        "total": len(entries),
        "link": [{"relation": "self", "url": f"{root}/{rtype}/{rid}/_history"}],
        "entry": entries,
    }


def many_history(
    histories: Iterable[list[Version]], query: HistoryQuery, root: str, url: str
) -> dict[str, Any]:
    """The history Bundle of many resources (each list newest first): one page of all their
    versions, newest first, with absolute paging links built on ``url``."""
    rows: list[tuple[datetime, int, Version, Version | None]] = []
    for versions in histories:
        for i, version in enumerate(versions):
            when = written_at(version)
            if query.since is not None and when < query.since:
                continue
            older = versions[i + 1] if i + 1 < len(versions) else None
            rows.append((when, version.number, version, older))
    rows.sort(key=lambda row: (row[0], row[1]), reverse=True)
    count, offset, total = query.count, query.offset, len(rows)

    def link(relation: str, at: int, with_count: bool) -> dict[str, str]:
        params = list(query.applied)
        if with_count:
            params.append(("_count", str(count)))
        if at:
            params.append(("_offset", str(at)))
        return {"relation": relation, "url": url + ("?" + urlencode(params) if params else "")}

    links = [link("self", offset, query.count_given)]
    if count and (offset > 0 or total > count):
        links.append(link("first", 0, True))
        if offset > 0:
            links.append(link("previous", max(0, offset - count), True))
        if offset + count < total:
            links.append(link("next", offset + count, True))
            links.append(link("last", ((total - 1) // count) * count, True))
    out: dict[str, Any] = {"resourceType": "Bundle", "type": "history", "total": total}
    out["link"] = links
    page = rows[offset : offset + count] if count else []
    if page:
        out["entry"] = [entry(version, older, root) for _, _, version, older in page]
    return out
