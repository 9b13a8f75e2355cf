"""The plainly valid members of a value set: the codes ``validate_code`` answers valid with
nothing to say (no display given, no version, no switch or language that adds a check).

``plain_result`` is the rule, for one coding located in a value set: ``validate_in_valueset``
answers with it when it applies. ``PlainMembers`` applies the very same rule to every member
of a compiled value set at once (the expansion as one hash index per system, or a whole
release code system read column-wise from its store), so that a batch of codes is answered
with one vectorised lookup instead of a Python call per code: the fast path of the engine's
own batch (``batch.CodingCheck.codes``), never a rule of its own.

>>> from workbench import Workbench
>>> wb = Workbench()
>>> _ = wb.load({"resourceType": "CodeSystem", "url": "http://x", "content": "complete",
...     "concept": [{"code": "a", "display": "A"}, {"code": "b", "display": "B",
...     "property": [{"code": "status", "valueCode": "deprecated"}]}]})
>>> compiled = wb.terminology.compiled(
...     {"resourceType": "ValueSet", "compose": {"include": [{"system": "http://x"}]}})
>>> members = PlainMembers.of(compiled, CheckOptions())
>>> members.get("http://x", "a"), members.get("http://x", "b")
(Plain(display='A', version=None), None)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from workbench.terminology.compose import UNUSABLE_CONTENT, Clause, CompiledValueSet, Match
from workbench.terminology.concept_check import CheckOptions
from workbench.terminology.provider import CodeSystemProvider
from workbench.terminology.result import ValidationResult
from workbench.terminology.validate.whole import WholeSystem

_NO_CODES = pd.Index([], dtype=object)
_NOTHING = np.empty(0, dtype=object)


class Plain(NamedTuple):
    """A plainly valid member's answer: the display it shows and the code system version
    that has it."""

    display: str | None
    version: str | None


def plain_options(vs: CompiledValueSet, opts: CheckOptions) -> bool:
    """Whether the switches of a validation leave plainly valid members plain: no display
    languages (they choose the display), no version to check, force or default, and no
    version the value set's includes name that is not loaded (each code is refused then)."""
    return not (
        opts.languages
        or opts.check_versions
        or opts.force_versions
        or opts.default_versions
        or vs.unloaded_versions()
    )


def plain_member(match: Match, code: str, opts: CheckOptions) -> Plain | None:
    """The answer of a coding of ``code`` without display and version that the value set
    holds as ``match`` (``CompiledValueSet.contains``), when that answer is plainly valid:
    a concept of its code system under this very code, active, not deprecated (in the code
    system or in the value set), not abstract unless abstract codes are allowed, of a code
    system that does not need a version. None when ``validate_in_valueset`` has more to
    say (or something else to say) about it."""
    concept, cs = match.concept, match.cs
    if not match.found or concept is None or cs is None or concept.code != code:
        return None
    if concept.inactive or concept.status == "deprecated" or match.deprecated is not None:
        return None
    if concept.abstract and opts.abstract is False and not opts.membership_only:
        return None
    if cs.resource.get("versionNeeded") is True:
        return None
    return Plain(match.display or concept.display, cs.version)


def plain_result(plain: Plain, code: str, system: str) -> ValidationResult:
    """The answer ``validate_in_valueset`` gives a plainly valid member (the status notes
    about the resources used are added by the caller, as for every answer)."""
    return ValidationResult(True, None, plain.display, code, system, plain.version)


Found = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class _Indexed:
    """The plainly valid members of one system: their codes as a hash index, with each
    one's display and version; ``members``: every member code of the system."""

    codes: pd.Index
    displays: np.ndarray
    versions: np.ndarray
    members: pd.Index

    def lookup(self, codes: np.ndarray) -> Found:
        asked = pd.Index(codes, dtype=object, copy=False)
        position = self.codes.get_indexer(asked)
        hit = position >= 0
        at = position[hit]
        displays = np.empty(len(codes), dtype=object)
        versions = np.empty(len(codes), dtype=object)
        displays[hit] = self.displays[at]
        versions[hit] = self.versions[at]
        outside = np.zeros(len(codes), dtype=bool)
        rest = np.flatnonzero(~hit)
        if len(rest):
            outside[rest] = self.members.get_indexer(asked[rest]) < 0
        return hit, displays, versions, outside


class PlainMembers:
    """Every plainly valid member of a compiled value set under some switches (see
    ``plain_member``), by system: ``lookup`` answers many codes of one system at once.

    Built from the expansion (each member located as ``contains`` locates it, then
    ``plain_member``), or, for a value set of whole release code systems, from their
    stores' columns (``WholeSystem``: the same rule over Arrow columns). Made once per
    compiled value set and switches, and kept with it (``Terminology.memo``).
    """

    def __init__(
        self, systems: Mapping[str, _Indexed | WholeSystem], *, complete: bool = True
    ) -> None:
        self.systems = systems
        #: Whether every member is known (False: the value set could not be expanded, or
        #: its members are not indexed, and no code is known to be outside it).
        self.complete = complete

    @classmethod
    def of(cls, vs: CompiledValueSet, opts: CheckOptions) -> PlainMembers:
        """The plainly valid members of ``vs`` (raises WorkbenchError when it cannot be
        expanded; empty when ``opts`` leave no member plain)."""
        if not plain_options(vs, opts):
            return cls({}, complete=False)
        whole = _whole_systems(vs, opts)
        if whole is not None:
            return cls(whole)
        found: dict[str, tuple[list[str], list[str | None], list[str | None]]] = {}
        members: dict[str, list[str]] = {}
        for system, code in vs.member_index():
            members.setdefault(system, []).append(code)
            plain = plain_member(vs.contains(system, code), code, opts)
            if plain is not None:
                codes, displays, versions = found.setdefault(system, ([], [], []))
                codes.append(code)
                displays.append(plain.display)
                versions.append(plain.version)
        return cls(
            {
                system: _Indexed(
                    pd.Index(codes, dtype=object),
                    np.array(displays, dtype=object),
                    np.array(versions, dtype=object),
                    pd.Index(members[system], dtype=object),
                )
                for system, (codes, displays, versions) in found.items()
            }
            | {
                system: _Indexed(_NO_CODES, _NOTHING, _NOTHING, pd.Index(codes, dtype=object))
                for system, codes in members.items()
                if system not in found
            }
        )

    def lookup(self, system: str, codes: np.ndarray) -> Found:
        """Which of ``codes`` (an object array of str) are plainly valid members of
        ``system``, with the display and the version of each (None elsewhere), and which
        are surely no member of the value set under any spelling of an exact-match code
        system (all when it has no member of ``system``; none when not ``complete``)."""
        found = self.systems.get(system)
        if found is None or not len(codes):
            none = np.empty(len(codes), dtype=object)
            outside = np.full(len(codes), self.complete, dtype=bool)
            return np.zeros(len(codes), dtype=bool), none, none.copy(), outside
        return found.lookup(codes)

    def get(self, system: str, code: str) -> Plain | None:
        """The plain answer of one code, or None."""
        hit, displays, versions, _ = self.lookup(system, np.array([code], dtype=object))
        return Plain(displays[0], versions[0]) if hit[0] else None


def whole_members(vs: CompiledValueSet) -> dict[str, list[tuple[str, str | None]]] | None:
    """For a value set of whole release code systems, the plainly valid members of each as
    (code, display), read from the stores' columns (no concept made); None for any other
    value set."""
    found = _whole_systems(vs, CheckOptions())
    return None if found is None else {s: w.plain_pairs() for s, w in found.items()}


def _whole_systems(vs: CompiledValueSet, opts: CheckOptions) -> dict[str, WholeSystem] | None:
    """The plainly valid members of a value set that includes whole release code systems
    (nothing listed, filtered, imported or excluded), read column-wise from their stores;
    None for any other value set (it is expanded instead)."""
    providers = [c.cs for c in vs.includes if c.system and _from_a_release(c)]
    if (
        vs.excludes
        or not vs.includes
        or len(providers) < len(vs.includes)
        or not all(vs.takes_whole(str(c.system)) for c in vs.includes)
    ):
        return None
    whole: dict[str, WholeSystem] = {}
    allowed = opts.abstract is not False or opts.membership_only
    for cs in providers:
        assert cs is not None
        if not _readable(cs) or cs.url in whole:  # (two versions of one system: expanded)
            return None
        found = WholeSystem.read(cs, allowed)
        if found is None:
            return None
        whole[cs.url] = found
    return whole


def _readable(cs: CodeSystemProvider) -> bool:
    """A code system whose every concept a whole include takes, with nothing more to say
    of them than their columns do."""
    return (
        cs.content not in UNUSABLE_CONTENT
        and cs.is_complete
        and cs.enumerable
        and cs.resource.get("versionNeeded") is not True
    )


def _from_a_release(clause: Clause) -> bool:
    """An include whose members are exactly a release provider's filtered concepts."""
    return (
        clause.cs is not None
        and clause.cs.plain_entries
        and not clause.concepts
        and not clause.imports
    )
