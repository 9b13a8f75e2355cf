"""The polars lookup of one answer table state: where each row's code is among the
table's codes, and what each answer gives its rows (see ``polars_backend``).

A row's polars hash proposes a position (in levels of open-addressing tables of the
codes' hashes), and the code at that position must equal the row (their Arrow string
views compared in place, and polars compares the strings too long for a view; a hash
never decides alone). What is not there is "lost" (answered through Arrow by the caller).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from workbench.bulk.schema import VALIDATION
from workbench.bulk.table import State

if TYPE_CHECKING:
    import polars as pl

HASH_SEED = 20240611
TEXTS = VALIDATION.texts  # message, display, issue, system
FEW = 8  # a text column of at most this many texts is built from the kind, not gathered
SPREAD = 4  # hash slots per code in each level (at most a quarter of the slots hold one)
MAX_LEVELS = 32  # codes left after these (equal hashes) are found through Arrow
# odd 64-bit multipliers: each level reads other bits of the hash
MULTIPLIERS = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93],
    dtype=np.uint64,
)
NO_ROWS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Level:
    """One hash table of positions: ``slots[slot(hash)]`` (0: empty)."""

    slots: np.ndarray  # uint32, a power of two long
    multiplier: int  # 0: the hash's low bits; else the top bits of hash * multiplier

    def slot(self, hashes: np.ndarray) -> np.ndarray:
        """The slot of each hash (int64)."""
        size = len(self.slots)
        if self.multiplier == 0:
            return (hashes & np.uint64(size - 1)).view(np.int64)
        shift = np.uint64(64 - (size.bit_length() - 1))
        return ((hashes * np.uint64(self.multiplier)) >> shift).view(np.int64)


EMPTY_LEVEL = Level(np.zeros(1, dtype=np.uint32), 0)


@dataclass(frozen=True)
class Answered:
    """Per answer what its rows get (see ``Lookup``): ``gathered`` columns, ``kinds`` (the
    kind of each answer, uint16) and the ``few`` text columns built from the kind (per
    name: the shift of its id, its texts). ``built``: the result columns' expressions per
    system (see ``columns``), made once for these answers."""

    gathered: dict[str, pl.Series]
    few: dict[str, tuple[int, pl.Series]]
    kinds: np.ndarray
    built: dict[str | None, list[pl.Expr]] = field(default_factory=dict, compare=False)

    def take(self, at: pl.Series) -> Answered:
        """The answers at ``at``, in that order."""
        gathered = {name: s.gather(at) for name, s in self.gathered.items()}
        return Answered(gathered, self.few, self.kinds.take(at.to_numpy().astype(np.int64)))

    def columns(self, system: str | None) -> list[pl.Expr]:
        """The expressions of the result columns over a frame of ``at`` (each row's answer)
        and ``kind`` (its kind). ``system`` given: the same for every row (one Enum value);
        else each answer's own."""
        found = self.built.get(system)
        if found is None:
            found = self.built[system] = _columns(self, system)
        return found

    def frame(self, at: np.ndarray, system: str | None) -> pl.DataFrame:
        """The result frame of the rows whose answers are at ``at`` (uint32)."""
        import polars as pl

        kind = self.kinds.take(at)
        frame = pl.DataFrame({"at": pl.Series(at), "kind": pl.Series(kind)})
        return frame.select_seq(self.columns(system))


def _columns(answers: Answered, system: str | None) -> list[pl.Expr]:
    import polars as pl

    kind = pl.col("kind")
    gathered = answers.gathered
    columns = []
    for column in VALIDATION.columns:
        name = column.name
        if column.kind == "result":
            columns.append(pl.when(kind & 3 != 0).then(kind & 3 == 2).alias(name))
        elif column.kind == "count":
            columns.append(pl.lit(gathered[name]).gather(pl.col("at")).alias(name))
        elif system is not None and column.per_system:
            columns.append(pl.lit(system, dtype=pl.Enum([system])).alias(name))
        elif name in gathered:
            texts = pl.lit(gathered[name]).gather(pl.col("at"))
            bit = TEXTS.index(name)
            columns.append(pl.when(kind & (4 << bit) == 0).then(texts).alias(name))
        elif name in answers.few:
            columns.append(_few_texts(name, *answers.few[name]))
        else:  # no answer has a text here
            columns.append(pl.lit(None, dtype=pl.Enum([])).alias(name))
    return columns


def _few_texts(name: str, shift: int, texts: pl.Series) -> pl.Expr:
    """The column ``name`` of at most ``FEW`` texts: null where the kind's null bit for it
    is set, else the text whose id the kind holds at ``shift``."""
    import polars as pl

    kind = pl.col("kind")
    at = kind & (15 << shift)
    chain: Any = pl.when(kind & (4 << TEXTS.index(name)) != 0).then(None)
    for i, text in enumerate(texts):
        chain = chain.when(at == i << shift).then(pl.lit(text, dtype=texts.dtype))
    return chain.alias(name)


@dataclass(frozen=True)
class Lookup:
    """What a polars lookup needs of one table state (built once per state).

    ``levels`` are hash tables over the codes' polars hashes (``hashes``): a code's position
    is in the first level where its slot was free (position 0, the missing answer, is never
    in a slot; ``codes[0]`` is ""). A hash only proposes a position: the row's string is
    then compared with the code there (``codes``).
    ``answers`` holds, per answer, its texts (the text columns of ``VALIDATION``: ``Enum``
    columns without nulls; a column no answer has is left out, and so is a column of at
    most ``FEW`` distinct texts), its counts (if the schema has any) and ``kinds``: the
    result (0 NA, 1 false, 2 true), one bit per text that is null (``4 << i`` for
    ``TEXTS[i]``) and, per text column of at most ``FEW`` texts, the text's id in four
    bits (at ``few[name]``: its shift and its texts, an ``Enum`` Series). A row's few-texts
    column is then built from its kind by a short ``when`` chain, not gathered.
    """

    codes: pl.Series
    hashes: np.ndarray
    levels: tuple[Level, ...]
    answers: Answered
    null_apart: bool  # no code hashes like a null: a null row is found nowhere (so at 0)
    views: Views


@dataclass(frozen=True)
class Views:
    """The codes' Arrow string views (16 bytes each) as two words per code: ``heads`` (the
    length and the first four bytes) and ``tails`` (the next eight bytes). A string of at
    most ``INLINE`` bytes is all in its view, zero-padded, so two such strings are equal
    exactly when both words are. A longer one's tail points into a data buffer: ``long``
    says whether any code is that long (then rows of equal heads are compared by polars)."""

    heads: np.ndarray  # uint64 per code
    tails: np.ndarray  # uint64 per code
    long: bool

    @classmethod
    def of(cls, codes: pl.Series) -> Views:
        """The views of a String Series of codes."""
        words = string_views(codes)
        heads, tails = np.ascontiguousarray(words[:, 0]), np.ascontiguousarray(words[:, 1])
        return cls(heads, tails, bool((_lengths(words) > INLINE).any()))


INLINE = 12  # bytes of a string an Arrow view holds itself


def string_views(values: pl.Series) -> np.ndarray:
    """The Arrow views of a String Series, read in place: two uint64 words per row."""
    import polars as pl

    array = values.to_arrow(compat_level=pl.CompatLevel.newest())
    if not pa.types.is_string_view(array.type):  # polars' own layout; else made so
        array = array.cast(pa.string_view())
    if not len(array):
        return np.zeros((0, 2), dtype=np.uint64)
    words = np.frombuffer(array.buffers()[1], dtype=np.uint64).reshape(-1, 2)
    return words[array.offset : array.offset + len(array)]


def _lengths(words: np.ndarray) -> np.ndarray:
    """The length of each view's string (its first four bytes, little-endian)."""
    return words.view(np.uint32)[:, 0]


def lookup(state: State) -> Lookup:
    """The polars lookup of ``state`` (built on first use, then kept in its cache)."""
    found: Lookup | None = state.cache.get("polars:lookup")
    if found is None:
        found = state.cache["polars:lookup"] = _build(state)
    return found


def _levels(hashes: np.ndarray) -> tuple[Level, ...]:
    """Hash tables holding the position of every code (but 0): each level takes the codes
    whose slot is free, one code per slot; the rest go to the next, smaller level."""
    levels: list[Level] = []
    todo = np.arange(1, len(hashes), dtype=np.int64)
    for depth in range(MAX_LEVELS):
        if not len(todo):
            break
        size = 1 << max(int(len(todo) * SPREAD - 1).bit_length(), 4)
        multiplier = 0 if depth == 0 else int(MULTIPLIERS[depth % len(MULTIPLIERS)])
        level = Level(np.zeros(size, dtype=np.uint32), multiplier)
        slot = level.slot(hashes.take(todo))
        level.slots[slot] = todo  # of the codes on one slot, the last one takes it
        todo = todo[level.slots.take(slot) != todo]
        levels.append(level)
    return tuple(levels)


def _build(state: State) -> Lookup:
    import polars as pl

    codes = pl.Series("code", state.arrow(pa.string()), dtype=pl.String).rechunk()
    hashes = codes.hash(HASH_SEED).to_numpy()
    # the texts are gathered without nulls (gathering nulls costs more than putting them
    # back from the kind's bits)
    kind = (state.answers.result + 1).astype(np.uint16)
    answers = {}
    few: dict[str, tuple[int, pl.Series]] = {}
    shift = 2 + len(TEXTS)
    for bit, name in enumerate(TEXTS):
        ids, texts = state.factorized(name)
        kind |= (ids < 0).astype(np.uint16) << (bit + 2)
        if not len(texts):
            continue
        labels = pl.Series(name, texts, dtype=pl.String)
        enum = labels.cast(pl.Enum(labels))
        if len(texts) <= FEW and shift + 4 <= 16:
            kind |= np.maximum(ids, 0).astype(np.uint16) << shift
            few[name] = (shift, enum)
            shift += 4
        else:
            answers[name] = enum.gather(np.maximum(ids, 0).astype(np.uint32))
    for column in VALIDATION.columns:
        if column.kind == "count":
            answers[column.name] = pl.Series(column.name, state.answers[column.name])
    null = pl.Series([None], dtype=pl.String).hash(HASH_SEED).to_numpy()[0]
    null_apart = not bool((hashes[1:] == null).any())
    answered = Answered(answers, few, kind)
    return Lookup(codes, hashes, _levels(hashes), answered, null_apart, Views.of(codes))


def locate(found: Lookup, part: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's position among the codes of ``found`` (a String Series; a null row is
    the missing answer, 0) as uint32, and the rows (int64) whose code is not there.

    The row's hash proposes a position (in the first level that has a code of that hash;
    0 if none: "" is the code there), and the row's string must then equal the code
    there: compared by their Arrow views in place (see ``Views``), or by polars where both
    are longer than a view holds."""
    hashes = part.hash(HASH_SEED).to_numpy()
    first = found.levels[0] if found.levels else EMPTY_LEVEL
    position = first.slots.take(first.slot(hashes))
    rows = np.flatnonzero(found.hashes.take(position) != hashes)
    if len(rows):  # the code of that hash is deeper, or nowhere
        position[rows] = _deeper(found, hashes.take(rows))
    null = part.is_null().to_numpy() if part.null_count() else None
    if null is not None and not found.null_apart:
        position[null] = 0
    words = string_views(part)
    views = found.views
    heads = views.heads.take(position) == words[:, 0]
    right = heads & (views.tails.take(position) == words[:, 1])
    if views.long:  # a long row's tail is no string: equal heads are compared by polars
        long = _lengths(words) > INLINE
        right &= ~long
        right[_equal(found, position, part, np.flatnonzero(heads & long))] = True
    if null is not None:
        right |= null
    if right.all():
        return position, NO_ROWS
    return position, np.flatnonzero(~right)


def _equal(found: Lookup, position: np.ndarray, part: pl.Series, rows: np.ndarray) -> np.ndarray:
    """Those of ``rows`` whose string equals the code at their position (polars compares)."""
    import polars as pl

    if not len(rows):
        return rows
    codes = found.codes.gather(pl.Series(position.take(rows)))
    return rows[(codes == part.gather(rows)).fill_null(False).to_numpy()]


def _deeper(found: Lookup, hashes: np.ndarray) -> np.ndarray:
    """For each hash, the position of a code of that hash in the levels after the first
    (0: none)."""
    at = np.zeros(len(hashes), dtype=np.uint32)
    todo = np.arange(len(hashes), dtype=np.int64)
    for level in found.levels[1:]:
        if not len(todo):
            break
        sub = hashes.take(todo)
        proposed = level.slots.take(level.slot(sub))
        hit = (proposed != 0) & (found.hashes.take(proposed) == sub)
        at[todo[hit]] = proposed[hit]
        todo = todo[~hit]
    return at
