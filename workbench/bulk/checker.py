"""The engine glue of bulk validation: a ``Checker`` has distinct codes answered by the
engine's own decision, ``batch.CodingCheck`` (what ``validate_code`` runs), and keeps the
answers per system in ``AnswerTable``s.

A column asks ``CodingCheck.codes`` for each batch of distinct codes of one system (the
plainly valid members at once, from the value set's ``PlainMembers``, the others one by
one), and ``CodingCheck.settled`` for a coding with a display or a version: no code here
decides a key. The answer tables are kept with the compiled value set (the engine's
``memo``) and dropped with it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.bulk.schema import VALIDATION, Answers
from workbench.bulk.table import AnswerTable
from workbench.errors import WorkbenchError
from workbench.terminology.compose import CompiledValueSet
from workbench.terminology.concept_check import CheckOptions
from workbench.terminology.engine import Terminology
from workbench.terminology.provider import CodeSystemProvider
from workbench.terminology.requests import ValidateRequest
from workbench.terminology.result import ValidationResult
from workbench.terminology.validate.batch import CodingCheck
from workbench.terminology.validate.plain import whole_members

if TYPE_CHECKING:
    from workbench.bulk.suggest import Mapper, Suggester

MAX_FOREIGN = 64  # systems outside a value set whose answers are kept (per value set)
_FLAGS = {True: 1, False: 0, None: -1}


def _weak(found: CodeSystemProvider | None) -> Callable[[], CodeSystemProvider | None]:
    """A reference to ``found`` that does not keep it alive (a replaced code system's
    index is not held by the answers kept for it): called, it gives ``found`` or None."""
    if found is None:
        return lambda: None
    try:
        return weakref.ref(found)
    except TypeError:  # an object without weak references: held
        return lambda: found


@dataclass
class Kept:
    """The answers of one value set under one request's switches, kept with its compiled
    value set (the engine's ``memo``) and dropped with it: ``tables`` per system of the
    value set (``None``: codes without a system), ``foreign`` for other systems, each with
    a weak reference to the code system it was answered with."""

    tables: dict[str | None, AnswerTable] = field(default_factory=dict)
    foreign: dict[str, tuple[Callable[[], CodeSystemProvider | None], AnswerTable]] = field(
        default_factory=dict
    )


@dataclass
class Checker:
    """Answers distinct codings against one value set with ``validate_code``'s decision
    (``coding_check``), keeping the answers per system (``kept``)."""

    coding_check: CodingCheck
    resolve: Callable[[str, str | None], CodeSystemProvider | None]
    kept: Kept = field(default_factory=Kept, repr=False)

    @property
    def valueset(self) -> CompiledValueSet:
        """The compiled value set."""
        return self.coding_check.base

    @property
    def tables(self) -> dict[str | None, AnswerTable]:
        """The answer tables of the value set's own systems (and of codes without one)."""
        return self.kept.tables

    def check(
        self, system: str | None, code: str, display: str | None, version: str | None = None
    ) -> ValidationResult:
        """One coding (its system inferred when None), as ``validate_code`` answers it."""
        parts = {"code": code, "system": system, "version": version, "display": display}
        return self.coding_check.settled(parts, "", coding=False)

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
        fresh = AnswerTable(system, partial(self.answer, system), VALIDATION)
        if system is None or system in set(self.valueset.systems()):
            return tables.setdefault(system, fresh)
        cs = self.resolve(system, None)
        kept = foreign.get(system)
        if kept is not None and kept[0]() is cs:
            return kept[1]
        if kept is not None or len(foreign) < MAX_FOREIGN:
            foreign[system] = (_weak(cs), fresh)
        return fresh

    def answer(self, system: str | None, codes: np.ndarray) -> Answers:
        """The answers of distinct codes of one system (str, none missing; ``system``
        None: inferred), without displays: ``CodingCheck.codes``."""
        decided = self.coding_check.codes(system, codes)
        answers = Answers.blank(VALIDATION, len(codes))
        for column in VALIDATION.columns:
            values = decided.column(column.name)
            if column.kind == "result":
                values = np.fromiter((_FLAGS[v] for v in values), np.int8, len(values))
            answers.columns[column.name] = values
        return answers


def make_checker(
    engine: Terminology, valueset: str | Mapping[str, Any], abstract: bool | None
) -> Checker:
    """A checker over ``engine`` for ``valueset`` as ``validate_code`` would check it with
    ``abstract`` (None or True: abstract codes are valid where the value set has them):
    what it answers is kept with the compiled value set."""
    request = ValidateRequest(valueset=valueset, options=CheckOptions(abstract=abstract))
    check = engine.coding_check(request)
    key = (Kept, check.opts.abstract is False)
    kept = engine.memo(check.base, key, Kept)
    return Checker(check, engine.codesystem, kept)


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
            whole = whole_members(compiled)  # whole releases: from their columns
            if whole is not None:
                return whole
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
