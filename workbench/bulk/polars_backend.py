"""Polars input for bulk validation, answered natively: no Python object per row.

One system for every row (``system=`` a URI, or a system column that holds one value) and
no display column: each row finds its answer in the answer table through a ``Lookup`` built
once per table state: the row's polars hash proposes a position in an open-addressing table
of the codes' hashes, and the code at that position must equal the row (gathered and
compared by polars; a hash never decides alone). What is not found (a code the table has not
seen) is answered through Arrow and added to the table. A ``Categorical`` or ``Enum`` column
is looked up through its categories, and its rows take the answers by physical id; a
``Categorical``'s answers per id are kept with the table state, read again only for ids
added to its ``Categories`` since, or held by no row then. The
result columns are gathered by polars from per-answer columns (``Enum`` texts, a byte per
answer for the result and the nulls), the system is one literal value. Anything else
(several systems, displays) goes to the pandas algorithm through Arrow, and comes back as a
polars DataFrame.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench.bulk import pandas_backend
from workbench.bulk.pandas_backend import check_columns
from workbench.bulk.schema import VALIDATION
from workbench.bulk.table import AnswerTable, State
from workbench.errors import InvalidRequestError

if TYPE_CHECKING:
    import polars as pl

    from workbench.bulk.checker import Checker
    from workbench.bulk.jobs import TranslateColumn, ValidateColumn


def handles(data: Any) -> bool:
    """Whether ``data`` is a polars DataFrame or Series (without importing polars)."""
    polars = sys.modules.get("polars")
    return polars is not None and isinstance(data, polars.DataFrame | polars.Series)


def validate(job: ValidateColumn, data: Any) -> pl.DataFrame:
    """``validate_column`` of polars data: natively with one system (or none given) and no
    displays, else through the pandas backend on the same Arrow buffers."""
    answered = validate_polars(
        job.checker(), data, code=job.code, system=job.system, display=job.display
    )
    if answered is not None:
        return answered
    return from_pandas(pandas_backend.validate(job, to_pandas(data)))


def translate(job: TranslateColumn, data: Any) -> pl.DataFrame:
    """``translate_column`` of polars data, through the pandas backend."""
    return from_pandas(pandas_backend.translate(job, to_pandas(data)))


def to_pandas(data: Any) -> pd.Series | pd.DataFrame:
    """The polars data as pandas backed by the same Arrow buffers (no Python objects);
    categorical columns become strings first."""
    import polars as pl

    if isinstance(data, pl.Series):
        if _categorical(data.dtype):
            data = data.cast(pl.String)
        return data.to_pandas(use_pyarrow_extension_array=True)
    data = data.with_columns(pl.col(pl.Categorical, pl.Enum).cast(pl.String))
    return data.to_pandas(use_pyarrow_extension_array=True)


def _categorical(dtype: Any) -> bool:
    """Whether a polars dtype is Categorical (whatever its categories) or Enum."""
    import polars as pl

    return isinstance(dtype, pl.Categorical | pl.Enum)


def from_pandas(frame: pd.DataFrame) -> Any:
    """A pandas result frame as a polars DataFrame (categoricals stay categorical)."""
    import polars as pl

    return pl.from_pandas(pd.DataFrame(frame), include_index=False)


_POOL: dict[int, ThreadPoolExecutor] = {}  # per process: a forked child starts its own


def _cores() -> int:
    """The cores this process may run on (not the machine's, under a CPU affinity)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def in_parallel(work: Callable[[int], Any], starts: Iterable[int]) -> list[Any]:
    """``work(start)`` for each start, results in order, over this thread and up to three
    kept threads (one per core; numpy and polars release the interpreter lock on large
    arrays). Each thread takes the next start not yet taken, this thread too: on a busy
    machine a helper thread may get no core for milliseconds, and then this thread does
    its share rather than wait for it; it waits only for the starts a helper has taken."""
    starts = list(starts)
    workers = min(_cores(), 4, len(starts))
    if workers <= 1:
        return [work(start) for start in starts]
    pool = _POOL.get(os.getpid())
    if pool is None:
        _POOL.clear()  # a parent's pool: its threads are not in this process
        pool = _POOL.setdefault(os.getpid(), ThreadPoolExecutor(3, "workbench-bulk"))
    results: list[Any] = [None] * len(starts)
    failed: list[BaseException | None] = [None] * len(starts)
    done = [threading.Event() for _ in starts]
    taken = itertools.count()
    lock = threading.Lock()

    def run() -> None:
        while True:
            with lock:
                k = next(taken)
            if k >= len(starts):
                return
            try:
                results[k] = work(starts[k])
            except BaseException as error:  # raised again in the calling thread
                failed[k] = error
            finally:
                done[k].set()

    for _ in range(workers - 1):
        pool.submit(run)
    run()
    for k, event in enumerate(done):
        event.wait()  # before reading failed[k]: set once start k is done
        error = failed[k]
        if error is not None:
            raise error
    return results


def _uniform(values: pl.Series) -> str | None:
    """The one non-empty string every row of a column holds, else None."""
    import polars as pl

    if len(values) == 0 or values.null_count():
        return None
    first = values[0]
    if not isinstance(first, str) or first == "":
        return None
    if _categorical(values.dtype):
        physical = values.to_physical()  # one category: one id
        return first if physical.min() == physical.max() else None
    strings = values.cast(pl.String)

    def same(start: int) -> bool:
        return bool((strings.slice(start, CHUNK) == first).all())

    return first if all(in_parallel(same, range(0, len(strings), CHUNK))) else None


HASH_SEED = 20240611
TEXTS = VALIDATION.texts  # message, display, issue, system
FEW = 8  # a text column of at most this many texts is built from the kind, not gathered
SPREAD = 4  # hash slots per code in each level (at most a quarter of the slots hold one)
CHUNK = 1 << 18  # rows per step of a lookup or of the result frame (each step costs ~1 ms)
MAX_LEVELS = 32  # codes left after these (equal hashes) are found through Arrow
# odd 64-bit multipliers: each level reads other bits of the hash
MULTIPLIERS = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93],
    dtype=np.uint64,
)


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


@dataclass(frozen=True)
class Answered:
    """Per answer what its rows get (see ``Lookup``): ``gathered`` columns, and the
    ``few`` text columns built from the kind (per name: the shift of its id, its texts)."""

    gathered: dict[str, pl.Series]
    few: dict[str, tuple[int, pl.Series]]

    def take(self, at: pl.Series) -> Answered:
        """The answers at ``at``, in that order."""
        return Answered({name: s.gather(at) for name, s in self.gathered.items()}, self.few)


@dataclass(frozen=True)
class Lookup:
    """What a polars lookup needs of one table state (built once per state).

    ``levels`` are hash tables over the codes' polars hashes (``hashes``): a code's position
    is in the first level where its slot was free (position 0, the missing answer, is never
    in a slot; ``hashes[0]`` is the hash of ""). A hash only proposes a position: the row's
    string is then compared with the code there (``codes``).
    ``answers`` holds, per answer, its texts (the text columns of ``VALIDATION``: ``Enum``
    columns without nulls; a column no answer has is left out, and so is a column of at
    most ``FEW`` distinct texts), its counts (if the schema has any) and ``kind``, a
    UInt16: the result (0 NA, 1 false, 2 true), one bit per text that is null (``4 << i``
    for ``TEXTS[i]``) and, per text column of at most ``FEW`` texts, the text's id in four
    bits (at ``few[name]``: its shift and its texts, an ``Enum`` Series). A row's few-texts
    column is then built from its kind by a short ``when`` chain, not gathered.
    """

    codes: pl.Series
    hashes: np.ndarray
    levels: tuple[Level, ...]
    answers: Answered
    null_apart: bool  # no code hashes like a null: a null row is found nowhere (so at 0)


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
    answers["kind"] = pl.Series("kind", kind)
    null = pl.Series([None], dtype=pl.String).hash(HASH_SEED).to_numpy()[0]
    null_apart = not bool((hashes[1:] == null).any())
    return Lookup(codes, hashes, _levels(hashes), Answered(answers, few), null_apart)


def _strings(
    table: AnswerTable, values: pl.Series, used: pl.Series | None = None
) -> tuple[State, pl.Series]:
    """Each row's position in the answers of ``table`` (a String column): found in the
    table's lookup, else answered through Arrow (and added to the table). ``used``: the
    rows that matter (ids into ``values``); a row not found and not used keeps 0."""
    state = table.state
    position, lost = find(lookup(state), values)
    if len(lost) and used is not None:  # e.g. categories no row of the column holds
        wanted = np.zeros(len(values), dtype=bool)
        wanted[used.drop_nulls().to_numpy()] = True
        lost = lost[wanted[lost]]
    if len(lost):
        state, answered = table.arrow(values.gather(lost).to_arrow())
        position = position.scatter(lost, answered.astype(np.uint32))
    return state, position


def find(found: Lookup, values: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """Each row's position among the codes of ``found`` (a String column; a null row is
    the missing answer, 0) as a UInt32 Series, and the rows whose code is not there. The
    row's hash proposes a position (in the first level that has a code of that hash); the
    code there must equal the row. Rows go in chunks of CHUNK, over a few threads: each
    step's buffers are small, rather than fresh memory the size of the column."""
    import polars as pl

    position = np.zeros(len(values), dtype=np.uint32)

    def step(start: int) -> np.ndarray:
        part = values.slice(start, CHUNK)
        proposed = _propose(found, part)
        if part.null_count() and not found.null_apart:
            proposed[part.is_null().to_numpy()] = 0
        position[start : start + len(part)] = proposed
        wrong = found.codes.gather(pl.Series(proposed)) != part  # a null row: null, at 0
        if not wrong.any():
            return np.zeros(0, dtype=np.int64)
        return start + wrong.fill_null(False).arg_true().to_numpy().astype(np.int64)

    lost = in_parallel(step, range(0, len(values), CHUNK))
    return pl.Series("at", position), np.concatenate([np.zeros(0, dtype=np.int64), *lost])


def _propose(found: Lookup, values: pl.Series) -> np.ndarray:
    """For each row, the position of a code with the row's hash (0: none)."""
    hashes = values.hash(HASH_SEED).to_numpy()
    first = found.levels[0] if found.levels else Level(np.zeros(1, dtype=np.uint32), 0)
    position = first.slots.take(first.slot(hashes))
    rows = np.flatnonzero(found.hashes.take(position) != hashes)
    for level in found.levels[1:]:
        if not len(rows):
            break
        sub = hashes.take(rows)
        at = level.slots.take(level.slot(sub))
        hit = (at != 0) & (found.hashes.take(at) == sub)
        position[rows[hit]] = at[hit]
        rows = rows[~hit]
    position[rows] = 0  # no code of that hash: "" is the code at 0, anything else is lost
    return position


def _categories(values: pl.Series) -> tuple[pl.Series, pl.Series]:
    """A Categorical or Enum column as (strings, ids): each row's id into ``strings``
    (UInt32; a null row is null)."""
    import polars as pl

    physical = values.to_physical()
    if isinstance(values.dtype, pl.Enum):
        return pl.Series(values.dtype.categories), physical.cast(pl.UInt32)
    if physical.null_count() == len(physical):
        return pl.Series([], dtype=pl.String), physical.cast(pl.UInt32)
    top = int(physical.max())  # type: ignore[arg-type]
    if top < len(values):  # every id up to the largest: no pass over the rows
        ids = pl.Series(np.arange(top + 1, dtype=np.uint32))
    else:
        ids = physical.drop_nulls().unique().cast(pl.UInt32)
        lookup_ids = np.zeros(top + 1, dtype=np.uint32)
        lookup_ids[ids.to_numpy()] = np.arange(len(ids), dtype=np.uint32)
        physical = pl.Series(lookup_ids).gather(physical)
    strings = ids.cat.to(values.dtype, strict=False).cast(pl.String)
    return strings, physical.cast(pl.UInt32)


def _per_id(state: State, position: pl.Series) -> Answered:
    """The answers (as in ``Lookup``) per category id, and one more for a null row: the
    missing answer."""
    import polars as pl

    return lookup(state).answers.take(position.append(pl.Series([0], dtype=pl.UInt32)))


@dataclass(frozen=True)
class KnownCategories:
    """The answers of a table state for the ids ``0..top`` of a polars ``Categories``
    (``answers`` as ``_per_id`` gives them) and the ids left unanswered (no row held them
    when they were read: None if every id is answered).

    polars frees a ``Categories``' strings once no Categorical Series of it is alive, and
    then gives their ids to new strings; while one is alive, it only adds strings. So
    ``pinned``, the Categorical of the ids ``0..top``, keeps each id on its string for as
    long as these answers are kept: they stay right for later columns."""

    top: int
    answers: Answered
    unanswered: np.ndarray | None  # bool per id (and False for the null row's id)
    pinned: pl.Series


def _known_categories(table: AnswerTable, values: pl.Series) -> tuple[Answered, pl.Series] | None:
    """The per-id answers and the rows' ids (a null row: the id after ``top``) of a
    Categorical column whose ids all fall in ``0..top`` of its ``Categories``, from the
    table state's cache, read once per state and ``Categories`` size. None when the
    ``Categories`` hold many more strings than the column has rows (then only the ids the
    rows use are read, as ``_categories`` does)."""
    import polars as pl

    physical = values.to_physical()
    if physical.null_count() == len(physical):
        return None
    top = int(physical.max())  # type: ignore[arg-type]
    if top >= len(values):
        return None
    categories = values.dtype.categories  # type: ignore[attr-defined]
    key = f"polars:categories:{categories.namespace()}:{categories.name()}:{categories.physical()}"
    state = table.state
    known: KnownCategories | None = state.cache.get(key)
    ids = physical.cast(pl.UInt32)
    if known is not None and top <= known.top:
        ids = ids.fill_null(known.top + 1) if ids.null_count() else ids
        if known.unanswered is None or not known.unanswered.take(ids.to_numpy()).any():
            return known.answers, ids
    ids = physical.cast(pl.UInt32)
    pinned = pl.Series(np.arange(top + 1, dtype=np.uint32)).cat.to(values.dtype, strict=False)
    strings = pinned.cast(pl.String)
    state, position = _strings(table, strings, used=ids)
    # unanswered: no row holds the id, and the table did not have its string ("" is the
    # missing answer, at position 0 like an unanswered id)
    unanswered = np.zeros(top + 2, dtype=bool)
    unanswered[: top + 1] = (position.to_numpy() == 0) & (strings != "").to_numpy()
    unanswered[ids.drop_nulls().to_numpy()] = False
    found = unanswered if unanswered.any() else None
    known = KnownCategories(top, _per_id(state, position), found, pinned)
    state.cache[key] = known
    return known.answers, ids.fill_null(top + 1) if ids.null_count() else ids


def validate_codes(table: AnswerTable, values: pl.Series, system: str | None) -> pl.DataFrame:
    """The frame of ``VALIDATION`` for a String, Categorical or Enum column of codes of
    ``system`` (None: codes without a system, each answered as the value set infers its
    system). Only the categories the rows hold are answered (a Categorical's categories
    may be shared with other columns)."""
    import polars as pl

    if isinstance(values.dtype, pl.Categorical):
        known = _known_categories(table, values)
        if known is not None:
            answers, ids = known
            return result_frame(answers, ids, system)
    if _categorical(values.dtype):
        strings, ids = _categories(values)
        state, position = _strings(table, strings, used=ids)
        answers = _per_id(state, position)
        if ids.null_count():
            ids = ids.fill_null(len(strings))
        return result_frame(answers, ids, system)
    state, position = _strings(table, values)
    return result_frame(lookup(state).answers, position, system)


def result_frame(answers: Answered, at: pl.Series, system: str | None) -> pl.DataFrame:
    """The polars frame of ``VALIDATION``: row ``i`` gets the answer at ``at[i]`` (``answers`` as
    in ``Lookup``). ``system`` given: the same for every row (one Enum value, not repeated
    in memory); else each answer's own. Built in chunks of CHUNK rows, over a few threads
    (the columns are chunked alike)."""
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

    def step(start: int) -> pl.DataFrame:
        # select_seq: the chunks are already spread over threads; a select would hand each
        # chunk's columns to polars' own threads, and wait for them on a busy machine
        part = at.slice(start, CHUNK)
        frame = pl.DataFrame({"at": part, "kind": gathered["kind"].gather(part)})
        return frame.select_seq(columns)

    frames = in_parallel(step, range(0, max(len(at), 1), CHUNK))
    return pl.concat(frames, rechunk=False) if len(frames) > 1 else frames[0]


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


def validate_polars(
    checker: Checker,
    data: Any,
    *,
    code: str | None,
    system: str | None,
    display: str | None,
) -> pl.DataFrame | None:
    """The answer for polars data with one system (or none given) and no displays; None
    otherwise (then the pandas algorithm answers)."""
    import polars as pl

    if isinstance(data, pl.Series):
        if display is not None:
            raise InvalidRequestError("display=... names a column; pass a DataFrame for that")
        codes, one = data, system
    else:
        check_columns(list(data.columns), code=code, system=system, display=display)
        assert code is not None
        if display is not None and data[display].null_count() < data.height:
            return None
        codes, one = data[code], system
        if system is not None and system in data.columns:
            one = _uniform(data[system])
            if one is None:  # several systems, or missing ones
                return None
    if not (codes.dtype == pl.String or _categorical(codes.dtype)):
        return None  # numbers and the like: the pandas path turns them into code text
    return validate_codes(checker.table(one), codes, one)
