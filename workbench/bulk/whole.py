"""Whole code systems of a value set, column-wise: what bulk validation needs to answer
codes against a value set that includes whole release code systems (such as the implicit
``http://hl7.org/fhir/sid/icd-10-cm?fhir_vs``), read from the provider's columns without a
Python object per concept.

A ``WholeSystem`` holds one code system's codes (an Arrow array, looked up vectorised with
``pyarrow.compute.index_in``), their displays, and which codes are plainly valid and which
are members. ``WholeFast`` and ``WholeMembers`` give the same answers as a dict of plainly
valid members and a set of members would, built only if some caller asks them code by code.
"""

from __future__ import annotations

from collections.abc import Collection, ItemsView, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench.terminology.provider import CodeSystemProvider

Key = tuple[str, str]
WHOLE_COLUMNS = ("code", "display", "abstract", "inactive")  # read from the provider


@dataclass(frozen=True)
class WholeSystem:
    """One whole code system of a value set, column-wise.

    ``codes``: every concept's code (Arrow strings, distinct); ``displays``: their displays
    (Arrow strings, or an object array as the provider's frame gave them); ``plain``: which
    are plainly valid (active, not abstract unless allowed); ``listed``: which are members
    (active ones only, unless the value set allows inactive codes).
    """

    system: str
    codes: pa.Array
    displays: pa.Array | np.ndarray
    plain: np.ndarray
    listed: np.ndarray
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def read(
        cls, cs: CodeSystemProvider, abstract: bool, inactive_allowed: bool
    ) -> WholeSystem | None:
        """The columns of ``cs`` (its ``concept_columns``, else its ``concepts_frame``);
        None when it has neither, or its codes are not all strings."""
        table = cs.concept_columns()
        if table is not None:
            codes, displays = _combined(table.column("code")), _combined(table.column("display"))
            is_abstract = _flags(table.column("abstract"))
            inactive = _flags(table.column("inactive"))
        else:
            frame = cs.concepts_frame()
            if frame is None or not set(frame.columns) >= set(WHOLE_COLUMNS):
                return None
            try:
                codes = pa.array(frame["code"].to_numpy(dtype=object), type=pa.large_string())
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                return None
            if codes.null_count:
                return None
            displays = frame["display"].to_numpy(dtype=object)
            is_abstract = frame["abstract"].to_numpy(dtype=bool)
            inactive = frame["inactive"].to_numpy(dtype=bool)
        listed = np.ones(len(codes), dtype=bool) if inactive_allowed else ~inactive
        plain = ~inactive & (abstract | ~is_abstract)
        return cls(cs.url, codes, displays, plain, listed)

    def rows(self, codes: np.ndarray) -> np.ndarray:
        """The row of each code (an object array of str), -1 where unknown."""
        found = pc.index_in(pa.array(codes, type=self.codes.type), value_set=self.codes)
        return np.asarray(pc.fill_null(found, -1).to_numpy(), dtype=np.int64)

    def row(self, code: str) -> int:
        """The row of one code, -1 where unknown (a mapping made on first use)."""
        index: dict[str, int] | None = self.cache.get("index")
        if index is None:
            codes = self.codes.to_pylist()
            index = self.cache["index"] = dict(zip(codes, range(len(codes)), strict=True))
        return index.get(code, -1)

    def plain_at(self, rows: np.ndarray) -> np.ndarray:
        """Which rows (-1: unknown) are plainly valid members."""
        return _at(self.plain, rows)

    def listed_at(self, rows: np.ndarray) -> np.ndarray:
        """Which rows (-1: unknown) are members."""
        return _at(self.listed, rows)

    def shown(self, rows: np.ndarray) -> np.ndarray:
        """The displays of known rows, as an object array."""
        if isinstance(self.displays, np.ndarray):
            return self.displays.take(rows)
        taken = self.displays.take(pa.array(rows, type=pa.int64()))
        return np.asarray(taken.to_numpy(zero_copy_only=False), dtype=object)

    def display(self, row: int) -> str | None:
        """The display of one known row."""
        found: str | None = self.shown(np.array([row], dtype=np.int64))[0]
        return found


class WholeFast(Mapping[Key, "str | None"]):
    """The plainly valid members of whole systems and their displays, as a mapping of
    (system, code) (``checker.Kept.fast``): looked up code by code on demand; going through
    them all makes the dict once, column-wise."""

    def __init__(self, systems: Mapping[str, WholeSystem]) -> None:
        self.systems = systems
        self._made: dict[Key, str | None] | None = None

    def _all(self) -> dict[Key, str | None]:
        if self._made is None:
            made: dict[Key, str | None] = {}
            for url, whole in self.systems.items():
                at = np.flatnonzero(whole.plain)
                codes = whole.codes.take(pa.array(at, type=pa.int64())).to_pylist()
                made.update(zip(zip(repeat(url), codes), whole.shown(at).tolist(), strict=True))
            self._made = made
        return self._made

    def _row(self, key: object) -> tuple[WholeSystem, int] | None:
        if not isinstance(key, tuple) or len(key) != 2:
            return None
        system, code = key
        whole = self.systems.get(system) if isinstance(system, str) else None
        if whole is None or not isinstance(code, str):
            return None
        row = whole.row(code)
        return (whole, row) if row >= 0 and whole.plain[row] else None

    def __getitem__(self, key: Key) -> str | None:
        found = self._row(key)
        if found is None:
            raise KeyError(key)
        return found[0].display(found[1])

    def __contains__(self, key: object) -> bool:
        return self._row(key) is not None

    def __iter__(self) -> Iterator[Key]:
        return iter(self._all())

    def items(self) -> ItemsView[Key, str | None]:
        """Every (system, code) and its display."""
        return self._all().items()

    def __len__(self) -> int:
        return sum(int(whole.plain.sum()) for whole in self.systems.values())


class WholeMembers(Collection[Key]):
    """The members of whole systems, as a collection of (system, code) (``Kept.members``)."""

    def __init__(self, systems: Mapping[str, WholeSystem]) -> None:
        self.systems = systems

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, tuple) or len(key) != 2:
            return False
        system, code = key
        whole = self.systems.get(system) if isinstance(system, str) else None
        if whole is None or not isinstance(code, str):
            return False
        row = whole.row(code)
        return row >= 0 and bool(whole.listed[row])

    def __iter__(self) -> Iterator[Key]:
        for url, whole in self.systems.items():
            for code in whole.codes.filter(pa.array(whole.listed)).to_pylist():
                yield url, code

    def __len__(self) -> int:
        return sum(int(whole.listed.sum()) for whole in self.systems.values())


def _combined(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One Arrow array: chunks combined, one chunk as it is (a column of a release's
    memory-mapped store is then read where it lies, not copied whole on first use)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _flags(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A boolean column as numpy (nulls as False)."""
    filled = pc.fill_null(column, False)
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=bool)


def _at(flags: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``flags`` at each row, False where the row is -1 (unknown)."""
    found = np.zeros(len(rows), dtype=bool)
    known = rows >= 0
    found[known] = flags[rows[known]]
    return found
