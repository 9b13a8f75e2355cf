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


def _first_of(keys: list[str], codes: list[str]) -> dict[str, str]:
    """``keys[i] -> codes[i]``, the first code kept where keys repeat (built in C: the
    pairs reversed, so the first one is written last)."""
    return dict(zip(reversed(keys), reversed(codes), strict=True))


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
    def by_case(self) -> dict[str, str]:
        """Codes by their case-folded form."""
        return _first_of([code.casefold() for code in self.codes], self.codes)

    @cached_property
    def by_dots(self) -> dict[str, str]:
        """Codes by their form without dots and spaces, case-folded."""
        return _first_of([_undotted(code) for code in self.codes], self.codes)

    @cached_property
    def by_display(self) -> dict[str, str]:
        """Codes by their display, whitespace squeezed and case-folded."""
        shown = [(c, d) for c, d in self.displays.items() if d]
        return _first_of([_squeeze(d).casefold() for _, d in shown], [c for c, _ in shown])

    @cached_property
    def sorted_codes(self) -> list[str]:
        """The codes in sorted order (for ``more_specific``)."""
        return sorted(self.codes)

    @cached_property
    def _display_codes(self) -> list[str]:
        return [c for c, d in self.displays.items() if d]

    @cached_property
    def _display_texts(self) -> list[str]:
        return [str(self.displays[c]) for c in self._display_codes]

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
        if not code:
            return None
        squeezed = _squeeze(code)
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
        if not self.opaque:
            found = self._nearest_code(code, squeezed)
            if found is not None:
                return found
        return self._nearest_display(squeezed)

    def _nearest_code(self, code: str, squeezed: str) -> Suggestion | None:
        """A more specific code (dotted notation), else the nearest code by edit distance."""
        specific = self.more_specific(squeezed)
        if specific is not None:
            return self._found(specific, "a more specific code")
        # imported when first needed: a column report makes a suggester for every call
        from rapidfuzz import process
        from rapidfuzz.distance import Levenshtein

        limit = 1 if len(squeezed) <= 5 else 2
        near = process.extractOne(
            squeezed, self.codes, scorer=Levenshtein.distance, score_cutoff=limit
        )
        if near is not None and near[0] != code and str(near[0])[:1] == squeezed[:1]:
            return self._found(str(near[0]), "nearest code")
        return None

    def _nearest_display(self, squeezed: str) -> Suggestion | None:
        """The code whose display is closest to text typed as a code."""
        from rapidfuzz import fuzz, process, utils  # imported when first needed

        letters = sum(ch.isalpha() for ch in squeezed)
        if letters >= 4 and 2 * letters >= len(squeezed):  # text, not a code's shape
            text = process.extractOne(
                squeezed,
                self._display_texts,
                scorer=fuzz.WRatio,
                processor=utils.default_process,
                score_cutoff=86,
            )
            if text is not None:
                return self._found(self._display_codes[int(text[2])], "nearest display")
        return None


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
        if issue == "unknown-system" and system:
            mapped = self.mapped(system, code) if isinstance(code, str) and code else None
            return mapped or self.system(system)
        if issue not in ISSUES or not isinstance(code, str) or not system:
            return None
        mapped = self.mapped(system, code)
        if mapped is not None:
            return mapped
        index = self.index(system)
        return None if index is None else index.suggest(code)


def _no_suggestions() -> None:
    return None
