"""ValueSet ``$compare``: two value sets side by side, by definition first.

Two definitions that are the same once normalised (includes and excludes in any order,
listed codes in any order, the same filters, displays in the compose ignored) hold the
same codes, whatever their url or version: the answer is ``same`` without expanding
(``performed_expansion`` false) when the definition plainly holds a code (a listed code the
code system has, a whole code system with codes, an ``is-a`` or ``in`` filter on a code it
has); otherwise one side is expanded to tell ``same`` from ``empty``. Two value sets
without codes are ``empty``, whatever their definitions.

Otherwise both are expanded (through the compiled value sets, cached for stored ones) and
their codes compared as tx.fhir.org compares them: by system and code, whatever the code
system versions they come from (a value set over version 1 of a code system is a subset
of one over version 2 that adds codes; one that draws on both versions, directly or by
importing a versioned value set, holds each code once); by version too for a code system
that says ``versionNeeded`` (its versions are different code sets), and for every code
system when a value set says ``versionsMatch`` false. A side that cannot be expanded (an
unknown code system, a filter that cannot be evaluated, too costly) makes the answer
``indeterminate``, not an error; a value set that is not there is an error (404, as
``$expand`` answers).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
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
from workbench.terminology.compare.result import Comparison, relation
from workbench.terminology.concepts import Concept, Entry
from workbench.terminology.expand.expansion import MAXIMUM_EXPANSION
from workbench.terminology.requests import CompareRequest
from workbench.terminology.versions import NO_POLICY

if TYPE_CHECKING:
    from workbench.terminology.compose import CompiledValueSet
    from workbench.terminology.provider import CodeSystemProvider
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
    latest = _latest_versions(engine) if req.policy == NO_POLICY else None
    key_a, key_b = definition_key(a.resource, latest), definition_key(b.resource, latest)
    if key_a is not None and key_a == key_b:
        return _one_definition(engine, a, b, req, latest)
    limit = max(engine.max_expansion, MAXIMUM_EXPANSION)
    try:
        compiled_a = _compiled(engine, a, req, limit)
        compiled_b = _compiled(engine, b, req, limit)
    except UNEVALUABLE as exc:
        return Comparison(a.label, b.label, "indeterminate", True, reason=str(exc))
    versioned = _versioned_systems(engine, compiled_a, compiled_b)
    codes_a = _codes(engine, compiled_a, versioned)
    codes_b = _codes(engine, compiled_b, versioned)
    common = tuple(e for k, e in codes_a.items() if k in codes_b)
    missing = tuple(e for k, e in codes_a.items() if k not in codes_b)
    extra = tuple(e for k, e in codes_b.items() if k not in codes_a)
    result = relation(len(codes_a), len(codes_b), len(common))
    return Comparison(a.label, b.label, result, True, common, missing, extra)


def _one_definition(
    engine: Resolution,
    a: _Side,
    b: _Side,
    req: CompareRequest,
    latest: Callable[[str], str | None] | None,
) -> Comparison:
    """Two value sets of the same definition: ``same`` from the definition when it plainly
    holds a code, else from *this* expanded (``empty`` when it has no codes). A definition
    that cannot be expanded (an unknown code system) still holds what the other holds."""
    if latest is not None and _holds_a_code(engine, a.resource):
        return Comparison(a.label, b.label, "same", performed_expansion=False)
    try:
        compiled = _compiled(engine, a, req, max(engine.max_expansion, MAXIMUM_EXPANSION))
    except UNEVALUABLE:
        return Comparison(a.label, b.label, "same", performed_expansion=False)
    codes = tuple(_codes(engine, compiled, frozenset()).values())
    result = relation(len(codes), len(codes), len(codes))
    return Comparison(a.label, b.label, result, True, codes)


def _compiled(engine: Resolution, side: _Side, req: CompareRequest, limit: int) -> CompiledValueSet:
    """The side's compiled value set, expanded; TooCostlyError past ``limit`` codes."""
    compiled = engine.compiled(side.target, None, req.policy)
    entries = compiled.entries()
    if len(entries) > limit:
        raise TooCostlyError(
            f"the value set {side.label} has {len(entries)} codes, more than the {limit} "
            "a comparison takes"
        )
    return compiled


def _versioned_systems(engine: Resolution, *compiled: CompiledValueSet) -> frozenset[str]:
    """The code systems whose codes also compare by version: those that say
    ``versionNeeded``, and every one when a side says ``versionsMatch`` false."""
    systems = {s for c in compiled for s in c.systems()}
    if any(c.versions_match is False for c in compiled):
        return frozenset(systems)
    return frozenset(s for s in systems if _version_needed(engine, s))


def _version_needed(engine: Resolution, system: str) -> bool:
    """Whether the code system (its latest version loaded) says ``versionNeeded``."""
    found = engine.codesystem(system)
    return found is not None and found.resource.get("versionNeeded") is True


def _codes(
    engine: Resolution, compiled: CompiledValueSet, versioned: frozenset[str]
) -> dict[tuple[str, str], Entry]:
    """The codes of an expanded side by (system, code), or by (system|version, code) for
    the ``versioned`` code systems. Kept with the compiled value set while it is cached."""
    if not versioned:
        return compiled.member_index()

    def index() -> dict[tuple[str, str], Entry]:
        found: dict[tuple[str, str], Entry] = {}
        for e in compiled.entries():
            system = e.system + "|" + (e.version or "") if e.system in versioned else e.system
            found.setdefault((system, e.code), e)
        return found

    return engine.memo(compiled, ("compare-codes", versioned), index)


def _holds_a_code(engine: Resolution, resource: Mapping[str, Any]) -> bool:
    """Whether the value set plainly holds a code, from its definition and a look at the
    code systems: no exclude, and an include that lists a code its code system has, takes
    a whole (complete) code system that has codes, or filters ``is-a``/``in`` on a code it
    has. False when that takes more (imports, other filters): not that it is empty."""
    compose = resource.get("compose")
    if not isinstance(compose, Mapping) or compose.get("exclude"):
        return False
    active = compose.get("inactive", True) is False
    for include in compose.get("include") or ():
        system = include.get("system")
        if not isinstance(system, str) or include.get("valueSet"):
            continue
        cs = engine.codesystem(system, include.get("version"))
        if cs is None:
            continue
        found = _candidates(cs, include)
        if any(c is not None and not (active and c.inactive) for c in found):
            return True
    return False


def _candidates(cs: CodeSystemProvider, include: Mapping[str, Any]) -> Iterable[Concept | None]:
    """Concepts one of which, if the code system has it, makes the include hold a code."""
    listed, filters = include.get("concept"), include.get("filter")
    if listed and not filters:
        return (cs.get(str(c.get("code"))) for c in listed)
    if filters and not listed and len(filters) == 1:
        f = filters[0]
        if f.get("property") == "concept" and f.get("op") in ("is-a", "in"):
            return (cs.get(code.strip()) for code in str(f.get("value", "")).split(","))
        return ()
    return iter(cs) if not listed and not filters and cs.is_complete else ()


def _latest_versions(engine: Resolution) -> Callable[[str], str | None]:
    """The version an unversioned include of a code system takes (its latest loaded), per
    code system asked for once."""
    known: dict[str, str | None] = {}

    def latest(system: str) -> str | None:
        if system not in known:
            found = engine.codesystem(system)
            known[system] = None if found is None else found.version
        return known[system]

    return latest


def definition_key(
    resource: Mapping[str, Any], latest: Callable[[str], str | None] | None = None
) -> Hashable | None:
    """The value set's compose normalised (order of includes, excludes, codes and filters
    left out, displays and designations dropped), as sets: equal for two definitions that
    hold the same codes by construction. With ``latest`` (the version an unversioned
    include takes), an include pinned to that very version counts as unversioned: the pin
    cannot change the answer. None when it has no compose (an expansion only)."""
    compose = resource.get("compose")
    if not isinstance(compose, Mapping):
        return None
    return (
        _clauses(compose.get("include") or [], latest),
        _clauses(compose.get("exclude") or [], latest),
        compose.get("inactive", True) is not False,
        compose.get("lockedDate"),
    )


def _clauses(
    clauses: list[Mapping[str, Any]], latest: Callable[[str], str | None] | None
) -> frozenset[Hashable]:
    """The include (or exclude) clauses, each normalised, as a set."""
    return frozenset(
        (
            clause.get("system"),
            _version(clause, latest),
            frozenset(str(c.get("code")) for c in clause.get("concept") or []),
            frozenset(_canonical_json(f) for f in clause.get("filter") or []),
            frozenset(str(v) for v in clause.get("valueSet") or []),
        )
        for clause in clauses
    )


def _version(clause: Mapping[str, Any], latest: Callable[[str], str | None] | None) -> Any:
    """The clause's version; None when it is the one an unversioned include takes."""
    version, system = clause.get("version"), clause.get("system")
    if version is None or latest is None or not isinstance(system, str):
        return version
    return None if version == latest(system) else version


def _canonical_json(value: Any) -> str:
    """JSON with sorted keys: equal for equal values whatever their key order."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
