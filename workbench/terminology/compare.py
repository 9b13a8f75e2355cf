"""ValueSet ``$compare``: two value sets side by side, by definition first.

Two definitions that are the same once normalised (includes and excludes in any order,
listed codes in any order, the same filters, displays in the compose ignored) hold the
same codes, whatever their url or version: the answer is ``same`` without expanding
(``performed_expansion`` false). Otherwise both are expanded (through the compiled value
sets, cached for stored ones) and their codes compared as (system, code). A side that
cannot be expanded (an unknown code system, a filter that cannot be evaluated, too
costly) makes the answer ``indeterminate``, not an error; a value set that is not there
is an error (404, as ``$expand`` answers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from workbench.errors import (
    CodeSystemNotFoundError,
    IncompleteCodeSystemError,
    TooCostlyError,
    UnsupportedFilterError,
    ValueSetDefinitionNotFoundError,
    ValueSetNotFoundError,
    ValueSetVersionNotFoundError,
)
from workbench.resources import Resource, split_canonical
from workbench.terminology.comparison import Comparison, relation
from workbench.terminology.concepts import Entry
from workbench.terminology.expansion import MAXIMUM_EXPANSION
from workbench.terminology.requests import CompareRequest

if TYPE_CHECKING:
    from workbench.terminology.resolution import Resolution

#: What makes a side impossible to evaluate: the answer is then ``indeterminate``.
UNEVALUABLE = (
    CodeSystemNotFoundError,
    IncompleteCodeSystemError,
    UnsupportedFilterError,
    TooCostlyError,
)


class _Side:
    """One value set of the comparison: how to compile it, its resource, its label."""

    def __init__(self, engine: Resolution, given: str | Mapping[str, Any], version: str | None):
        if isinstance(given, str):
            url, pinned = split_canonical(given)
            version = version or pinned
            self.resource = _stored(engine, url, version)
            self.target: str | Mapping[str, Any] = given if version is None else f"{url}|{version}"
        else:
            self.resource, self.target = dict(given), given
        url = self.resource.get("url") or "(inline ValueSet)"
        found = self.resource.get("version")
        self.label = f"{url}|{found}" if found else str(url)


def _stored(engine: Resolution, url: str, version: str | None) -> Resource:
    """The stored value set; 404 when it is not there, naming the loaded versions when
    only the version asked for is missing."""
    try:
        return engine.valueset_resource(url, version)
    except ValueSetNotFoundError as exc:
        loaded = [v for v in engine.registry.versions("ValueSet", url) if v]
        if version is not None and loaded:
            raise ValueSetVersionNotFoundError(url, version, loaded) from exc
        raise ValueSetDefinitionNotFoundError(exc.url) from exc


def compare(engine: Resolution, req: CompareRequest) -> Comparison:
    """Compare ``req.this`` with ``req.other``; see the module docstring."""
    a = _Side(engine, req.this, req.this_version)
    b = _Side(engine, req.other, req.other_version)
    key_a, key_b = definition_key(a.resource), definition_key(b.resource)
    if key_a is not None and key_a == key_b:
        return Comparison(a.label, b.label, "same", performed_expansion=False)
    limit = max(engine.max_expansion, MAXIMUM_EXPANSION)
    try:
        codes_a = _codes(engine, a, req, limit)
        codes_b = _codes(engine, b, req, limit)
    except UNEVALUABLE as exc:
        return Comparison(a.label, b.label, "indeterminate", True, reason=str(exc))
    common = tuple(e for k, e in codes_a.items() if k in codes_b)
    missing = tuple(e for k, e in codes_a.items() if k not in codes_b)
    extra = tuple(e for k, e in codes_b.items() if k not in codes_a)
    result = relation(len(codes_a), len(codes_b), len(common))
    return Comparison(a.label, b.label, result, True, common, missing, extra)


def _codes(
    engine: Resolution, side: _Side, req: CompareRequest, limit: int
) -> dict[tuple[str, str], Entry]:
    """The codes of one side by (system, code); TooCostlyError past ``limit``."""
    compiled = engine.compiled(side.target, None, req.policy)
    entries = compiled.entries()
    if len(entries) > limit:
        raise TooCostlyError(
            f"the value set {side.label} has {len(entries)} codes, more than the {limit} "
            "a comparison takes"
        )
    if compiled.versions_match is False or _several_versions(entries):
        return {(e.system + "|" + (e.version or ""), e.code): e for e in entries}
    return compiled.member_index()


def _several_versions(entries: list[Entry]) -> bool:
    """Whether one code system appears in several versions (they then differ)."""
    seen: dict[str, str | None] = {}
    return any(seen.setdefault(e.system, e.version) != e.version for e in entries)


def definition_key(resource: Mapping[str, Any]) -> bytes | None:
    """The value set's compose normalised (order of includes, excludes, codes and filters
    left out, displays and designations dropped); None when it has no compose (an
    expansion only) or its compose has something this does not normalise (an import
    could be written out in another value set: compared by expansion)."""
    compose = resource.get("compose")
    if not isinstance(compose, Mapping):
        return None
    normal = {
        "include": _clauses(compose.get("include") or []),
        "exclude": _clauses(compose.get("exclude") or []),
        "inactive": compose.get("inactive", True) is not False,
        "lockedDate": compose.get("lockedDate"),
    }
    return _canonical_json(normal).encode()


def _clauses(clauses: list[Mapping[str, Any]]) -> list[str]:
    """The include (or exclude) clauses, each normalised, as a sorted set."""
    out = set()
    for clause in clauses:
        normal = {
            "system": clause.get("system"),
            "version": clause.get("version"),
            "concept": sorted({str(c.get("code")) for c in clause.get("concept") or []}),
            "filter": sorted(
                orjson.dumps(f, option=orjson.OPT_SORT_KEYS).decode()
                for f in clause.get("filter") or []
            ),
            "valueSet": sorted(str(v) for v in clause.get("valueSet") or []),
        }
        kept = {k: v for k, v in normal.items() if v}
        out.add(_canonical_json(kept))
    return sorted(out)


def _canonical_json(value: Any) -> str:
    """JSON with sorted keys: equal for equal values whatever their key order."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
