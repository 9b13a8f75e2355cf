"""ValueSet $expand on the terminology engine: paging, text filter, languages,
designations, properties and nesting of an expansion."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

from workbench.errors import (
    CodeSystemNotFoundError,
    ExpandCodeSystemNotFoundError,
    InvalidRequestError,
    ValueSetDefinitionNotFoundError,
    ValueSetNotFoundError,
    VersionCheckError,
)
from workbench.terminology import budget, languages, supplements
from workbench.terminology.compose import CompiledValueSet, Entry
from workbench.terminology.expand.expansion import (
    MAXIMUM_EXPANSION,
    Expansion,
    designations_kept,
    echoed_parameters,
)
from workbench.terminology.requests import ExpandRequest
from workbench.terminology.resolution import Resolution
from workbench.terminology.textindex import TextIndex
from workbench.terminology.validate.versions import version_error
from workbench.terminology.versions import matches as version_matches


class Expanding(Resolution):
    """$expand over the resolved value sets (a part of ``Terminology``)."""

    def expand(self, req: ExpandRequest) -> Expansion:
        """Expand a value set; see ``Workbench.expand``."""
        if req.offset < 0:
            raise InvalidRequestError(f"offset must be 0 or more, not {req.offset}")
        if req.count is not None and req.count < 0:
            raise InvalidRequestError(f"count must be 0 or more, not {req.count}")
        policy = req.policy
        try:
            compiled = self.compiled(req.valueset, req.version, policy)
        except ValueSetDefinitionNotFoundError:
            raise
        except ValueSetNotFoundError as exc:  # e1: not-found, as tx.fhir.org answers
            raise ValueSetDefinitionNotFoundError(exc.url, context=exc.context) from exc
        asked = [*req.use_supplements, *supplements.valueset_supplements(compiled.resource)]
        if asked:
            self.require_supplements(asked, f"the expansion of {compiled.canonical}")
        self._check_include_versions(compiled, req)
        try:
            entries: Sequence[Entry] = compiled.entries()
        except ExpandCodeSystemNotFoundError:
            raise
        except CodeSystemNotFoundError as exc:  # as tx.fhir.org says it (UNKNOWN_CODESYSTEM_EXP)
            raise ExpandCodeSystemNotFoundError(exc.url, exc.version) from exc
        params = echoed_parameters(req)
        if req.filter:
            entries = self._text_filtered(compiled, req.filter, entries)
        if req.active_only:
            entries = [e for e in entries if not e.inactive]
        if req.filter:
            params.append(("filter", req.filter))
        if req.include_designations or req.display_language:
            entries = self._from_providers(entries, req.include_designations, req.display_language)
        wanted = languages.requested(
            req.display_language, compiled.resource, req.accept_language, wildcard=True
        )
        if wanted:
            entries = [self._shown(e, wanted) for e in entries]
            params.append(("displayLanguage", wanted.text))
        if req.designations:
            entries = designations_kept(entries, req.designations)
            params += [("designation", t) for t in req.designations]
        used = sorted({(e.system, e.version) for e in entries if e.system} | _drawn(compiled))
        for system, checked in policy.check.items():
            wrong = [v for s, v in used if s == system and v and not version_matches(checked, v)]
            if wrong:  # b3
                raise VersionCheckError(version_error(system, wrong[0], checked))
        params += [("used-codesystem", f"{s}|{v}" if v else s) for s, v in used]
        fragments = self._fragments(used)
        params += [("used-fragment", f) for f in fragments]
        params += [("used-valueset", vs.canonical) for vs in compiled.imported() if vs.url]
        return Expansion(
            valueset=compiled.resource,
            entries=tuple(entries),
            offset=req.offset,
            count=req.count,
            parameters=tuple(params),
            include_designations=req.include_designations,
            include_definition=req.include_definition,
            properties=self._properties(entries, req.properties) if req.properties else {},
            parents=self._parents(entries) if req.exclude_nested is False else None,
            max_size=max(self.max_expansion, MAXIMUM_EXPANSION)
            if req.allow_maximum_size
            else self.max_expansion,
            unclosed=tuple(f"based on a fragment of the code system {f}" for f in fragments),
        )

    def _check_include_versions(self, compiled: CompiledValueSet, req: ExpandRequest) -> None:
        """Raise ExpandCodeSystemNotFoundError (404 not-found) when an include or exclude
        names a version of a code system that is not loaded while others are (b1, e1);
        before the version check, which it wins over."""
        for system, pinned in compiled.unloaded_versions():
            wanted = req.policy.resolve(system, pinned)
            known = self.codesystem_versions(system) if wanted else []
            if known:
                raise ExpandCodeSystemNotFoundError(system, str(wanted), known)

    def _fragments(self, used: Sequence[tuple[str, str | None]]) -> list[str]:
        """The ``url|version`` of each code system used that is only a fragment."""
        found = []
        for system, version in used:
            cs = self.codesystem(system, version)
            if cs is not None and cs.content == "fragment":
                found.append(f"{system}|{version}" if version else system)
        return found

    def _text_filtered(
        self, compiled: CompiledValueSet, text: str, entries: Sequence[Entry]
    ) -> list[Entry]:
        """The entries whose code or display contains every word of ``text``, through the
        value set's text index (built once while it is cached)."""
        with budget.building() if compiled.kept else nullcontext():
            index = self.memo(compiled, "text-index", lambda: TextIndex(entries))
        return [entries[i] for i in index.search(text)]

    def _shown(self, entry: Entry, wanted: languages.Languages) -> Entry:
        """The entry with its display in the wanted languages (None when there is none and
        the request allows no other language)."""
        cs = self.codesystem(entry.system, entry.version)
        if cs is None:
            shown = languages.display_in(wanted, entry.display, None, entry.designations)
        else:
            shown = cs.display_for(entry.code, entry.display, entry.designations, wanted)
        return entry._replace(display=shown)

    def _parents(self, entries: Sequence[Entry]) -> dict[tuple[str, str], tuple[str, str]]:
        """For a nested expansion: each entry's parent among the entries (its first parent
        in the code system's hierarchy that is itself in the expansion)."""
        members = {(e.system, e.code) for e in entries}
        found: dict[tuple[str, str], tuple[str, str]] = {}
        for e in entries:
            cs = self.codesystem(e.system, e.version)
            concept = cs.get(e.code) if cs is not None else None
            for parent in concept.parents if concept is not None else ():
                if (e.system, parent) in members:
                    found[(e.system, e.code)] = (e.system, parent)
                    break
        return found

    def _properties(
        self, entries: Sequence[Entry], wanted: Sequence[str]
    ) -> dict[tuple[str, str], tuple[tuple[str, str, Any], ...]]:
        """The requested concept properties of each entry: ``(code, value[x] key, value)``."""
        found: dict[tuple[str, str], tuple[tuple[str, str, Any], ...]] = {}
        names = set(wanted)
        for e in entries:
            cs = self.codesystem(e.system, e.version)
            concept = cs.get(e.code) if cs is not None else None
            if concept is None:
                continue
            values: list[tuple[str, str, Any]] = []
            for name in wanted:
                for value in concept.properties.get(name, ()):
                    values.append((name, concept.value_keys.get(name, "valueString"), value))
            if "definition" in names and concept.definition:
                values.append(("definition", "valueString", concept.definition))
            if "inactive" in names and "inactive" not in concept.properties:
                values.append(("inactive", "valueBoolean", concept.inactive))
            if "parent" in names and "parent" not in concept.properties:
                values += [("parent", "valueCode", p) for p in concept.parents]
            if values:
                found[(e.system, e.code)] = tuple(values)
        return found

    def _from_providers(
        self, entries: Sequence[Entry], designations: bool, language: str | None
    ) -> list[Entry]:
        """Entries of release code systems read their designations (and their display in a
        language or dialect) from the provider only when an expansion asks for them."""
        out = []
        for e in entries:
            cs = self.codesystem(e.system, e.version) if e.system in self._providers else None
            if cs is not None:
                if designations and not e.designations:
                    e = e._replace(designations=tuple(cs.designations_of(e.code)))
                if language:
                    shown = cs.display_in(e.code, language)
                    if shown:
                        e = e._replace(display=shown)
            out.append(e)
        return out


def _drawn(compiled: CompiledValueSet) -> set[tuple[str, str | None]]:
    """``(system, version)`` of each loaded code system an include draws on, here or in an
    imported value set: used, as tx.fhir.org reports them, even when none of its codes is
    left (an exclude took them all, a filter found none)."""
    return {
        (clause.system, clause.used_version)
        for vs in (compiled, *compiled.imported())
        for clause in vs.includes
        if clause.system and clause.cs is not None
    }
