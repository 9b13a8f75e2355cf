"""The engine glue of bulk validation: a ``Checker`` answers distinct codes against one
compiled value set with the semantics of ``validate_code``.

Members of the value set that need no further checks (active, not abstract, no display to
compare) are answered from a hash index of the expansion; codes of a case-sensitive code
system outside the expansion go through ``non_members``; every other distinct value goes
through ``validate_in_valueset``, the function ``validate_code`` uses, so a row's result
always equals ``validate_code`` on that row. What a checker learns is kept with the
compiled value set (``Kept``, in the engine's ``memo``) and dropped with it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from workbench.bulk.schema import VALIDATION, Answers
from workbench.bulk.table import AnswerTable
from workbench.bulk.whole import WholeFast, WholeMembers, WholeSystem
from workbench.errors import WorkbenchError
from workbench.terminology.compose import (
    NO_MATCH,
    UNUSABLE_CONTENT,
    Clause,
    CompiledValueSet,
    Match,
)
from workbench.terminology.engine import Terminology
from workbench.terminology.languages import Languages, requested
from workbench.terminology.provider import CodeSystemProvider
from workbench.terminology.validation import (
    CheckOptions,
    ValidationResult,
    non_members,
    validate_in_valueset,
)

if TYPE_CHECKING:
    from workbench.bulk.suggest import Mapper, Suggester

Resolver = Callable[[str, "str | None"], "CodeSystemProvider | None"]
Versions = Callable[[str], "list[str] | None"]
MAX_FOREIGN = 64  # systems outside a value set whose answers are kept (per value set)
Fast = Mapping[tuple[str, str], "str | None"]
Members = Collection[tuple[str, str]]
_NONE = pd.Index([], dtype=object)  # no codes
_SHOWN = np.array([None], dtype=object)  # no displays (then None)


def _weak(found: CodeSystemProvider | None) -> Callable[[], CodeSystemProvider | None]:
    """A reference to ``found`` that does not keep it alive (a replaced code system's
    index is not held by the answers kept for it): called, it gives ``found`` or None."""
    if found is None:
        return lambda: None
    try:
        return weakref.ref(found)
    except TypeError:  # an object without weak references: held
        return lambda: found


class CodeSystemTable:
    """Code system indexes by URL, resolved like the engine resolves them (picklable)."""

    def __init__(self, codesystems: dict[str, CodeSystemProvider]) -> None:
        self.codesystems = codesystems

    def codesystem(self, url: str, version: str | None = None) -> CodeSystemProvider | None:
        """The latest version of a code system, as the engine had it."""
        found = self.codesystems.get(url)
        if found is None or (version is not None and found.version != version):
            return None
        return found


class MembershipIndex(CompiledValueSet):
    """A compiled value set answered from its expansion (a hash index), with the code
    system indexes it needs (``table``).

    It answers ``contains``/``systems``/``canonical``/``inactive_allowed`` like the
    compiled value set it was made from, so ``validate_in_valueset`` gives the same answers
    with it. It is picklable, which is how Dask ships it to its workers.
    """

    def __init__(self, compiled: CompiledValueSet, table: CodeSystemTable) -> None:
        super().__init__(compiled.resource, [], [], compiled.dependencies)
        self.table = table
        self.codesystems = table.codesystems
        self._drawn = compiled.systems()
        self._pins = {s: compiled.pinned_versions(s) for s in self._drawn}
        self._unloaded = compiled.unloaded_versions()
        self._whole = frozenset(s for s in self._drawn if compiled.takes_whole(s))
        self.members: dict[tuple[str, str], Match] = {
            key: compiled.contains(*key) for key in compiled.member_index()
        }

    def systems(self) -> list[str]:
        """The code systems the value set draws on."""
        return list(self._drawn)

    def pinned_version(self, system: str) -> str | None:
        """The version the value set pins for ``system``, if any."""
        return next((v for v in self._pins.get(system, ()) if v), None)

    def pinned_versions(self, system: str) -> list[str | None]:
        """The version each include of ``system`` names (None for one that names none)."""
        return list(self._pins.get(system, ()))

    def takes_whole(self, system: str) -> bool:
        """True when the value set includes the whole of ``system``."""
        return system in self._whole

    def contains(self, system: str, code: str, version: str | None = None) -> Match:
        """Membership from the expansion (for UCUM, a listed unit spelled another way
        is that unit); one entry per code, whatever ``version`` the coding names."""
        found = self.members.get((system, code))
        if found is not None:
            return found
        cs = self.codesystems.get(system)
        if cs is not None and cs.synonymous_codes:
            listed = cs.equivalent_in(code, [c for s, c in self.members if s == system])
            if listed is not None:
                return self.members[(system, listed)]
        return NO_MATCH


@dataclass
class Kept:
    """What bulk validation learns about one compiled value set (per ``abstract`` flag),
    kept with it in the engine's ``memo`` and dropped with it.

    ``fast`` maps plainly valid members (known, active, not abstract unless allowed) to
    their display; ``members`` is the whole expansion, or None when the value set cannot
    be expanded; ``fast_by_system`` and ``member_by_system`` are the same per system as
    hash indexes. ``whole``: for a value set of whole release code systems, each one
    column-wise (``fast`` and ``members`` are then views of them, and a system's codes are
    looked up in its columns). ``tables`` keeps the answers per system (only for the value
    set's own systems, whose changes drop the compiled value set and with it the tables;
    ``None``: codes without a system); ``foreign`` those of other systems, with a weak
    reference to the code system they were answered with.
    """

    fast: Fast = field(default_factory=dict)
    members: Members | None = None
    fast_by_system: dict[str, tuple[pd.Index, np.ndarray]] = field(default_factory=dict)
    member_by_system: dict[str, pd.Index] = field(default_factory=dict)
    tables: dict[str | None, AnswerTable] = field(default_factory=dict)
    foreign: dict[str, tuple[Callable[[], CodeSystemProvider | None], AnswerTable]] = field(
        default_factory=dict
    )
    whole: dict[str, WholeSystem] = field(default_factory=dict)

    @classmethod
    def of(cls, compiled: CompiledValueSet, abstract: bool) -> Kept:
        """Its plainly valid members and its expansion (raises WorkbenchError when the
        value set cannot be expanded): column-wise for whole release code systems."""
        found = _whole_systems(compiled, abstract)
        if found is not None:
            return found
        return cls(fast_members(compiled, abstract), frozenset(compiled.member_index()))

    def __getstate__(self) -> dict[str, object]:
        """Pickled (Dask ships a checker) without the answers of systems outside the value
        set: they hold weak references, and are only a cache."""
        return {**self.__dict__, "foreign": {}}


@dataclass
class Checker:
    """Validates distinct codings against one value set.

    ``kept`` holds what it learns (see ``Kept``). Anything that is not a plainly valid
    member goes through ``validate_in_valueset`` or ``non_members``, the functions
    ``validate_code`` itself uses.
    """

    valueset: CompiledValueSet
    resolve: Resolver
    abstract: bool
    kept: Kept = field(default_factory=lambda: Kept(), repr=False)
    versions: Versions | None = field(default=None, repr=False)
    languages: Languages | None = field(default=None, repr=False)

    @property
    def fast(self) -> Fast:
        """Plainly valid members and their display."""
        return self.kept.fast

    @property
    def members(self) -> Members | None:
        """The whole expansion (None: the value set cannot be expanded)."""
        return self.kept.members

    @property
    def tables(self) -> dict[str | None, AnswerTable]:
        """The answer tables of the value set's own systems (and of codes without one)."""
        return self.kept.tables

    def check(
        self, system: str | None, code: str, display: str | None, version: str | None = None
    ) -> ValidationResult:
        """Validate one coding, as ``validate_code`` does."""
        if display is None and system is not None and version is None:
            key = (system, code)
            if key in self.fast:
                return ValidationResult(True, None, self.fast[key], code=code, system=system)
        return self.check_in_full(system, code, display, version)

    def check_in_full(
        self, system: str | None, code: str, display: str | None, version: str | None = None
    ) -> ValidationResult:
        """Validate one coding that is not a plainly valid member (``check`` without its
        shortcut)."""
        return validate_in_valueset(
            self.valueset,
            self.resolve,
            code=code,
            system=system,
            version=version,
            display=display,
            options=CheckOptions(abstract=self.abstract, languages=self.languages),
            versions=self.versions,
        )

    def table(self, system: str | None) -> AnswerTable:
        """The answers for codes of ``system``, kept across calls. ``None``: codes given
        without a system, whose system is inferred from the value set alone.

        The answers for a system the value set does not draw on depend on that code system
        alone (which a change does not drop the compiled value set for): they are kept
        with the code system index they were answered with, and start afresh when the
        system resolves to another one (loaded, replaced, or gone); up to
        ``MAX_FOREIGN`` such systems per value set, any more are answered per call."""
        tables, foreign = self.kept.tables, self.kept.foreign
        found = tables.get(system)
        if found is not None:
            return found
        if system is None:
            return tables.setdefault(None, AnswerTable(None, self.answer_inferred, VALIDATION))
        fresh = AnswerTable(system, partial(self.answer, system), VALIDATION)
        if system in set(self.valueset.systems()):
            return tables.setdefault(system, fresh)
        cs = self.resolve(system, None)
        kept = foreign.get(system)
        if kept is not None and kept[0]() is cs:
            return kept[1]
        if kept is not None or len(foreign) < MAX_FOREIGN:
            foreign[system] = (_weak(cs), fresh)
        return fresh

    def answer_inferred(self, codes: np.ndarray) -> Answers:
        """Validate distinct codes given without a system (str, none missing)."""
        return Answers.of_rows(VALIDATION, [self.check(None, str(code), None) for code in codes])

    def _member_index(self, system: str) -> pd.Index:
        """The codes of one system that are in the expansion, as a hash index."""
        found = self.kept.member_by_system.get(system)
        if found is None:
            if self.kept.whole:  # a system outside them (theirs are read column-wise)
                found = _NONE
            else:
                members = self.members or frozenset()
                found = pd.Index([c for s, c in members if s == system], dtype=object)
            self.kept.member_by_system[system] = found
        return found

    def _fast_index(self, system: str) -> tuple[pd.Index, np.ndarray]:
        found = self.kept.fast_by_system.get(system)
        if found is None:
            if self.kept.whole:  # a system outside them (theirs are read column-wise)
                found = (_NONE, _SHOWN)
            else:
                pairs = [(c, d) for (s, c), d in self.fast.items() if s == system]
                index = pd.Index([c for c, _ in pairs], dtype=object)
                shown = np.array([d for _, d in pairs] + [None], dtype=object)
                found = (index, shown)
            self.kept.fast_by_system[system] = found
        return found

    def _fast_hits(
        self, system: str, codes: np.ndarray, answers: Answers
    ) -> tuple[np.ndarray, Callable[[np.ndarray], np.ndarray]]:
        """Answer the plainly valid codes (valid, with their display); return which they
        are, and a test of which codes at given positions are not members (when the
        value set can be expanded)."""
        whole = self.kept.whole.get(system)
        if whole is not None:  # looked up in the system's columns
            rows = whole.rows(codes)
            hit = whole.plain_at(rows)
            answers["display"][hit] = whole.shown(rows[hit])
            answers["result"][hit] = 1
            return hit, lambda at: ~whole.listed_at(rows[at])
        index, shown = self._fast_index(system)
        position = index.get_indexer(pd.Index(codes, dtype=object, copy=False))
        hit = position >= 0
        answers["result"][hit] = 1
        answers["display"][hit] = shown[position[hit]]

        def outside(at: np.ndarray) -> np.ndarray:
            members = self._member_index(system)
            if len(members) == len(index):
                # every member of this system is plainly valid, so no other code is a member
                return np.ones(len(at), dtype=bool)
            return members.get_indexer(pd.Index(codes[at], dtype=object)) < 0

        return hit, outside

    def answer(self, system: str, codes: np.ndarray) -> Answers:
        """Validate distinct codes of one system (str, none missing), without displays."""
        answers = Answers.blank(VALIDATION, len(codes), system=system)
        hit, not_members = self._fast_hits(system, codes, answers)
        rest = np.flatnonzero(~hit)
        cs = self.resolve(system, None)
        vs = self.valueset
        if (
            cs is not None
            and cs.case_sensitive
            and self.members is not None
            and not cs.synonymous_codes  # UCUM: ml is a listed mL
        ):
            outside = not_members(rest)
            outside &= ~_expressions(cs, codes[rest])  # checked in full, one by one
            chosen = rest[outside]
            context = f"the value set {vs.canonical}"
            reasons, messages, displays = non_members(
                context, cs, system, codes[chosen].tolist(), vs.inactive_allowed
            )
            answers["issue"][chosen] = reasons
            answers["message"][chosen] = messages
            answers["display"][chosen] = displays
            rest = rest[~outside]
        # not plainly valid members (``fast``): checked in full
        answers.put(rest, [self.check_in_full(system, str(codes[i]), None) for i in rest])
        return answers


def _expressions(cs: CodeSystemProvider, codes: np.ndarray) -> np.ndarray:
    """Which codes a compositional provider takes as post-coordinated expressions (all
    False for any other code system); only codes that are not plain digits are asked."""
    found = np.zeros(len(codes), dtype=bool)
    if not cs.expressions or not len(codes):
        return found
    text = pd.Series(codes, dtype=object)
    plain = text.str.isdigit().fillna(True).to_numpy(dtype=bool)
    for i in np.flatnonzero(~plain):
        found[i] = cs.is_expression(str(codes[i]))
    return found


def fast_members(compiled: CompiledValueSet, abstract: bool) -> Fast:
    """Members whose validation is plainly valid: a known, active, not deprecated concept (not
    abstract unless allowed). Their display is the value set's display, else the concept's."""
    fast: dict[tuple[str, str], str | None] = {}
    if compiled.includes and all(_from_a_release(c) for c in compiled.includes):
        # every member comes from a release store's own concepts (no listed codes, no
        # imports, no value-set displays): its expansion entry already says it all
        return {
            key: e.display
            for key, e in compiled.member_index().items()
            if not e.inactive and (abstract or not e.abstract)
        }
    for key in compiled.member_index():
        match = compiled.contains(*key)
        concept = match.concept
        if concept is None or concept.inactive or (concept.abstract and not abstract):
            continue
        if concept.status == "deprecated":  # valid, with a warning: the full check says it
            continue
        fast[key] = match.display or concept.display
    return fast


def _whole_systems(compiled: CompiledValueSet, abstract: bool) -> Kept | None:
    """``Kept.of`` for a value set that includes whole release code systems (nothing
    listed, filtered, imported or excluded), read column-wise from their stores
    (``WholeSystem``) rather than expanded concept by concept: every concept is a member
    (an inactive one only when the value set allows them), and a plainly valid one shows
    its concept's display, as its expansion entry would. None for any other value set."""
    providers = [c.cs for c in compiled.includes if c.system and _from_a_release(c)]
    if (
        compiled.excludes
        or not compiled.includes
        or len(providers) < len(compiled.includes)
        or not all(compiled.takes_whole(str(c.system)) for c in compiled.includes)
    ):
        return None
    whole: dict[str, WholeSystem] = {}
    for cs in providers:
        assert cs is not None
        if cs.content in UNUSABLE_CONTENT or not cs.is_complete or not cs.enumerable:
            return None  # expanding it fails: the engine says why
        if cs.url in whole:  # two versions of one system
            return None
        found = WholeSystem.read(cs, abstract, compiled.inactive_allowed)
        if found is None:
            return None
        whole[cs.url] = found
    return Kept(WholeFast(whole), WholeMembers(whole), whole=whole)


def _from_a_release(clause: Clause) -> bool:
    """An include whose members are exactly a release provider's filtered concepts."""
    return (
        clause.cs is not None
        and clause.cs.plain_entries
        and not clause.concepts
        and not clause.imports
    )


def value_set_languages(compiled: CompiledValueSet) -> Languages | None:
    """The display languages a value set names itself (its expansion-parameter extension or
    its ``language``), as ``validate_code`` applies them without a request language."""
    return requested(None, compiled.resource, None, wildcard=False)


# --- made from the engine ----------------------------------------------------------------


def _kept(compiled: CompiledValueSet, abstract: bool) -> Kept:
    """``Kept.of``, or for a value set that cannot be expanded (all of a grammar such as
    BCP-47 or UCUM) an empty ``Kept``: every code goes through the full check, and its
    answers are kept with the compiled value set all the same."""
    try:
        return Kept.of(compiled, abstract)
    except WorkbenchError:
        return Kept()


def make_checker(engine: Terminology, valueset: str | Mapping[str, Any], abstract: bool) -> Checker:
    """A checker over the engine itself (pandas and polars): what it learns is kept with
    the compiled value set."""
    compiled = engine.compiled(valueset)
    kept = engine.memo(compiled, (Kept, abstract), partial(_kept, compiled, abstract))
    wanted = value_set_languages(compiled)
    if wanted:  # displays depend on the language: every member goes through the check
        kept = Kept(members=kept.members, tables=kept.tables, foreign=kept.foreign)
    return Checker(
        compiled,
        engine.codesystem,
        abstract,
        kept,
        versions=engine.codesystem_versions,
        languages=wanted,
    )


def loaded_codesystems(engine: Terminology) -> dict[str, CodeSystemProvider]:
    """Every loaded code system (its latest version) by URL: resources and releases."""
    codesystems: dict[str, CodeSystemProvider] = {}
    for resource in engine.registry.all("CodeSystem"):
        url = resource.get("url")
        if url and url not in codesystems:
            found = engine.codesystem(url)
            if found is not None:
                codesystems[url] = found
    for provider in engine.providers():  # code systems loaded from release files
        codesystems.setdefault(provider.url, provider)
    return codesystems


def make_shippable_checker(
    engine: Terminology, valueset: str | Mapping[str, Any], abstract: bool
) -> Checker:
    """A picklable checker (the Dask path): the expansion index and every loaded code system.

    A value set that cannot be expanded is shipped as its compiled compose instead, so
    its rows get the same answers as on pandas.
    """
    compiled = engine.compiled(valueset)
    table = CodeSystemTable(loaded_codesystems(engine))
    versions = {url: engine.codesystem_versions(url) for url in table.codesystems}.get
    wanted = value_set_languages(compiled)
    try:
        index = MembershipIndex(compiled, table)
    except WorkbenchError:
        # Not expandable (a code system it needs is missing): ship the compose itself, as
        # validate_code uses it. Its filters are closures, which Dask serialises with
        # cloudpickle.
        return Checker(compiled, table.codesystem, abstract, versions=versions, languages=wanted)
    fast = {} if wanted else fast_members(compiled, abstract)
    kept = Kept(fast, frozenset(index.members))
    return Checker(index, table.codesystem, abstract, kept, versions=versions, languages=wanted)


def make_suggester(engine: Terminology, valueset: str | Mapping[str, Any]) -> Suggester:
    """The "did you mean" source for a column report over ``valueset``: its members by code
    system (when it can be expanded), else whole code systems, and every loaded code system
    URL with its title (for unknown systems). Nothing is computed before it is asked
    (rapidfuzz is imported then)."""
    from workbench.bulk.suggest import Suggester

    def members() -> dict[str, list[tuple[str, str | None]]] | None:
        found: dict[str, list[tuple[str, str | None]]] = {}
        try:
            compiled = engine.compiled(valueset)
            for (system, code), entry in compiled.member_index().items():
                found.setdefault(system, []).append((code, entry.display))
        except WorkbenchError:
            return None
        return found

    def titles() -> dict[str, str | None]:
        found: dict[str, str | None] = {}
        for resource in engine.registry.all("CodeSystem"):
            if resource.get("url"):
                found.setdefault(
                    str(resource["url"]), resource.get("title") or resource.get("name")
                )
        for provider in engine.providers():
            found.setdefault(provider.url, None)
        return found

    def opaque(system: str) -> bool:
        found = engine.codesystem(system)
        return found is not None and found.opaque_codes

    return Suggester(members, engine.codesystem, titles, mapped=map_matches(engine), opaque=opaque)


def map_matches(engine: Terminology) -> Mapper:
    """``mapped(system, code)`` over the loaded ConceptMaps whose groups start or end in
    ``system``: their matches for ``code``, forwards and (a map read backwards) in reverse,
    each ``(equivalence, system, code, display, map)``; target displays from the loaded code
    systems, as ``$translate`` shows them."""
    from workbench.terminology.conceptmap import translate

    by_system: dict[str, list[Any]] = {}

    def display_of(system: str, code: str) -> str | None:
        found = engine.codesystem(system)
        concept = found.get(code) if found is not None else None
        return concept.display if concept is not None else None

    def mapped(system: str, code: str) -> list[tuple[str, str, str, str | None, str]]:
        if system not in by_system:
            by_system[system] = [
                cm
                for cm in engine.registry.all("ConceptMap")
                if any(system in (g.get("source"), g.get("target")) for g in cm.get("group", []))
            ]
        matches = []
        for reverse in (False, True):
            if not by_system[system]:
                break
            found = translate(
                by_system[system], code=code, system=system, reverse=reverse, display_of=display_of
            )
            matches += [
                (m.equivalence, m.system, m.code, m.display, m.source)
                for m in found.match_list
                if m.system and m.code
            ]
        return matches

    return mapped
