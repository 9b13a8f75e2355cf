"""Translate whole columns of codes, on the machinery of column validation.

A ``ColumnTranslator`` is the translation's answerer: the maps are chosen once per call,
each distinct (system, code) is translated once with the engine of ``Workbench.translate``
(target displays looked up once each) and kept in an answer table per system, with the
columns of ``schema.TRANSLATION``. The column is then read like a validated one (the same
encodings, the same rule for what is missing, several systems pair by pair) by the pandas
backend, which every other backend ends in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from workbench.bulk.schema import TRANSLATION, Answers
from workbench.bulk.table import AnswerTable
from workbench.resources import Resource
from workbench.terminology.conceptmap import (
    STRENGTH,
    Translation,
    candidate_maps,
    translate_code,
)
from workbench.terminology.provider import CodeSystemProvider

COLUMNS = tuple(TRANSLATION.names)
_RANK = {eq: i for i, eq in enumerate(STRENGTH)}


class TranslationRow(NamedTuple):
    """One translation as a result row: the strongest match and the number of matches
    (the attributes are the columns of ``schema.TRANSLATION``)."""

    result: Any
    equivalence: str | None
    target_system: str | None
    target_code: str | None
    target_display: str | None
    matches: int
    message: str | None


def strongest(t: Translation) -> TranslationRow:
    """One row for one translation: the strongest match and the number of matches."""
    if not t.match_list:
        return TranslationRow(t.result, None, None, None, None, 0, t.message)
    best = min(t.match_list, key=lambda m: _RANK.get(m.equivalence, len(_RANK)))
    return TranslationRow(
        t.result,
        best.equivalence,
        best.system,
        best.code,
        best.display,
        len(t.match_list),
        t.message,
    )


class AnswerTables:
    """Answers kept per system (``tables``), filled a column's distinct codes at a time
    through ``__call__``: what both translators share."""

    tables: dict[str | None, AnswerTable]

    def __call__(self, system: str | None, code: str) -> TranslationRow:
        raise NotImplementedError

    def answer(self, system: str | None, codes: np.ndarray) -> Answers:
        """Translate distinct codes of one system (str, none missing)."""
        return Answers.of_rows(TRANSLATION, [self(system, str(code)) for code in codes])

    def table(self, system: str | None) -> AnswerTable:
        """The answers for codes of ``system`` (None: codes without one), kept by this
        translator."""
        found = self.tables.get(system)
        if found is None:
            found = AnswerTable(system, partial(self.answer, system), TRANSLATION)
            self.tables[system] = found
        return found


@dataclass
class ColumnTranslator(AnswerTables):
    """Answers (system, code) pairs for a column: the maps are chosen once, target
    displays looked up once each (``Workbench.translate`` semantics otherwise), and the
    answers kept per system for the call (``table``).

    ``maps``: the ConceptMaps to choose from; ``display_of(system, code)``: a target's
    display; ``codesystem(url)``: the loaded code system of a URL, if any.
    """

    maps: Sequence[Resource]
    url: str | None
    display_of_code: Callable[[str, str], str | None]
    codesystem: Callable[[str], CodeSystemProvider | None]
    target_system: str | None = None
    reverse: bool = False

    def __post_init__(self) -> None:
        self._maps = list(self.maps)
        self.candidates = candidate_maps(self._maps, url=self.url, reverse=self.reverse)
        self._systems: dict[str, bool] = {}
        self._displays: dict[tuple[str, str], str | None] = {}
        self.tables: dict[str | None, AnswerTable] = {}

    def display_of(self, system: str, code: str) -> str | None:
        """The target display, looked up once per (system, code); a system that is not
        loaded is asked about once."""
        known = self._systems.get(system)
        if known is None:
            known = self._systems[system] = self.codesystem(system) is not None
        if not known:
            return None
        key = (system, code)
        if key not in self._displays:
            self._displays[key] = self.display_of_code(system, code)
        return self._displays[key]

    def __call__(self, system: str | None, code: str) -> TranslationRow:
        """The row (see ``COLUMNS``) for one code."""
        return strongest(
            translate_code(
                self.candidates,
                self._maps,
                code=code,
                system=system,
                target_system=self.target_system,
                reverse=self.reverse,
                display_of=self.display_of,
            )
        )

    def answered(self) -> Answered:
        """What this translator has answered, without the engine (what Dask ships)."""
        return Answered({system: _snapshot(table) for system, table in self.tables.items()})


def _unexpected(codes: np.ndarray) -> Answers:
    raise RuntimeError(f"codes that were not gathered on the client: {codes[:5].tolist()}")


def _snapshot(table: AnswerTable) -> AnswerTable:
    """A table holding what ``table`` has answered, which answers nothing else (and is
    shipped with its answers)."""
    found = AnswerTable(table.system, _unexpected, TRANSLATION, shipped_whole=True)
    found.state = table.state
    return found


class Answered:
    """Answer tables answered beforehand (every distinct pair of a column, on the client):
    the tables a worker looks its partition's rows up in."""

    def __init__(self, tables: dict[str | None, AnswerTable]) -> None:
        self.tables = tables

    def table(self, system: str | None) -> AnswerTable:
        """The answers of ``system`` (a system never seen has none but the missing one)."""
        found = self.tables.get(system)
        if found is None:
            found = self.tables[system] = _snapshot(AnswerTable(system, _unexpected, TRANSLATION))
        return found


def _other_maps(found: Sequence[Resource], maps: Sequence[Resource]) -> list[Resource]:
    """``found`` and every map their ``unmapped`` ``other-map`` links reach (by url)."""
    out = list(found)
    urls = {m.get("url") for m in out}
    pending = list(out)
    while pending:
        for group in pending.pop().get("group", ()):
            unmapped = group.get("unmapped") or {}
            if unmapped.get("mode") != "other-map":
                continue
            url = str(unmapped.get("url", "")).partition("|")[0]
            if url in urls:
                continue
            urls.add(url)
            reached = [m for m in maps if m.get("url") == url]
            out += reached
            pending += reached
    return out


def _targets(maps: Sequence[Resource]) -> Iterator[tuple[str, str]]:
    """Every (system, code) a translation through ``maps`` can show a display for, but
    the codes of ``unmapped`` ``provided`` (which are the column's own): both sides of
    every element (a reverse translation shows the source side) and the fixed codes."""
    for cm in maps:
        for group in cm.get("group", ()):
            source, target = group.get("source"), group.get("target")
            for element in group.get("element", ()):
                if source and element.get("code"):
                    yield str(source), str(element["code"])
                for t in element.get("target", ()):
                    if target and t.get("code"):
                        yield str(target), str(t["code"])
            unmapped = group.get("unmapped") or {}
            if target and unmapped.get("mode") == "fixed" and unmapped.get("code"):
                yield str(target), str(unmapped["code"])


@dataclass(frozen=True)
class ShippedTranslator(AnswerTables):
    """A translator made of plain data, picklable for Spark's executors: the chosen maps
    (and those their ``other-map`` links reach), the target displays looked up on the
    driver, the options. It answers like the ``ColumnTranslator`` it came from."""

    candidates: tuple[Resource, ...]
    maps: tuple[Resource, ...]
    displays: Mapping[tuple[str, str], str | None]
    target_system: str | None
    reverse: bool
    tables: dict[str | None, AnswerTable] = field(default_factory=dict, compare=False)

    def __call__(self, system: str | None, code: str) -> TranslationRow:
        """The row (see ``COLUMNS``) for one code."""
        return strongest(
            translate_code(
                self.candidates,
                self.maps,
                code=code,
                system=system,
                target_system=self.target_system,
                reverse=self.reverse,
                display_of=lambda s, c: self.displays.get((s, c)),
            )
        )

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "tables": {}}  # answers are not shipped back and forth

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def shipped(translator: ColumnTranslator) -> ShippedTranslator | None:
    """``translator`` as plain data (see ``ShippedTranslator``), or None when a chosen map
    has an ``unmapped`` ``provided`` group into a loaded code system: the displays of the
    column's own codes are then only known to the engine."""
    maps = _other_maps(translator.candidates, translator._maps)
    for cm in maps:
        for group in cm.get("group", ()):
            unmapped = group.get("unmapped") or {}
            target = group.get("target")
            provided = unmapped.get("mode") == "provided" and not translator.reverse
            if provided and target and translator.codesystem(str(target)) is not None:
                return None
    displays = {key: translator.display_of(*key) for key in set(_targets(maps))}
    return ShippedTranslator(
        tuple(translator.candidates),
        tuple(maps),
        displays,
        translator.target_system,
        translator.reverse,
    )
