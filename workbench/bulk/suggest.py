"""Suggestions ("did you mean …?"): likely intended codes and canonical URLs for ones that failed.

Suggestions are hints shown next to a failure; nothing is ever corrected silently (only
``ValidationFrame.fix`` applies the safe kinds, when asked). For a code the candidates are,
in this order: a match of a loaded ConceptMap from the code's system to one of the value
set's systems (either direction, the strongest equivalence first), the code without
surrounding (or doubled inner) whitespace, a case variant (in a case-sensitive code system,
where case matters), a dotted/undotted variant (ICD style ``E119`` ↔ ``E11.9``), a code
whose display is the text given, then the nearest code by edit distance and the nearest
display (``rapidfuzz``). Codes that are identifiers with check digits and no lexical
meaning (SNOMED CT concept ids, LOINC numbers: ``CodeSystemProvider.opaque_codes``) get no
edit-distance guess (a code two digits away is another concept), only the exact variants
and a display typed as a code. For an unknown value set or code system URL, the nearest
loaded URLs and titles.

>>> index = CodeIndex([("E11.9", "Type 2 diabetes"), ("female", "Female")])
>>> index.suggest("E119")
Suggestion(code='E11.9', display='Type 2 diabetes', why='dotted/undotted variant')
>>> index.suggest("Female").why
'case variant'
>>> index.suggest(" female").why
'without the surrounding whitespace'
>>> index.suggest("femal").why
'nearest code'
>>> index.suggest("zzz") is None
True
>>> sctids = CodeIndex([("28698006", "Torsion of liver lobe")], opaque=True)
>>> sctids.suggest("22298006") is None, sctids.suggest("torsion of liver lobe").why
(True, 'the code with this display')
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench.terminology.result import Suggestion

__all__ = ["CodeIndex", "Suggester", "Suggestion", "nearest_urls", "url_hint"]

ISSUES = frozenset({"unknown-code", "not-in-vs"})
#: Why a suggestion is made, for each kind ``ValidationFrame.fix`` may apply.
WHITESPACE = "without the surrounding whitespace"
CASE = "case variant"
DOTTED = "dotted/undotted variant"
#: Map matches strong enough to apply: the target means the same as the source.
SAFE_EQUIVALENCES = ("equal", "equivalent")
#: Equivalences in the order a map match is preferred (strongest first); ``unmatched`` and
#: ``disjoint`` are never suggested.
_STRENGTH = ("equal", "equivalent", "wider", "subsumes", "narrower", "specializes", "inexact")


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def _undotted(text: str) -> str:
    return text.replace(".", "").replace(" ", "").casefold()


class FirstOf:
    """The first of some codes whose key is a given one, the keys being ``key`` of each
    code's text (``texts[i]`` is ``codes[i]``'s). Made in Arrow, with no Python object per
    code: for an ASCII text ``str.casefold`` is ``ascii_lower`` (``drop``: substrings
    ``key`` removes first); ``squeezed``: ``key`` also squeezes whitespace, which Arrow
    leaves to texts that have none to squeeze (printable ASCII, no leading, trailing or
    double space). The other texts are keyed by ``key`` itself. A lookup is a scan in C
    for the first equal key."""

    def __init__(
        self,
        texts: Sequence[str],
        codes: Sequence[str],
        key: Callable[[str], str],
        *,
        drop: tuple[str, ...] = (),
        squeezed: bool = False,
    ) -> None:
        self.codes = codes
        self._keys: pa.Array | None = None
        self._dict: dict[str, str] | None = None
        try:
            array = pa.array(texts, type=pa.large_string())
        except (pa.ArrowException, UnicodeError, TypeError):  # not all str, or surrogates
            self._dict = dict(zip(reversed([key(t) for t in texts]), reversed(codes), strict=True))
            return
        keys = array
        for text in drop:  # (as ``key`` does, before it case-folds)
            keys = pc.replace_substring(keys, text, "")
        keys = pc.ascii_lower(keys)
        exact = pc.string_is_ascii(array)
        if squeezed:  # (in printable ASCII the one whitespace is the space)
            exact = pc.and_(exact, pc.ascii_is_printable(array))
            for spaced in (
                pc.match_substring(array, "  "),
                pc.starts_with(array, " "),
                pc.ends_with(array, " "),
            ):
                exact = pc.and_(exact, pc.invert(spaced))
        slow = np.flatnonzero(~np.asarray(exact.to_numpy(zero_copy_only=False), dtype=bool))
        if len(slow):
            mask = np.zeros(len(texts), dtype=bool)
            mask[slow] = True
            keyed = pa.array([key(texts[int(i)]) for i in slow], type=pa.large_string())
            keys = pc.replace_with_mask(keys, pa.array(mask), keyed)
        self._keys = keys

    def get(self, key: str) -> str | None:
        """The first code whose key is ``key``, or None."""
        if self._dict is not None:
            return self._dict.get(key)
        assert self._keys is not None
        found = pc.index(self._keys, pa.scalar(key, pa.large_string())).as_py()
        return None if found < 0 else self.codes[found]


class CodeIndex:
    """The codes (and displays) one suggestion is chosen from: a value set's members of one
    code system, or a whole code system."""

    def __init__(self, entries: Iterable[tuple[str, str | None]], *, opaque: bool = False) -> None:
        #: Codes are identifiers without lexical meaning: no nearest-code guess.
        self.opaque = opaque
        pairs = list(entries)
        self.displays: dict[str, str | None] = dict(pairs)
        if len(self.displays) != len(pairs):  # a code listed twice: its first display
            self.displays = {}
            for code, display in pairs:
                self.displays.setdefault(code, display)
        self.codes: list[str] = list(self.displays)

    # The indexes below are made when first needed (a report may ask only a few codes of a
    # large code system, and only some kinds of lookup); each maps a key to the first code
    # in order that has it.

    @cached_property
    def by_case(self) -> FirstOf:
        """Codes by their case-folded form."""
        return FirstOf(self.codes, self.codes, str.casefold)

    @cached_property
    def by_dots(self) -> FirstOf:
        """Codes by their form without dots and spaces, case-folded."""
        return FirstOf(self.codes, self.codes, _undotted, drop=(".", " "))

    @cached_property
    def by_display(self) -> FirstOf:
        """Codes by their display, whitespace squeezed and case-folded."""
        return FirstOf(
            self._display_texts,
            self._display_codes,
            lambda text: _squeeze(text).casefold(),
            squeezed=True,
        )

    @cached_property
    def sorted_codes(self) -> list[str]:
        """The codes in sorted order (for ``more_specific``)."""
        return sorted(self.codes)

    @cached_property
    def _display_codes(self) -> list[str]:
        return [c for c, d in self.displays.items() if d]

    @cached_property
    def _display_texts(self) -> list[str]:
        return [d if isinstance(d, str) else str(d) for d in self.displays.values() if d]

    def __len__(self) -> int:
        return len(self.codes)

    def more_specific(self, code: str) -> str | None:
        """A code below ``code`` in dotted notation (``R05`` → ``R05.9``, ``J45.90`` →
        ``J45.909``): the "unspecified" one when there is one, else the shortest."""
        prefix = code if "." in code else code + "."
        start = bisect.bisect_left(self.sorted_codes, prefix)
        below = []
        for candidate in self.sorted_codes[start : start + 1000]:
            if not candidate.startswith(prefix):
                break
            if candidate != code:
                below.append(candidate)
        if not below:
            return None
        unspecified = [c for c in below if "unspecified" in str(self.displays.get(c) or "")]
        return min(unspecified or below, key=lambda c: (len(c), c))

    def _found(self, code: str, why: str) -> Suggestion:
        return Suggestion(code, self.displays.get(code), why)

    def suggest(self, code: str) -> Suggestion | None:
        """The most likely intended code for ``code``, or None."""
        return self.suggest_many([code])[0]

    def suggest_many(self, codes: Sequence[str]) -> list[Suggestion | None]:
        """``suggest`` of each of ``codes``: the exact variants one by one, then the
        edit-distance guesses of all that are left, each kind in one pass over the
        candidates (``rapidfuzz.process.cdist``: the candidates are read once, not once
        per code)."""
        found: list[Suggestion | None] = [None] * len(codes)
        squeezed = [_squeeze(code) if code else "" for code in codes]
        left: list[int] = []
        for k, code in enumerate(codes):
            if code:
                found[k] = self._variant(code, squeezed[k])
                if found[k] is None:
                    left.append(k)
        if not self.opaque:
            near = self._nearest_codes([codes[k] for k in left], [squeezed[k] for k in left])
            for k, candidate in zip(left, near, strict=True):
                found[k] = candidate
            left = [k for k in left if found[k] is None]
        for k in left:
            if _text_shaped(squeezed[k]):
                found[k] = self._nearest_display(squeezed[k])
        return found

    def _variant(self, code: str, squeezed: str) -> Suggestion | None:
        """The code without its whitespace, in another case, with or without dots, or the
        code whose display was typed; or None."""
        if squeezed != code and squeezed in self.displays:
            return self._found(squeezed, WHITESPACE)
        cased = self.by_case.get(squeezed.casefold())
        if cased is not None and cased != code:
            return self._found(cased, CASE)
        dotted = self.by_dots.get(_undotted(squeezed))
        if dotted is not None and dotted != code:
            return self._found(dotted, DOTTED)
        named = self.by_display.get(squeezed.casefold())
        if named is not None:
            return self._found(named, "the code with this display")
        return None

    def _nearest_codes(self, codes: list[str], squeezed: list[str]) -> list[Suggestion | None]:
        """Per code (and its ``squeezed`` form): a more specific code (dotted notation),
        else the nearest other code by edit distance (at most 1 for up to 5 characters,
        else 2; the first in order among the nearest; with the same first character)."""
        found: list[Suggestion | None] = [None] * len(squeezed)
        fuzzy: list[int] = []
        for k, text in enumerate(squeezed):
            specific = self.more_specific(text)
            if specific is not None:
                found[k] = self._found(specific, "a more specific code")
            else:
                fuzzy.append(k)
        if not fuzzy or not self.codes:
            return found
        queries = [squeezed[k] for k in fuzzy]
        for k, row in zip(fuzzy, _distances(queries, self.codes, 2), strict=True):
            at = int(np.argmin(row))  # (the first of the nearest, as extractOne finds it)
            limit = 1 if len(squeezed[k]) <= 5 else 2
            near = str(self.codes[at])
            if row[at] <= limit and near != codes[k] and near[:1] == squeezed[k][:1]:
                found[k] = self._found(near, "nearest code")
        return found

    def _nearest_display(self, squeezed: str) -> Suggestion | None:
        """The code whose display is closest to text typed as a code (``WRatio`` at least
        86), or None. (One text at a time: ``cdist`` would prepare every display for each
        text all the same.)"""
        from rapidfuzz import fuzz, process, utils  # imported when first needed

        text = process.extractOne(
            squeezed,
            self._display_texts,
            scorer=fuzz.WRatio,
            processor=utils.default_process,
            score_cutoff=86,
        )
        return (
            None
            if text is None
            else self._found(self._display_codes[int(text[2])], "nearest display")
        )


def _text_shaped(squeezed: str) -> bool:
    """Text rather than a code's shape: at least four letters, half of it letters."""
    letters = sum(ch.isalpha() for ch in squeezed)
    return letters >= 4 and 2 * letters >= len(squeezed)


#: Distances computed at once (codes asked times candidates), at most.
_CELLS = 4_000_000


def _distances(queries: list[str], choices: Sequence[str], cutoff: int) -> Iterable[np.ndarray]:
    """Each query's Levenshtein distance to every choice (``process.cdist``; beyond
    ``cutoff``: cutoff + 1), a few queries at a time."""
    from rapidfuzz import process  # imported when first needed
    from rapidfuzz.distance import Levenshtein

    step = max(1, _CELLS // max(1, len(choices)))
    for start in range(0, len(queries), step):
        part = queries[start : start + step]
        yield from process.cdist(
            part, choices, scorer=Levenshtein.distance, score_cutoff=cutoff, dtype=np.int8
        )


def nearest_urls(
    url: str, known: Mapping[str, str | None] | Sequence[str], *, limit: int = 3
) -> list[str]:
    """The loaded canonical URLs closest to an unknown ``url`` (by URL, and by title when the
    text given looks like a title rather than a URL).

    >>> nearest_urls("http://hl7.org/fhir/ValueSet/administrative-gendr",
    ...              {"http://hl7.org/fhir/ValueSet/administrative-gender": "AdministrativeGender",
    ...               "http://hl7.org/fhir/ValueSet/languages": "Languages"})
    ['http://hl7.org/fhir/ValueSet/administrative-gender']
    """
    from rapidfuzz import fuzz, process  # imported when first needed

    titles: Mapping[str, str | None] = known if isinstance(known, Mapping) else dict.fromkeys(known)
    urls = list(titles)
    if not urls or not url:
        return []
    base = url.split("|", 1)[0]
    found: dict[str, float] = {}
    for match, score, _ in process.extract(
        base, urls, scorer=fuzz.ratio, limit=limit, score_cutoff=85
    ):
        found[str(match)] = max(found.get(str(match), 0.0), float(score))
    tail = base.rstrip("/").rsplit("/", 1)[-1]
    if len(tail) >= 4:
        tails = [u.rstrip("/").rsplit("/", 1)[-1] for u in urls]
        for _, score, i in process.extract(
            tail, tails, scorer=fuzz.ratio, limit=limit, score_cutoff=85
        ):
            found[urls[int(i)]] = max(found.get(urls[int(i)], 0.0), float(score))
    named = [(u, str(t)) for u, t in titles.items() if t]
    if named and "/" not in base:
        for _, score, i in process.extract(
            base, [t for _, t in named], scorer=fuzz.WRatio, limit=limit, score_cutoff=85
        ):
            found[named[int(i)][0]] = max(found.get(named[int(i)][0], 0.0), float(score))
    ranked = sorted(found.items(), key=lambda item: (-item[1], item[0]))
    return [u for u, _ in ranked[:limit]]


def url_hint(url: str, known: Mapping[str, str | None] | Sequence[str]) -> str | None:
    """``Did you mean <url>?`` for an unknown canonical, or None when nothing is close."""
    near = nearest_urls(url, known)
    if not near:
        return None
    return "Did you mean " + " or ".join(near) + "?"


def index_of(entries: Iterable[Any]) -> CodeIndex:
    """A CodeIndex over expansion entries or concepts (anything with code and display)."""
    return CodeIndex((str(e.code), getattr(e, "display", None)) for e in entries)


#: ``mapped(system, code)``: the matches of the loaded ConceptMaps for one code, each
#: ``(equivalence, target system, target code, target display, map url|version)``.
Mapper = Callable[[str, str], Sequence[tuple[str, str, str, str | None, str]]]


class Suggester:
    """Suggestions for the failing codes of one value set: first a loaded ConceptMap's match
    into one of the value set's systems (``mapped``), then a CodeIndex per code system over
    the value set's members (``members()``: its expansion by system, None when it cannot be
    expanded), else over the whole code system (``codesystem(url)``); ``codesystems()``
    maps each loaded code system URL to its title, for unknown systems; ``opaque(url)``
    says a system's codes have check digits and no lexical meaning (no edit-distance
    guesses). Each is asked on first need only."""

    def __init__(
        self,
        members: Callable[[], Mapping[str, Sequence[tuple[str, str | None]]] | None],
        codesystem: Callable[[str], Any],
        codesystems: Callable[[], Mapping[str, str | None]],
        *,
        mapped: Mapper | None = None,
        opaque: Callable[[str], bool] | None = None,
        largest: int = 500_000,
    ) -> None:
        self._members_of = members
        self._codesystem = codesystem
        self._codesystems_of = codesystems
        self._mapped = mapped
        self._opaque = opaque
        self.largest = largest
        self._members: Mapping[str, Sequence[tuple[str, str | None]]] | bool | None = False
        self._titles: Mapping[str, str | None] | None = None
        self._indexes: dict[str, CodeIndex | None] = {}
        self._wanted_codes: dict[str, set[str]] | bool | None = False

    def __reduce__(self) -> tuple[Any, ...]:
        """A pickled report keeps no engine objects: it unpickles without suggestions."""
        return (_no_suggestions, ())

    def members(self) -> Mapping[str, Sequence[tuple[str, str | None]]] | None:
        """The value set's members by system (None when it cannot be expanded)."""
        if self._members is False:
            self._members = self._members_of()
        return self._members if isinstance(self._members, Mapping) else None

    def index(self, system: str) -> CodeIndex | None:
        """The candidate codes of ``system`` (None when there are none to offer)."""
        if system not in self._indexes:
            members = self.members()
            opaque = self._opaque is not None and self._opaque(system)
            found: CodeIndex | None = None
            if members is not None and members.get(system):
                found = CodeIndex(members[system], opaque=opaque)
            else:
                cs = self._codesystem(system)
                # a grammar (UCUM) cannot be listed: no codes to suggest from
                if cs is not None and cs.enumerable and len(cs) <= self.largest:
                    found = CodeIndex(((str(c.code), c.display) for c in cs), opaque=opaque)
            self._indexes[system] = found
        return self._indexes[system]

    def system(self, url: str) -> Suggestion | None:
        """The nearest loaded code system to an unknown one."""
        if self._titles is None:
            self._titles = self._codesystems_of()
        near = nearest_urls(url, self._titles, limit=1)
        if not near:
            return None
        return Suggestion(near[0], self._titles.get(near[0]), "nearest code system")

    def mapped(self, system: str, code: str) -> Suggestion | None:
        """The strongest match of a loaded ConceptMap from ``system`` into the value set
        (a member of it when its members are known), or None."""
        if self._mapped is None:
            return None
        matches = self._mapped(system, code)
        if not matches:
            return None
        wanted = self._wanted()
        best: tuple[int, Suggestion] | None = None
        for equivalence, target_system, target, display, source in matches:
            if equivalence not in _STRENGTH or (target_system, target) == (system, code):
                continue
            if wanted is not None and target not in wanted.get(target_system, ()):
                continue
            rank = _STRENGTH.index(equivalence)
            if best is None or rank < best[0]:
                why = f"ConceptMap {source.split('|', 1)[0]} ({equivalence})"
                found = Suggestion(target, display, why, target_system, source, equivalence)
                best = (rank, found)
        return None if best is None else best[1]

    def _wanted(self) -> dict[str, set[str]] | None:
        """The members' codes by system, as sets (made once; None: not known)."""
        if self._wanted_codes is False:
            members = self.members()
            self._wanted_codes = (
                None if members is None else {s: {c for c, _ in m} for s, m in members.items()}
            )
        return self._wanted_codes if isinstance(self._wanted_codes, dict) else None

    def __call__(self, system: str | None, code: Any, issue: str | None) -> Suggestion | None:
        """A suggestion for one failing (system, code) with its issue, or None."""
        return self.many([(system, code, issue)])[0]

    def many(self, keys: Sequence[tuple[str | None, Any, str | None]]) -> list[Suggestion | None]:
        """A suggestion (or None) for each failing (system, code, issue) of ``keys``: the
        codes of one system asked of its CodeIndex together (``suggest_many``)."""
        found: list[Suggestion | None] = [None] * len(keys)
        asked: dict[str, list[int]] = {}
        for k, (system, code, issue) in enumerate(keys):
            if issue == "unknown-system" and system:
                mapped = self.mapped(system, code) if isinstance(code, str) and code else None
                found[k] = mapped or self.system(system)
            elif issue in ISSUES and isinstance(code, str) and system:
                found[k] = self.mapped(system, code)
                if found[k] is None:
                    asked.setdefault(system, []).append(k)
        for system, ks in asked.items():
            index = self.index(system)
            if index is not None:
                codes = [str(keys[k][1]) for k in ks]
                for k, suggestion in zip(ks, index.suggest_many(codes), strict=True):
                    found[k] = suggestion
        return found


def _no_suggestions() -> None:
    return None
