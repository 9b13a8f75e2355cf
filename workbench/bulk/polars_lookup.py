"""The polars lookup of one answer table state: where each row's code is among the
table's codes, and what each answer gives its rows (see ``polars_backend``).

A row's polars hash proposes a position (through a perfect hash table of the codes'
hashes, ``perfect_hash``), and the code at that position must equal the row (their Arrow
string views compared in place, and polars compares the strings too long for a view; a
hash never decides alone). What is not there is "lost" (answered through Arrow by the
caller).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from workbench.bulk.perfect_hash import PerfectHash
from workbench.bulk.schema import VALIDATION
from workbench.bulk.table import State

if TYPE_CHECKING:
    import polars as pl

HASH_SEED = 20240611
TEXTS = VALIDATION.texts  # message, display, issue, system
NO_ROWS = np.zeros(0, dtype=np.int64)


KIND = "kind"  # the per-answer column of kinds
KINDS = np.uint8  # a kind's bits (see ``Lookup``): the result's two, one per text
assert 2 + len(TEXTS) <= 8
assert all(column.name != KIND for column in VALIDATION.columns)


@dataclass(frozen=True)
class Built:
    """How the result frame of some rows is built for one system (see ``Answered``): the
    columns of the answers' table its rows take (``table``), and the expressions of the
    result columns but ``result`` over them."""

    table: pl.DataFrame
    columns: list[pl.Expr]


@dataclass(frozen=True)
class Answered:
    """Per answer what its rows get (see ``Lookup``): ``table``, one row per answer, holds
    its ``kind`` (``KINDS``) and the columns gathered for its rows (texts without nulls,
    counts). ``built``: per system, how a result frame is built (see ``Built``), made
    once for these answers."""

    table: pl.DataFrame
    built: dict[str | None, Built] = field(default_factory=dict, compare=False)

    def take(self, at: pl.Series) -> Answered:
        """The answers at ``at``, in that order."""
        return Answered(self.table.gather(at))

    def frame(self, at: np.ndarray, system: str | None) -> pl.DataFrame:
        """The result frame of the rows whose answers are at ``at`` (uint32). ``system``
        given: the same for every row (one Enum value); else each answer's own."""
        import polars as pl

        built = self.built.get(system)
        if built is None:
            built = self.built[system] = _built(self.table, system)
        # one gather of the table: polars checks and copies the positions once per
        # gather, not once per column
        rows = built.table.gather(pl.Series(at))
        frame = rows.select_seq(built.columns)
        return frame.insert_column(RESULT_AT, result_bits(rows[KIND].to_numpy()))


RESULT_AT = next(i for i, c in enumerate(VALIDATION.columns) if c.kind == "result")


def result_bits(kind: np.ndarray) -> pl.Series:
    """The boolean result column of rows of these kinds (their two low bits: 0 NA, 1 false,
    2 true), its Arrow value and validity bits packed by numpy (a pass each, where polars'
    ``when`` takes several)."""
    import polars as pl

    low = kind & 3
    valid = np.packbits(low != 0, bitorder="little")
    true = np.packbits(low == 2, bitorder="little")
    bits = pa.Array.from_buffers(pa.bool_(), len(kind), [pa.py_buffer(valid), pa.py_buffer(true)])
    return pl.Series(VALIDATION.columns[RESULT_AT].name, bits)


def _built(table: pl.DataFrame, system: str | None) -> Built:
    """``Built`` for the answers of ``table`` and ``system`` (see ``Answered.frame``)."""
    import polars as pl

    kind = pl.col(KIND)
    taken = [KIND]
    columns = []
    for column in VALIDATION.columns:
        name = column.name
        if column.kind == "result":
            continue  # built by ``result_bits``
        if system is not None and column.per_system:
            columns.append(pl.lit(system, dtype=pl.Enum([system])).alias(name))
        elif name not in table.columns:  # no answer has a text here
            columns.append(pl.lit(None, dtype=pl.Enum([])).alias(name))
        elif column.kind == "count":
            columns.append(pl.col(name))
            taken.append(name)
        else:
            bit = TEXTS.index(name)
            columns.append(pl.when(kind & (4 << bit) == 0).then(pl.col(name)).alias(name))
            taken.append(name)
    return Built(pl.DataFrame([table[name] for name in taken]), columns)


@dataclass(frozen=True)
class Lookup:
    """What a polars lookup needs of one table state (built once per state).

    ``table`` is a perfect hash table of the codes' polars hashes: a code's hash proposes
    its position (``codes[0]``, the missing answer's, is ""; an empty slot proposes it
    too). A hash only proposes a position: the row's string is then compared with the
    code there (by ``views``, and ``codes``).
    ``answers`` holds, per answer, its texts (the text columns of ``VALIDATION``: ``Enum``
    columns without nulls; a column no answer has is left out), its counts (if the schema
    has any) and its kind: the result (0 NA, 1 false, 2 true) and one bit per text that
    is null (``4 << i`` for ``TEXTS[i]``).
    """

    codes: pl.Series
    table: PerfectHash
    answers: Answered
    views: Views


@dataclass(frozen=True)
class Views:
    """The codes' Arrow string views (16 bytes each) as two words per code (``words``, one
    row per code, so that a row's two words are one read): the head (the length and the
    first four bytes) and the tail (the next eight bytes). A string of at most ``INLINE``
    bytes is all in its view, zero-padded, so two such strings are equal exactly when both
    words are. A longer one's tail points into a data buffer: ``long`` says whether any
    code is that long (then rows of equal heads are compared by polars)."""

    words: np.ndarray  # uint64, (codes, 2)
    long: bool

    @classmethod
    def of(cls, codes: pl.Series) -> Views:
        """The views of a String Series of codes."""
        words = string_views(codes)
        return cls(np.ascontiguousarray(words), bool((_lengths(words) > INLINE).any()))


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


def _build(state: State) -> Lookup:
    import polars as pl

    codes = pl.Series("code", state.arrow(pa.string()), dtype=pl.String).rechunk()
    hashes = codes.hash(HASH_SEED).to_numpy()
    # the texts are gathered without nulls (gathering nulls costs more than putting them
    # back from the kind's bits)
    kind = (state.answers.result + 1).astype(KINDS)
    answers = {}
    for bit, name in enumerate(TEXTS):
        ids, texts = state.factorized(name)
        kind |= (ids < 0).astype(KINDS) << (bit + 2)
        if len(texts):
            labels = pl.Series(name, texts, dtype=pl.String)
            enum = labels.cast(pl.Enum(labels))
            answers[name] = enum.gather(np.maximum(ids, 0).astype(np.uint32)).alias(name)
    for column in VALIDATION.columns:
        if column.kind == "count":
            answers[column.name] = pl.Series(column.name, state.answers[column.name])
    answered = Answered(pl.DataFrame([pl.Series(KIND, kind), *answers.values()]))
    return Lookup(codes, PerfectHash.of(hashes), answered, Views.of(codes))


def locate(found: Lookup, part: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's position among the codes of ``found`` (a String Series; a null row is
    the missing answer, 0) as uint32, and the rows (int64) whose code is not there (their
    position is 0).

    The row's hash proposes a position (see ``Lookup``), and the row's string must then
    equal the code there: compared by their Arrow views in place (see ``Views``), or by
    polars where both are longer than a view holds."""
    position = found.table.positions(part.hash(HASH_SEED).to_numpy())
    words = string_views(part)
    differ = found.views.words.take(position, axis=0)  # the proposed codes' views
    np.bitwise_xor(differ, words, out=differ)  # 0 where a word is equal
    if found.views.long:  # a long row's tail is no string: equal heads are compared by polars
        heads = differ[:, 0] == 0
        long = _lengths(words) > INLINE
        right = heads & (differ[:, 1] == 0) & ~long
        right[_equal(found, position, part, np.flatnonzero(heads & long))] = True
    else:
        right = (differ[:, 0] | differ[:, 1]) == 0
    if part.null_count():  # a null row's view holds anything
        null = part.is_null().to_numpy()
        position[null] = 0
        right |= null
    if right.all():
        return position, NO_ROWS
    lost = np.flatnonzero(~right)
    position[lost] = 0  # the position proposed was another code's
    return position, lost


def _equal(found: Lookup, position: np.ndarray, part: pl.Series, rows: np.ndarray) -> np.ndarray:
    """Those of ``rows`` whose string equals the code at their position (polars compares)."""
    import polars as pl

    if not len(rows):
        return rows
    codes = found.codes.gather(pl.Series(position.take(rows)))
    return rows[(codes == part.gather(rows)).fill_null(False).to_numpy()]
