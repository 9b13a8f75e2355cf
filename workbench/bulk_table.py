"""Answers of bulk validation, per distinct value, and the compact result frame.

A value set's answer for a code of one system never changes while the compiled value set is
cached, so each code is checked once and its answer kept in an ``AnswerTable`` (one per value
set, ``abstract`` flag and system, and one for codes given without a system, which the
value set alone infers). A column is then answered by a lookup in that table in
the column's own encoding, with no per-row Python:

* ``object``: rows are grouped by object identity first (an integer hash of the element
  addresses; a string read from a CSV is one object for all its equal rows), then the
  distinct objects are looked up; a column whose equal strings are different objects
  (fresh strings per row) is looked up as Arrow strings instead (see ``shares_objects``);
* Arrow strings (``str``, ``string[pyarrow]``, ``ArrowDtype``): ``pyarrow.compute.index_in``
  against the table's cached Arrow array;
* ``category``: the categories are looked up, the rows take their answer by code.

Codes the table does not have yet are checked (once per distinct code) and added to it. The
result frame holds each row's position in the answers and builds categorical columns from
them: every distinct message or display is stored once, and a result that uses most of a
table's texts takes the table's own cached categories (shared, not copied per call).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench import collector
from workbench.report import COLUMNS

MISSING_MESSAGE = "No code was given"
MAX_TABLE = 2_000_000  # answers kept per table; beyond that new codes are answered per call
Row = tuple[Any, str | None, str | None, str | None, str | None]
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Answers:
    """Answers for distinct values, as parallel arrays.

    ``result`` is int8: 1 valid, 0 invalid, -1 NA (a missing code).
    """

    result: np.ndarray
    message: np.ndarray
    display: np.ndarray
    issue: np.ndarray
    system: np.ndarray

    def __len__(self) -> int:
        return len(self.result)

    @classmethod
    def of_rows(cls, rows: Sequence[Row]) -> Answers:
        """From ``(result, message, display, issue, system)`` tuples."""
        n = len(rows)
        result = np.empty(n, dtype=np.int8)
        columns = [np.empty(n, dtype=object) for _ in range(4)]
        for k, (ok, message, display, issue, system) in enumerate(rows):
            result[k] = -1 if ok is pd.NA or ok is None else int(bool(ok))
            columns[0][k], columns[1][k], columns[2][k], columns[3][k] = (
                message,
                display,
                issue,
                system,
            )
        return cls(result, *columns)

    @classmethod
    def concat(cls, parts: Sequence[Answers]) -> Answers:
        """One after the other."""
        if len(parts) == 1:
            return parts[0]
        return cls(
            *(
                np.concatenate([getattr(p, name) for p in parts])
                for name in ("result", "message", "display", "issue", "system")
            )
        )


Answerer = Callable[[np.ndarray], Answers]


@dataclass(frozen=True)
class State:
    """One version of a table: its codes and their answers (never changed once built)."""

    codes: np.ndarray  # object array of str; entry 0 is "" (the missing answer)
    answers: Answers
    cache: dict[str, Any] = field(default_factory=dict, compare=False)

    def index(self) -> pd.Index:
        """The codes as a hash index."""
        found = self.cache.get("index")
        if found is None:
            found = self.cache["index"] = pd.Index(self.codes, dtype=object, copy=False)
        return found

    def factorized(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The distinct texts of one answer column and each answer's id among them."""
        key = f"texts:{name}"
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = factorized(getattr(self.answers, name))
        return found

    def categories(self, name: str) -> tuple[np.ndarray, pd.Index]:
        """``factorized``, with the texts as an Arrow-backed index (built once)."""
        key = f"categories:{name}"
        found = self.cache.get(key)
        if found is None:
            ids, texts = self.factorized(name)
            found = self.cache[key] = (ids, text_index(texts))
        return found

    def category_codes(self, name: str) -> tuple[np.ndarray, pd.CategoricalDtype]:
        """Each answer's category code for one answer column (-1 for None, in the narrowest
        dtype), and the dtype whose categories are all of that column's distinct texts
        (built once per state: results that use them share one categories index)."""
        key = f"category-codes:{name}"
        found = self.cache.get(key)
        if found is None:
            ids, texts = self.categories(name)
            found = self.cache[key] = (
                ids.astype(_codes_dtype(len(texts))),
                pd.CategoricalDtype(texts),
            )
        return found

    def arrow(self, kind: pa.DataType) -> pa.Array:
        """The codes as an Arrow array of ``kind`` (for ``index_in``)."""
        key = f"arrow:{kind}"
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = pa.array(self.codes, type=pa.string()).cast(kind)
        return found


class AnswerTable:
    """The answers of one value set for the codes of one system, each checked once.

    ``answer`` checks distinct codes (an object array of str) and returns their answers.
    Entry 0 is the answer for a missing code (None, NaN, NA or "").
    """

    def __init__(self, system: str | None, answer: Answerer) -> None:
        self.system = system
        self.answer = answer
        missing = Answers(
            np.array([-1], dtype=np.int8),
            np.array([MISSING_MESSAGE], dtype=object),
            np.array([None], dtype=object),
            np.array(["missing"], dtype=object),
            np.array([system], dtype=object),
        )
        self.state = State(np.array([""], dtype=object), missing)

    def __getstate__(self) -> dict[str, Any]:
        # shipped (Dask) without what it learnt: a worker starts afresh
        fresh = AnswerTable(self.system, self.answer)
        return {"system": self.system, "answer": self.answer, "state": fresh.state}

    def extend(self, state: State, codes: np.ndarray) -> tuple[State, int]:
        """Answer new distinct codes; return a state that has them and where they start.

        The table keeps them unless it is full (then they live in the returned state only).
        """
        with collector.paused():  # a few objects per code, kept with the table
            found = self.answer(codes)
        grown = State(np.concatenate([state.codes, codes]), Answers.concat([state.answers, found]))
        with _LOCK:
            if len(grown.codes) <= MAX_TABLE and len(self.state.codes) < len(grown.codes):
                self.state = grown
        return grown, len(state.codes)

    # --- lookups, per encoding ---------------------------------------------------------

    def distinct(self, values: np.ndarray, state: State | None = None) -> tuple[State, np.ndarray]:
        """Positions of distinct values (an object array; may hold missing values and
        non-strings) in the returned state (grown from ``state``, by default the table's
        current one)."""
        state = self.state if state is None else state
        if len(values) == 0:
            return state, np.zeros(0, dtype=np.int64)
        position = state.index().get_indexer(pd.Index(values, dtype=object, copy=False))
        lost = np.flatnonzero(position < 0)
        if len(lost):
            rest = values[lost]
            missing = missing_mask(rest)
            position[lost[missing]] = 0
            lost, rest = lost[~missing], rest[~missing]
        if len(lost):
            texts = np.array([str(v) for v in rest], dtype=object)
            ids, uniques = pd.factorize(texts)
            uniques = np.asarray(uniques, dtype=object)
            # the text of a value that is not a str (b"x" is "b'x'") may be known already
            found = state.index().get_indexer(pd.Index(uniques, dtype=object, copy=False))
            new = np.flatnonzero(found < 0)
            if len(new):
                state, start = self.extend(state, uniques[new])
                found[new] = start + np.arange(len(new))
            position[lost] = found.take(ids)
        return state, position

    def objects(self, values: np.ndarray | Objects) -> tuple[State, np.ndarray]:
        """Row positions for an object array (or one already grouped): grouped by
        identity, then the groups' values looked up."""
        grouped = values if isinstance(values, Objects) else Objects.of(values)
        state, position = self.distinct(grouped.values)
        return state, position.take(grouped.ids)

    def arrow(self, values: pa.Array | pa.ChunkedArray) -> tuple[State, np.ndarray]:
        """Row positions for an Arrow string array (nulls are missing)."""
        state = self.state
        kind = values.type
        if pa.types.is_string_view(kind):
            values, kind = values.cast(pa.large_string()), pa.large_string()
        found = pc.index_in(values, value_set=state.arrow(kind))
        position = _filled(found)
        if values.null_count:
            position[_to_numpy_bool(values.is_null())] = 0
        lost = np.flatnonzero(position < 0)
        if len(lost):
            missed = values.take(pa.array(lost))
            uniques = pc.unique(missed)
            state, start = self.extend(
                state, np.asarray(uniques.to_numpy(zero_copy_only=False), dtype=object)
            )
            position[lost] = start + _filled(pc.index_in(missed, value_set=uniques))
        return state, position

    def categorical(self, values: pd.Series) -> tuple[State, np.ndarray]:
        """Row positions for a pandas categorical: the categories, then take by code."""
        categories = values.cat.categories
        if isinstance(categories.dtype, pd.StringDtype | pd.ArrowDtype):
            state, position = self.arrow(pa.array(categories))
        else:
            state, position = self.distinct(np.asarray(categories, dtype=object))
        codes = values.cat.codes.to_numpy()
        return state, np.append(position, 0).take(codes)

    def column(
        self, values: pd.Series, encoded: Objects | pa.Array | None = None
    ) -> tuple[State, np.ndarray]:
        """Row positions for a pandas column of any dtype (``encoded``: an object column
        already grouped by identity with the codes' texts, or already as Arrow strings)."""
        if isinstance(encoded, Objects):
            return self.objects(encoded)
        if encoded is not None:
            return self.arrow(encoded)
        dtype = values.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            return self.categorical(values)
        arrow = arrow_strings(values)
        if arrow is not None:
            return self.arrow(arrow)
        return self.objects(np.asarray(values, dtype=object))


# --- helpers -------------------------------------------------------------------------------


def arrow_strings(values: pd.Series) -> pa.Array | None:
    """The Arrow array behind a pandas string column (``str``, ``string[pyarrow]``,
    ``ArrowDtype`` of strings), without a copy; None for anything else."""
    dtype = values.dtype
    arrow_backed = isinstance(dtype, pd.ArrowDtype) or (
        isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"
    )
    if not arrow_backed:
        return None
    found = pa.array(values.array)
    kind = found.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return found
    return None


def _filled(found: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow int array as int64 numpy, nulls as -1."""
    return np.asarray(pc.fill_null(found, -1).to_numpy(), dtype=np.int64)


def _to_numpy_bool(found: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)


def missing_mask(values: np.ndarray) -> np.ndarray:
    """None, NaN, NA and "" (an object array)."""
    missing = np.asarray(pd.isna(values), dtype=bool)
    present = ~missing
    missing[present] = values[present] == ""
    return missing


@dataclass(frozen=True)
class Objects:
    """An object column grouped by object identity: each row's group (``ids``) and one
    value per group (``values``). Equal objects may land in different groups; looking the
    groups' values up by equality follows. A caller may replace the values by their texts
    (a number by its code text), group by group."""

    ids: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, values: np.ndarray) -> Objects:
        """Group an object array's rows by identity (no element is dereferenced)."""
        ids, first = _identity_groups(values)
        return cls(ids, values.take(first))


SAMPLE = 16_384  # rows looked at to decide how an object column is encoded


def shares_objects(values: np.ndarray) -> bool:
    """Whether equal values of a (contiguous) object array are mostly one object, so that
    grouping the rows by identity groups them by value (a column built from a list of
    codes, most CSV readers). Decided on up to ``SAMPLE`` evenly spread rows: of the rows
    that repeat a value, at least half repeat an object. False for fresh objects per row
    (``.str`` methods, ``astype(str)``, ``apply``) and for samples without repeats, where
    grouping by identity would cost a group per row."""
    if len(values) <= SAMPLE:
        return True  # small: either way is cheap
    part = np.ascontiguousarray(values[:: len(values) // SAMPLE][:SAMPLE])
    try:
        repeats = len(part) - len(pd.unique(part))
    except TypeError:  # unhashable values (Coding dicts): grouping by identity copes
        return True
    same_object = len(part) - len(pd.unique(_pointers(part)))
    return repeats > 0 and 2 * same_object >= repeats


def object_strings(values: np.ndarray) -> pa.Array | None:
    """An object array of strings (missing values: None, NaN, NA) as an Arrow string
    array; None when it holds anything else (numbers, bytes, dicts)."""
    try:
        found = pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return found if pa.types.is_string(found.type) or pa.types.is_large_string(found.type) else None


def _pointers(values: np.ndarray) -> np.ndarray:
    """The element addresses of a contiguous object array, read as integers (nothing is
    dereferenced; the caller keeps ``values`` alive while it uses them)."""
    address = values.__array_interface__["data"][0]
    view = memoryview((ctypes.c_size_t * len(values)).from_address(address)).cast("B")
    return np.frombuffer(view, dtype=np.uintp)


def _identity_groups(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group an object array's rows by object identity: each row's group, and the first row
    of each group."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    values = np.ascontiguousarray(values)
    pointers = _pointers(values)
    # a bounded size hint: the table grows with the distinct objects (the default sizes it
    # for every row, which costs more than the hashing; 2**17 slots measured fastest for 10
    # to 500,000 distinct objects in a million rows, 1.6x faster than 1,024 at 100,000)
    ids, uniques = pd.factorize(pointers, size_hint=min(len(pointers), 1 << 17))
    first = np.empty(len(uniques), dtype=np.int64)
    first[ids] = np.arange(len(ids))  # any row of a group: they hold the same object
    return np.asarray(ids, dtype=np.int64), first


UNIFORM_PROBE = 1_024  # rows compared first to tell a column of several values


def uniform_value(values: pd.Series) -> str | None:
    """The single value of a column that holds one non-empty string in every row."""
    n = len(values)
    if n == 0:
        return None
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy()
        if codes.min() < 0 or codes.min() != codes.max():
            return None
        found = values.cat.categories[codes[0]]
        return found if isinstance(found, str) and found != "" else None
    probe = np.arange(0, n, max(1, n // UNIFORM_PROBE))  # a column of several systems
    arrow = arrow_strings(values)
    if arrow is not None:
        if arrow.null_count:
            return None
        first = arrow[0].as_py()
        if not first:
            return None
        scalar = pa.scalar(first, arrow.type)
        for part in (arrow.take(pa.array(probe)), arrow):  # most often ends at the probe
            if not pc.all(pc.equal(part, scalar)).as_py():
                return None
        return str(first)
    array = np.ascontiguousarray(np.asarray(values, dtype=object))
    first = array[0]
    if not isinstance(first, str) or first == "":
        return None
    pointers = _pointers(array)
    if bool((pointers == pointers[0]).all()):  # one object in every row: no compare needed
        return first
    try:  # one string compare per row (a few rows first); NA (not a bool) ends it
        for part in (array.take(probe), array):
            same = part == first
            if same.dtype != bool or not bool(same.all()):
                return None
        return str(first)
    except TypeError:
        return None


# --- the result frame ----------------------------------------------------------------------


def _codes_dtype(n: int) -> type[np.signedinteger[Any]]:
    if n < 127:
        return np.int8
    if n < 32767:
        return np.int16
    return np.int32


def factorized(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each value's id among the distinct non-missing values (-1 for None), and those."""
    ids, texts = pd.factorize(values, use_na_sentinel=True)
    return np.asarray(ids, dtype=np.int64), np.asarray(texts, dtype=object)


def text_index(texts: np.ndarray) -> pd.Index:
    """Distinct texts as an index of pandas' Arrow-backed strings (each text's bytes once,
    no Python object per text)."""
    return pd.Index(texts, dtype=pd.StringDtype("pyarrow", na_value=np.nan))


def _used_texts(ids: np.ndarray, size: int, used: np.ndarray) -> np.ndarray:
    """Which of ``size`` texts the used answers point at (their positions, ascending)."""
    present = np.zeros(size + 1, dtype=bool)
    present[ids[used] + 1] = True
    return np.flatnonzero(present[1:])


def _categorical(
    ids: np.ndarray, texts: pd.Index, keep: np.ndarray, position: np.ndarray
) -> pd.Categorical:
    """Row ``i`` gets ``texts[ids[position[i]]]``; the categories are the texts ``keep``
    (those the rows use), each stored once."""
    remap = np.full(len(texts) + 1, -1, dtype=_codes_dtype(len(keep)))
    remap[keep + 1] = np.arange(len(keep))
    per_entry = remap.take(ids + 1)
    return pd.Categorical.from_codes(per_entry.take(position), texts.take(keep), validate=False)


def result_frame(
    answers: Answers,
    position: np.ndarray,
    system: str | None = None,
    state: State | None = None,
) -> pd.DataFrame:
    """The frame of COLUMNS: row ``i`` gets the answer at ``position[i]``.

    ``result`` is a nullable boolean; ``message``, ``display``, ``issue`` and ``system`` are
    categoricals over the texts the rows use. ``system`` given: every row has that system.
    ``state`` (whose answers these are) keeps the distinct texts of each column across
    calls: when the rows use at least half of a column's texts, the result's categories
    are the state's own (one index shared by every such result, not a copy), else a copy
    of the texts used.
    """
    n = len(position)
    seen = np.zeros(len(answers), dtype=bool)
    seen[position] = True
    used = np.flatnonzero(seen)
    result = answers.result.take(position)
    data: dict[str, Any] = {"result": pd.arrays.BooleanArray(result == 1, result < 0)}
    names = ["message", "display", "issue"] + (["system"] if system is None else [])
    for name in names:
        if state is None:
            ids, values = factorized(getattr(answers, name))
            texts = text_index(values)
        else:
            ids, texts = state.categories(name)
        keep = _used_texts(ids, len(texts), used)
        if state is not None and 2 * len(keep) >= len(texts):
            codes, dtype = state.category_codes(name)
            data[name] = pd.Categorical.from_codes(
                codes.take(position), dtype=dtype, validate=False
            )
        else:
            data[name] = _categorical(ids, texts, keep, position)
    if system is not None:
        data["system"] = pd.Categorical.from_codes(
            np.zeros(n, dtype=np.int8), text_index(np.array([system], dtype=object)), validate=False
        )
    return pd.DataFrame(data, columns=COLUMNS, copy=False)
