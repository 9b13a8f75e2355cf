"""Polars input for bulk validation, answered natively: no Python object per row.

One system for every row (``system=`` a URI, or a system column that holds one value) and
no display column: each row finds its answer in the answer table through a ``Lookup`` built
once per table state (``polars_lookup``): the row's polars hash proposes a position (by a
perfect hash table of the codes' hashes), and the code at that position must equal the
row (by their Arrow string views; a hash never decides alone). What is not found (a
code the table has not seen) is answered through Arrow and added to the table. A
``Categorical`` or ``Enum`` column is looked up through its categories, and its rows take
the answers by physical id; a ``Categorical``'s answers per id are kept with the table
state, read again only for ids added to its ``Categories`` since, or held by no row then.
The result columns are gathered by polars, in one gather per chunk, from a frame of the
answers (``Enum`` texts without nulls, and each answer's kind: its result and which texts
are null); the system is one literal value. The rows go in chunks over a few threads,
each chunk in one step: its codes located and its result frame built. A String system
column is compared with the one system in one task beside the steps, whose results are
dropped if a row holds another system. Anything else (several systems, displays) goes to
the pandas algorithm through Arrow, and comes back as a polars DataFrame.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from workbench.bulk import counting, libraries, pandas_backend
from workbench.bulk.pandas_backend import check_columns
from workbench.bulk.polars_lookup import NO_ROWS, Answered, Lookup, locate, lookup
from workbench.bulk.table import AnswerTable, State
from workbench.errors import InvalidRequestError

if TYPE_CHECKING:
    import polars as pl

    from workbench.bulk.checker import Checker
    from workbench.bulk.jobs import TranslateColumn, ValidateColumn


def handles(data: Any) -> bool:
    """Whether ``data`` is a polars DataFrame or Series (without importing polars)."""
    return libraries.is_polars(data)


def counts(data: Any, column: str | None) -> pd.DataFrame:
    """The distinct codes of a polars column with their rows, counted by polars."""
    values = counting.column_of(data, column, "polars")
    found = values.drop_nulls().cast(str).value_counts()
    return counting.code_counts(found[:, 0].to_list(), found[:, 1].to_numpy(), values.null_count())


def validate(job: ValidateColumn, data: Any) -> pl.DataFrame:
    """``validate_column`` of polars data: natively with one system (or none given) and no
    displays, else through the pandas backend on the same Arrow buffers."""
    answered = validate_polars(
        job.checker(), data, code=job.code, system=job.system, display=job.display
    )
    if answered is not None:
        return answered
    return from_pandas(pandas_backend.validate(job, _codings_as_dicts(job, to_pandas(data))))


def _codings_as_dicts(job: ValidateColumn, frame: Any) -> Any:
    """The pandas form of polars data whose code column holds structs (Codings or
    CodeableConcepts) as dicts, as a pandas column of them is read; a column of lists or
    arrays is refused, naming it and its type."""
    column = frame[job.code] if isinstance(frame, pd.DataFrame) else frame
    if not isinstance(column.dtype, pd.ArrowDtype):
        return frame
    import pyarrow as pa

    kind = column.dtype.pyarrow_dtype
    name = job.code if isinstance(frame, pd.DataFrame) else column.name
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        raise InvalidRequestError(
            f"The code column {name!r} holds lists ({kind}): validate_column takes codes "
            "(text), or Codings and CodeableConcepts (structs)"
        )
    if not pa.types.is_struct(kind):
        return frame
    dicts = pd.Series(column.tolist(), index=column.index, dtype=object, name=column.name)
    if isinstance(frame, pd.DataFrame):
        return frame.assign(**{str(job.code): dicts})
    return dicts


def collect(job: ValidateColumn, data: Any, result: Any) -> tuple[pd.DataFrame, Any]:
    """The result and the input columns it is about, as pandas (``reports.report_of``)."""
    import polars as pl

    from workbench.bulk.reports import input_columns

    if isinstance(data, pl.DataFrame):
        data = data.select(input_columns(job, data.columns))
    return result.to_pandas(), to_pandas(data)


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


T = TypeVar("T")
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


@dataclass(frozen=True)
class SameSystem:
    """A String system column whose rows must all hold ``value``: compared beside the
    codes' own work (``beside``), or on its own chunk by chunk over a few threads
    (``everywhere``)."""

    column: pl.Series
    value: str

    def holds(self, start: int) -> bool:
        """Whether the rows of the chunk at ``start`` all hold the value."""
        return bool((self.column.slice(start, CHUNK) == self.value).all())

    def everywhere(self) -> bool:
        """Whether every row holds the value."""
        return all(in_parallel(self.holds, range(0, len(self.column), CHUNK)))


def beside(same: SameSystem | None, work: Callable[[int], T], starts: range) -> list[T] | None:
    """``work(start)`` for each start (as ``in_parallel``), with the whole system column of
    ``same`` (if any) compared in one task among them; None if a row holds another value
    (then the work's results are dropped, so ``work`` must not ask the engine anything).
    One core compares while the others work: measured faster than comparing on every core
    first, or a chunk of the column before each step."""
    if same is None:
        return in_parallel(work, starts)
    done = in_parallel(
        lambda start: bool((same.column == same.value).all()) if start < 0 else work(start),
        [-1, *starts],
    )
    return done[1:] if done[0] else None


def _system_of(values: pl.Series) -> tuple[str | None, SameSystem | None]:
    """The system of a system column: the one non-empty string every row holds (else
    None), and, for a String column, its rows still to be compared with it (the caller
    does that, see ``SameSystem``)."""
    import polars as pl

    if len(values) == 0 or values.null_count():
        return None, None
    first = values[0]
    if not isinstance(first, str) or first == "":
        return None, None
    if values.dtype == pl.String:
        return first, SameSystem(values, first)
    if _categorical(values.dtype):
        physical = values.to_physical()  # one category: one id
        return (first if physical.min() == physical.max() else None), None
    return (first if SameSystem(values.cast(pl.String), first).everywhere() else None), None


CHUNK = 1 << 18  # rows per step (a step of a String column costs ~10 ms: 4 per 1M rows)


@dataclass(frozen=True)
class Ids:
    """Each row's position in a table of answers, read chunk by chunk (``chunk``): the
    positions as polars holds them (``values``, read in place) and, if some rows are null,
    their Arrow validity bits (``valid`` from bit ``offset``): a null row takes ``null_id``.
    A null row's own value is whatever polars left there, so it is never read. Substituting
    per chunk, in the chunk's step, spares a pass over every row (and a fresh column the
    size of the rows) before the steps start."""

    values: np.ndarray  # unsigned integers
    valid: np.ndarray | None = None  # uint8, the validity bitmap (least significant bit first)
    offset: int = 0
    null_id: int = 0

    @classmethod
    def of(cls, positions: pl.Series, null_id: int) -> Ids:
        """The ids of an unsigned integer Series (a null row: ``null_id``)."""
        if not positions.null_count():
            return cls(positions.to_numpy())
        array = positions.rechunk().to_arrow()  # one Arrow array over polars' buffers
        validity, data = array.buffers()
        width = array.type.bit_width // 8
        values = np.frombuffer(
            data, dtype=f"u{width}", count=len(array), offset=array.offset * width
        )
        return cls(values, np.frombuffer(validity, dtype=np.uint8), array.offset, null_id)

    def __len__(self) -> int:
        return len(self.values)

    def chunk(self, start: int) -> np.ndarray:
        """The positions of the rows ``start`` to ``start + CHUNK``."""
        part = self.values[start : start + CHUNK]
        if self.valid is None:
            return part
        null = self.nulls(start, len(part))
        if not len(null):
            return part
        part = part.astype(np.uint32)  # a copy (``null_id`` may not fit a narrower id)
        part[null] = self.null_id
        return part

    def nulls(self, start: int, count: int) -> np.ndarray:
        """The null rows among ``count`` rows from ``start``, relative to ``start``: only
        the bytes of the validity bitmap with a bit clear are unpacked."""
        assert self.valid is not None
        first = self.offset + start
        low = first // 8
        bytes_ = self.valid[low : (first + count + 7) // 8]
        some = np.flatnonzero(bytes_ != 0xFF)
        bits = np.unpackbits(bytes_[some, None], axis=1, bitorder="little")
        rows = ((low + some)[:, None] * 8 + np.arange(8)) - first
        rows = rows[bits == 0]
        return rows[(rows >= 0) & (rows < count)]

    def any_of(self, flags: np.ndarray) -> bool:
        """Whether a row's position is flagged (``flags``: a bool per position)."""
        return any(
            bool(flags.take(self.chunk(start)).any()) for start in range(0, len(self), CHUNK)
        )


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
    the missing answer, 0) as a UInt32 Series, and the rows whose code is not there (see
    ``locate``), in chunks of CHUNK rows over a few threads."""
    import polars as pl

    def step(start: int) -> tuple[np.ndarray, np.ndarray]:
        position, lost = locate(found, values.slice(start, CHUNK))
        return position, start + lost

    parts = in_parallel(step, range(0, len(values), CHUNK))
    position = np.concatenate([np.zeros(0, dtype=np.uint32), *(p for p, _ in parts)])
    return pl.Series("at", position), np.concatenate([NO_ROWS, *(lost for _, lost in parts)])


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


def _known_categories(
    table: AnswerTable, values: pl.Series, *, read: bool = True
) -> tuple[Answered, Ids] | None:
    """The per-id answers and the rows' ids (a null row: the id after ``top``) of a
    Categorical column whose ids all fall in ``0..top`` of its ``Categories``, from the
    table state's cache, read once per state and ``Categories`` size. None when the
    ``Categories`` hold many more strings than the column has rows (then only the ids the
    rows use are read, as ``_categories`` does), and, unless ``read``, when an id the rows
    hold is not answered yet (nothing is then asked of the engine)."""
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
    if known is not None and top <= known.top:
        rows = Ids.of(physical, known.top + 1)
        if known.unanswered is None or not rows.any_of(known.unanswered):
            return known.answers, rows
    if not read:
        return None
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
    return known.answers, Ids.of(physical, top + 1)


def validate_codes(
    table: AnswerTable, values: pl.Series, system: str | None, same: SameSystem | None = None
) -> pl.DataFrame | None:
    """The frame of ``VALIDATION`` for a String, Categorical or Enum column of codes of
    ``system`` (None: codes without a system, each answered as the value set infers its
    system). Only the categories the rows hold are answered (a Categorical's categories
    may be shared with other columns). ``same``: the system column's rows, which must all
    hold ``system`` (else None, and no code is answered)."""
    import polars as pl

    if values.dtype == pl.String:
        return _answer_strings(table, values, system, same)
    if isinstance(values.dtype, pl.Categorical):
        known = _known_categories(table, values, read=False)
        if known is not None:
            return result_frame(*known, system, same)
        if same is not None and not same.everywhere():
            return None  # before any id is read: the engine is asked under one system only
        known = _known_categories(table, values)
        if known is not None:
            return result_frame(*known, system)
    elif same is not None and not same.everywhere():
        return None
    strings, ids = _categories(values)
    state, position = _strings(table, strings, used=ids)
    return result_frame(_per_id(state, position), Ids.of(ids, len(strings)), system)


def _answer_strings(
    table: AnswerTable, values: pl.Series, system: str | None, same: SameSystem | None
) -> pl.DataFrame | None:
    """``validate_codes`` of a String column: per chunk of rows, over a few threads (beside
    the comparison of ``same``), the rows located and their result frame built; the rows
    the table does not have are answered after (through Arrow, added to the table), and
    then the result frame is built again with the new answers."""
    import polars as pl

    found = lookup(table.state)

    def step(start: int) -> tuple[np.ndarray, np.ndarray, pl.DataFrame | None]:
        position, lost = locate(found, values.slice(start, CHUNK))
        frame = None if len(lost) else found.answers.frame(position, system)
        return position, start + lost, frame

    starts = range(0, max(len(values), 1), CHUNK)
    done = beside(same, step, starts)
    if done is None:
        return None
    lost = np.concatenate([NO_ROWS, *(part[1] for part in done)])
    if not len(lost):
        frames = [part[2] for part in done if part[2] is not None]  # every one, nothing lost
        return pl.concat(frames, rechunk=False) if len(frames) > 1 else frames[0]
    position = np.concatenate([part[0] for part in done])
    state, answered = table.arrow(values.gather(lost).to_arrow())
    position[lost] = answered
    return result_frame(lookup(state).answers, Ids(position), system)


def result_frame(
    answers: Answered, at: Ids, system: str | None, same: SameSystem | None = None
) -> pl.DataFrame | None:
    """The polars frame of ``VALIDATION``: row ``i`` gets the answer at its id in ``at``
    (``answers`` as in ``Lookup``). ``system`` given: the same for every row (one Enum value, not
    repeated in memory); else each answer's own. Built in chunks of CHUNK rows, over a few
    threads (the columns are chunked alike), beside the comparison of ``same`` (None if a
    row of it holds another system)."""
    import polars as pl

    def step(start: int) -> pl.DataFrame:
        # select_seq (in ``frame``): the chunks are already spread over threads; a select
        # would hand each chunk's columns to polars' own threads, and wait for them on a
        # busy machine
        return answers.frame(at.chunk(start), system)

    starts = range(0, max(len(at), 1), CHUNK)
    frames = beside(same, step, starts)
    if frames is None:
        return None
    return pl.concat(frames, rechunk=False) if len(frames) > 1 else frames[0]


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

    same = None
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
    if not (codes.dtype == pl.String or _categorical(codes.dtype)):
        return None  # numbers and the like: the pandas path turns them into code text
    if isinstance(data, pl.DataFrame) and system is not None and system in data.columns:
        one, same = _system_of(data[system])
        if one is None:  # several systems, or missing ones
            return None
    return validate_codes(checker.table(one), codes, one, same)
