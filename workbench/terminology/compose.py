"""ValueSet compose semantics: a compiled value set answers membership and expands.

Semantics (FHIR R4 ``ValueSet.compose``, with R5's clarifications):

- A code is in the value set when at least one ``include`` matches it and no ``exclude`` does.
- An include with a ``system`` and nothing else takes every code of the system, which needs a
  code system with ``content = complete``.
- ``concept`` lists name the codes; the value set's ``display`` overrides the code system's.
- ``filter`` entries are ANDed together.
- ``valueSet`` imports are intersected with each other and with the rest of their include:
  ``{system: S, valueSet: [A]}`` means "codes of S that are also in A" (R5 clarified this
  meaning; R4 was ambiguous).
- ``system`` + ``version`` and ``url|version`` imports pin versions; otherwise the latest wins.
- ``compose.inactive = false`` drops inactive codes; when absent or true they stay (flagged).
- A ``concept`` list for a code system that is not loaded is taken as listed (the codes cannot
  be checked against their system); filters or a whole-system include on it are an error.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from contextlib import nullcontext
from itertools import islice
from typing import Any, NamedTuple

from workbench.errors import (
    CodeSystemNotFoundError,
    IncompleteCodeSystemError,
    InvalidResourceError,
    NotPresentCodeSystemError,
)
from workbench.resources import Resource, canonical_of, semver_key
from workbench.terminology import budget
from workbench.terminology.concepts import CodeFilter, Concept, Entry
from workbench.terminology.definition import expansion_parameter
from workbench.terminology.filters import compile_filter
from workbench.terminology.provider import CodeSystemProvider
from workbench.terminology.versions import names


class Match(NamedTuple):
    """The answer of a membership question."""

    found: bool
    display: str | None = None
    concept: Concept | None = None
    cs: CodeSystemProvider | None = None
    # designations the value set lists for the code (compose.include.concept.designation)
    designations: tuple[dict[str, Any], ...] = ()
    # ``deprecated`` or ``withdrawn`` when the include lists the concept marked so
    deprecated: str | None = None


NO_MATCH = Match(False)


class Clause:
    """One compiled ``include`` or ``exclude`` element."""

    def __init__(
        self,
        raw: Mapping[str, Any],
        cs: CodeSystemProvider | None,
        imports: list[CompiledValueSet],
        *,
        exclude: bool,
    ) -> None:
        self.system: str | None = raw.get("system")
        if not self.system and not imports:
            raise InvalidResourceError(
                "A ValueSet include or exclude breaks vsd-1: it needs a system or a valueSet"
            )
        self.version: str | None = raw.get("version")
        self.cs = cs
        self.exclude = exclude
        self.imports = imports
        self.concepts: dict[str, dict[str, Any]] = {
            str(c.get("code")): c for c in raw.get("concept", ()) or ()
        }
        self.filters: list[CodeFilter] = (
            [_compile_filter(cs, f) for f in raw.get("filter", ()) or ()] if cs is not None else []
        )
        self.has_filters = bool(raw.get("filter"))

    @property
    def used_version(self) -> str | None:
        """The code system version this clause draws on (the one loaded, else the one it
        names)."""
        return self.cs.version if self.cs is not None else self.version

    def takes_version(self, version: str) -> bool:
        """True when a coding of ``version`` can be a member through this clause (a clause
        that names no version, or names this one or a pattern it matches)."""
        return self.version is None or self.system is None or names(self.version, version)

    def _missing(self) -> CodeSystemNotFoundError:
        return CodeSystemNotFoundError(str(self.system), self.version)

    def match(self, system: str, code: str) -> Match:
        """Does this clause take the code? With the value set's display and the concept."""
        override: str | None = None
        concept: Concept | None = None
        listed_designations: tuple[dict[str, Any], ...] = ()
        deprecated: str | None = None
        if self.system is not None:
            if system != self.system:
                return NO_MATCH
            if self.cs is None:
                if self.concepts:
                    listed = self.concepts.get(code)
                    if listed is None:
                        return NO_MATCH
                    override = listed.get("display")
                    listed_designations = tuple(listed.get("designation") or ())
                    deprecated = deprecation(listed)
                elif self.has_filters or self.imports or not self.exclude:
                    raise self._missing()
            else:
                if not self.concepts and self.cs.content in UNUSABLE_CONTENT:
                    raise unusable(self.cs)
                concept = self.cs.get(code)
                if concept is None:
                    if self.cs.is_complete or code not in self.concepts or _rejects(self.cs, code):
                        return NO_MATCH
                    override = self.concepts[code].get("display")
                    listed_designations = tuple(self.concepts[code].get("designation") or ())
                    deprecated = deprecation(self.concepts[code])
                else:
                    if self.concepts:
                        listed = self.concepts.get(concept.code)
                        if listed is None:
                            concept = _equivalent(self.cs, concept, self.concepts)
                            listed = self.concepts.get(concept.code) if concept else None
                        if listed is None or concept is None:
                            return NO_MATCH
                        override = listed.get("display")
                        listed_designations = tuple(listed.get("designation") or ())
                        deprecated = deprecation(listed)
                    if not all(f.matches(concept) for f in self.filters):
                        return NO_MATCH
        cs = self.cs
        for imported in self.imports:
            found = imported.contains(system, code)
            if not found.found:
                return NO_MATCH
            override = override or found.display
            concept = concept or found.concept
            cs = cs or found.cs
            listed_designations += found.designations
            deprecated = deprecated or found.deprecated
        return Match(True, override, concept, cs, listed_designations, deprecated)

    def entries(self) -> list[Entry]:
        """Expand this clause (the import intersection applied)."""
        if self.system is None:
            first, *_rest = self.imports
            entries = first.entries()
        else:
            entries = self._system_entries()
        for imported in self.imports if self.system is not None else self.imports[1:]:
            keys = imported.member_index()
            budget.charge(len(entries))
            entries = [e for e in entries if (e.system, e.code) in keys]
        return entries

    def _system_entries(self) -> list[Entry]:
        system = str(self.system)
        cs = self.cs
        if cs is None:
            if not self.concepts or self.has_filters:
                raise self._missing()
            return [
                _listed_entry(system, self.version, code, c) for code, c in self.concepts.items()
            ]
        if self.concepts:
            return self._listed_entries(cs)
        if self.filters:
            return self._filtered_entries(cs)
        if cs.content in UNUSABLE_CONTENT:
            raise unusable(cs)
        if not cs.is_complete and cs.content != "fragment":  # a fragment: what it has
            if not cs.enumerable:  # UCUM: a grammar, not a list
                raise cs.listing_error()
            raise IncompleteCodeSystemError(
                f"CodeSystem {canonical_of(cs.resource)} has content '{cs.content}', but all of "
                "its codes are needed (the value set includes the whole system)"
            )
        budget.charge(len(cs))
        return [_entry(cs, c, None) for c in cs]

    def _listed_entries(self, cs: CodeSystemProvider) -> list[Entry]:
        """The entries of a ``concept`` list over a loaded code system."""
        system = str(self.system)
        budget.charge(len(self.concepts))
        out: list[Entry] = []
        for code, listed in self.concepts.items():
            concept = cs.get(code)
            if concept is None and cs.is_expression(code):
                # a listed post-coordinated expression: as listed, with its terms
                shown = cs.expression_display(code)
                if shown is not None:
                    out.append(Entry(system, cs.version, code, shown, False, False))
                continue
            if concept is None:
                if not cs.is_complete and not _rejects(cs, code):
                    out.append(_listed_entry(system, cs.version, code, listed))
                continue
            designations = tuple(listed.get("designation", ()) or ())
            out.append(_entry(cs, concept, listed.get("display"), designations))
        return out

    def _filtered_entries(self, cs: CodeSystemProvider) -> list[Entry]:
        """The entries the include's filters select (ANDed)."""
        if cs.content in UNUSABLE_CONTENT:
            raise unusable(cs)
        found = cs.filter_entries(self.filters)  # a store: column-wise
        if found is not None:
            return found
        candidates: frozenset[str] | None = None
        for f in self.filters:
            if f.candidates is not None:
                candidates = f.candidates if candidates is None else candidates & f.candidates
        budget.charge(len(candidates) if candidates is not None else len(cs))
        pool: Iterable[Concept] = cs.in_order(candidates) if candidates is not None else cs
        filters = self.filters
        found_entries: list[Entry] = []
        for chunk in _chunks(pool):
            budget.tick()
            found_entries += [
                _entry(cs, c, None) for c in chunk if all(f.matches(c) for f in filters)
            ]
        return found_entries


def _listed_entry(system: str, version: str | None, code: str, listed: Mapping[str, Any]) -> Entry:
    """An entry as the include's ``concept`` lists it (its code system cannot check it)."""
    designations = tuple(listed.get("designation", ()) or ())
    return Entry(system, version, code, listed.get("display"), False, False, designations)


VALUESET_DEPRECATED = "http://hl7.org/fhir/StructureDefinition/valueset-deprecated"
_STANDARDS = "http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status"


def deprecation(listed: Mapping[str, Any]) -> str | None:
    """``deprecated`` or ``withdrawn`` when an include concept is marked so: by its
    standards-status, or by ``valueset-deprecated`` (true as a boolean or a code)."""
    for ext in listed.get("extension", ()) or ():
        if not isinstance(ext, Mapping):
            continue
        if ext.get("url") == _STANDARDS and ext.get("valueCode") in ("deprecated", "withdrawn"):
            return str(ext["valueCode"])
        if ext.get("url") == VALUESET_DEPRECATED:
            value = ext.get("valueBoolean", ext.get("valueCode"))
            if value is True or value == "true":
                return "deprecated"
    return None


def _chunks(items: Iterable[Concept], size: int = 1024) -> Iterator[list[Concept]]:
    """``items`` in lists of ``size`` (a long scan checks the time between them)."""
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


# Code systems whose content a value set cannot be evaluated against (tx ecosystem:
# servers SHALL NOT process $expand or $validate-code on them).
UNUSABLE_CONTENT = ("example", "not-present")


def unusable(cs: CodeSystemProvider) -> IncompleteCodeSystemError:
    """The error for a whole-system include or a filter over an example or not-present code
    system (``NotPresentCodeSystemError`` for the latter: validation answers it)."""
    if cs.content == "not-present":
        return NotPresentCodeSystemError(cs.url, cs.version)
    return IncompleteCodeSystemError(
        f"CodeSystem {canonical_of(cs.resource)} has content '{cs.content}': its codes "
        "cannot be used to expand a value set or validate a code"
    )


def _entry(
    cs: CodeSystemProvider,
    concept: Concept,
    display: str | None,
    extra: tuple[dict[str, Any], ...] = (),
) -> Entry:
    return Entry(
        cs.url,
        cs.version,
        concept.code,
        display or concept.display,
        concept.abstract,
        concept.inactive,
        tuple(concept.designations) + extra,
        concept.definition,
    )


MAX_REMEMBERED = 4096


class CompiledValueSet:
    """A ValueSet ready to answer membership (``contains``) and to expand (``entries``)."""

    def __init__(
        self,
        resource: Resource,
        includes: list[Clause],
        excludes: list[Clause],
        dependencies: frozenset[tuple[str, str]],
    ) -> None:
        self.resource = resource
        self.url: str = str(resource.get("url", ""))
        self.version: str | None = resource.get("version")
        self.includes = includes
        self.excludes = excludes
        compose = resource.get("compose") or {}
        self.inactive_allowed: bool = compose.get("inactive", True) is not False
        self.dependencies = dependencies
        self.canonical = canonical_of(resource)
        self.extras: dict[Hashable, Any] = {}
        self._entries: list[Entry] | None = None
        # set by the engine when it caches this value set: its expansion is then work kept
        self.kept = False
        self._keys: dict[tuple[str, str], Entry] | None = None
        self._systems: list[str] | None = None
        self._pinned: dict[str, str | None] = {}
        self._multi: dict[str, bool] = {}
        self._scopes: list[tuple[Clause, bool]] | None = None
        self._unloaded: list[tuple[str, str | None]] | None = None
        #: ``versionsMatch`` (a ``valueset-expansion-parameter``): True merges the versions
        #: of a code into one entry; False scopes every versioned exclude to its version.
        flag = expansion_parameter(resource, "versionsMatch")
        self.versions_match: bool | None = None if flag is None else str(flag).lower() == "true"
        # Membership answers remembered (up to MAX_REMEMBERED, then forgotten at once): the
        # codes a client checks again and again, and a code checked along many import paths,
        # are decided once for as long as the value set stays compiled.
        self._answers: dict[tuple[str, str, str | None], Match] = {}

    def systems(self) -> list[str]:
        """Return the code systems the value set draws on, in order (imports included)."""
        if self._systems is None:
            found: list[str] = []
            for clause in self.includes:
                names = [clause.system] if clause.system else []
                if not names:
                    for imported in clause.imports:
                        names.extend(imported.systems())
                found.extend(n for n in names if n and n not in found)
            self._systems = found
        return list(self._systems)

    def pinned_version(self, system: str) -> str | None:
        """The version (or version pattern) the includes pin for ``system``, if any."""
        if system in self._pinned:
            return self._pinned[system]
        found: str | None = None
        for clause in self.includes:
            if clause.system == system and clause.version:
                found = clause.version
                break
            for imported in clause.imports if clause.system in (None, system) else ():
                found = imported.pinned_version(system)
                if found:
                    break
            if found:
                break
        self._pinned[system] = found
        return found

    def pinned_versions(self, system: str) -> list[str | None]:
        """The version each include of ``system`` names (None for one that names none),
        imported value sets included."""
        found: list[str | None] = []
        for clause in self.includes:
            if clause.system == system:
                found.append(clause.version)
            for imported in clause.imports if clause.system in (None, system) else ():
                found += imported.pinned_versions(system)
        return found

    def unloaded_versions(self) -> list[tuple[str, str | None]]:
        """``(system, version)`` of each include or exclude, here or in an imported value
        set, whose code system is not loaded in the version it names (or at all)."""
        if self._unloaded is None:
            self._unloaded = [
                (clause.system, clause.version)
                for vs in (self, *self.imported())
                for clause in (*vs.includes, *vs.excludes)
                if clause.system is not None and clause.cs is None
            ]
        return self._unloaded

    def included_versions(self, system: str) -> list[str]:
        """The versions of ``system`` the includes draw on (loaded ones), in reverse order."""
        found = {v for v in self._versions_of(system) if v is not None}
        return sorted(found, reverse=True)

    def _versions_of(self, system: str) -> set[str | None]:
        return {c.used_version for c in self.includes if c.system == system}

    def _several(self, system: str) -> bool:
        """True when the includes draw on more than one version of ``system``."""
        found = self._multi.get(system)
        if found is None:
            found = self._multi[system] = len(self._versions_of(system)) > 1
        return found

    def _scoped(self, exclude: Clause) -> bool:
        """True when a versioned exclude removes codes of its own version only: that
        version is one the includes use (or ``versionsMatch`` is false); otherwise it
        removes the codes it has from every version (c2)."""
        if not exclude.version or exclude.system is None:
            return False
        if self.versions_match is False:
            return True
        return exclude.used_version in self._versions_of(exclude.system)

    def _excluded(self, system: str, version: str | None, code: str) -> bool:
        """True when an exclude takes the code of ``version``."""
        if self._scopes is None:
            self._scopes = [(c, self._scoped(c)) for c in self.excludes]
        for clause, scoped in self._scopes:
            if scoped and clause.used_version != version:
                continue
            if clause.match(system, code).found:
                return True
        return False

    def takes_whole(self, system: str) -> bool:
        """True when an include takes the whole of ``system`` (no concept list, no filter)."""
        return any(
            c.system == system and not c.concepts and not c.has_filters and not c.imports
            for c in self.includes
        )

    def contains(self, system: str, code: str, version: str | None = None) -> Match:
        """Is the code in the value set? With the value set's display override and the
        concept (from the code system version the matching include uses).

        Decided from the compose, without expanding: hierarchy filters use precomputed
        member sets. Inactive codes count only when the compose allows them. When the
        includes draw on several versions of the system, a coding's ``version`` is looked
        up in the includes of that version only, and a code without one in the newest
        version that has it (a4).
        """
        answers = self._answers
        found = answers.get((system, code, version))
        if found is None:
            found = self._contains(system, code, version)
            if len(answers) >= MAX_REMEMBERED:
                answers.clear()
            answers[(system, code, version)] = found
        return found

    def _contains(self, system: str, code: str, version: str | None) -> Match:
        budget.charge(len(self.includes) + len(self.excludes))
        several = self._several(system)
        if not several:  # the usual case: the first include that takes the code
            for clause in self.includes:
                found = clause.match(system, code)
                if found.found:
                    break
            else:
                return NO_MATCH
            if self.excludes:
                used = found.cs.version if found.cs is not None else clause.used_version
                if self._excluded(system, used, code):
                    return NO_MATCH
            if not self.inactive_allowed and found.concept is not None and found.concept.inactive:
                return NO_MATCH
            return found
        candidates: list[tuple[str | None, Match]] = []
        for clause in self.includes:
            if version is not None and not clause.takes_version(version):
                continue
            found = clause.match(system, code)
            if found.found:
                used = found.cs.version if found.cs is not None else clause.used_version
                candidates.append((used, found))
        for used, found in _newest_first(candidates):
            if self.excludes and self._excluded(system, used, code):
                continue
            if not self.inactive_allowed and found.concept is not None and found.concept.inactive:
                continue
            return found
        return NO_MATCH

    def entries(self) -> list[Entry]:
        """Return the whole expansion (every code, in compose order, without duplicates)."""
        if self._entries is None:
            with budget.building() if self.kept else nullcontext():
                self._entries = self._expanded()
        return self._entries

    def _expanded(self) -> list[Entry]:
        """One entry per (system, version, code); one per (system, code) when
        ``versionsMatch`` is true (c1)."""
        seen: dict[tuple[str, str | None, str], Entry] = {}
        merged = self.versions_match is True
        for clause in self.includes:
            for entry in clause.entries():
                version = None if merged else entry.version
                seen.setdefault((entry.system, version, entry.code), entry)
        if self.excludes:
            budget.charge(len(seen) * len(self.excludes))
            for key, entry in list(seen.items()):
                if self._excluded(entry.system, entry.version, entry.code):
                    del seen[key]
        entries = list(seen.values())
        if not self.inactive_allowed:
            entries = [e for e in entries if not e.inactive]
        return entries

    def imported(self) -> list[CompiledValueSet]:
        """Every value set this one imports, directly or not, each once."""
        found: dict[int, CompiledValueSet] = {}
        todo = [inner for clause in (*self.includes, *self.excludes) for inner in clause.imports]
        todo.reverse()
        while todo:  # depth first, each value set once however many paths lead to it
            vs = todo.pop()
            if id(vs) in found:
                continue
            found[id(vs)] = vs
            todo += reversed([i for c in (*vs.includes, *vs.excludes) for i in c.imports])
        return list(found.values())

    def member_index(self) -> dict[tuple[str, str], Entry]:
        """Return the expansion as a hash index ``(system, code) -> Entry``."""
        if self._keys is None:
            self._keys = {(e.system, e.code): e for e in self.entries()}
        return self._keys


def _rejects(cs: CodeSystemProvider, code: str) -> bool:
    """True when a code system that is not listed in full still knows a code is none of
    its codes (UCUM: it does not parse)."""
    return cs.why_unknown(code) is not None


def _equivalent(
    cs: CodeSystemProvider, concept: Concept, listed: Mapping[str, Any]
) -> Concept | None:
    """The listed concept that ``concept`` is the same as, for a code system that says
    when two codes mean the same (UCUM: ``ml`` is the listed ``mL``); else None."""
    found = cs.equivalent_in(concept.code, listed)
    return cs.get(found) if found is not None else None


def _compile_filter(cs: CodeSystemProvider, raw: Mapping[str, Any]) -> CodeFilter:
    """A provider compiles its own filters; else they are tested on its concepts
    (``filters``: the hierarchy, properties, display)."""
    own = cs.compile_filter(raw)
    return own if own is not None else compile_filter(cs, raw)


def _newest_first(
    candidates: list[tuple[str | None, Match]],
) -> list[tuple[str | None, Match]]:
    """Matches in several versions, the newest version first (when they all sort as
    semantic versions; else in compose order)."""
    if len(candidates) < 2:
        return candidates
    keys = [semver_key(v) if v else None for v, _ in candidates]
    if any(k is None for k in keys):
        return candidates
    order = sorted(range(len(candidates)), key=lambda i: keys[i], reverse=True)  # type: ignore[arg-type,return-value]
    return [candidates[i] for i in order]
