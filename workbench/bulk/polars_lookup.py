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
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from workbench.bulk.perfect_hash import PerfectHash
from workbench.bulk.schema import VALIDATION
from workbench.bulk.table import State

if TYPE_CHECKING:
    import polars as pl

HASH_SEED = 20240611
TEXTS = VALIDATION.texts  # message, display, issue, system
FEW = 8  # a text column of at most this many texts is built from the kind, not gathered
NO_ROWS = np.zeros(0, dtype=np.int64)


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

    ``table`` is a perfect hash table of the codes' polars hashes: a code's hash proposes
    its position (``codes[0]``, the missing answer's, is ""; an empty slot proposes it
    too). A hash only proposes a position: the row's string is then compared with the
    code there (by ``views``, and ``codes``).
    ``answers`` holds, per answer, its texts (the text columns of ``VALIDATION``: ``Enum``
    columns without nulls; a column no answer has is left out, and so is a column of at
    most ``FEW`` distinct texts), its counts (if the schema has any) and ``kinds``: the
    result (0 NA, 1 false, 2 true), one bit per text that is null (``4 << i`` for
    ``TEXTS[i]``) and, per text column of at most ``FEW`` texts, the text's id in four
    bits (at ``few[name]``: its shift and its texts, an ``Enum`` Series). A row's few-texts
    column is then built from its kind by a short ``when`` chain, not gathered.
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
    answered = Answered(answers, few, kind)
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
