"""Answer tables: the answers of bulk work per distinct code, and the result frame.

A value set's answer for a code of one system never changes while the compiled value set is
cached, so each code is checked once and its answer kept in an ``AnswerTable`` (one per value
set, ``abstract`` flag and system, and one for codes given without a system, which the
value set alone infers). Translation keeps one per system for a call, with the columns of
its own schema (``schema.TRANSLATION``). A column is then answered by a lookup in that table in
the column's own encoding, with no per-row Python:

* ``object``: rows are grouped by object identity first (an integer hash of the element
  addresses; a string read from a CSV is one object for all its equal rows), then the
  distinct objects are looked up; a column whose equal strings are different objects
  (fresh strings per row) is looked up as Arrow strings instead (see ``shares_objects``);
* Arrow strings (``str``, ``string[pyarrow]``, ``ArrowDtype``): ``pyarrow.compute.index_in``
  against the table's cached Arrow array;
* ``category``: the categories are looked up, the rows take their answer by code.

Codes the table does not have yet are checked (once per distinct code) and added to it. The
result frame holds each row's position in the answers and, for a categorical schema, builds
categorical columns from them: every distinct message or display is stored once, and a
result that uses most of a table's texts takes the table's own cached categories (shared,
not copied per call).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench import collector
from workbench.bulk.encoding import Objects, arrow_strings, missing_mask
from workbench.bulk.schema import Answers, Schema
from workbench.errors import InvalidRequestError

MAX_TABLE = 2_000_000  # answers kept per table; beyond that new codes are answered per call
_LOCK = threading.Lock()
_TEXT = pd.StringDtype("pyarrow", na_value=np.nan)  # the dtype of texts in results


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

    def positions(self, values: np.ndarray) -> np.ndarray:
        """Each value's position among the codes (an object array; -1: not there). The
        index's hash engine is asked directly where pandas has one: ``get_indexer`` would
        first infer the type of every value, a pass over them that changes nothing here
        (the codes are distinct strings); it stays the fallback, and its TypeError for
        an unhashable value is the caller's."""
        index = self.index()
        engine = getattr(index, "_engine", None)  # (pandas' own, as get_indexer uses it)
        lookup = getattr(engine, "get_indexer", None)
        if lookup is not None and index.is_unique:
            try:
                return np.asarray(lookup(values), dtype=np.intp)
            except TypeError:
                pass
        return index.get_indexer(pd.Index(values, dtype=object, copy=False))

    def factorized(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """The distinct texts of one answer column and each answer's id among them."""
        key = f"texts:{name}"
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = factorized(self.answers[name])
        return found

    def categories(self, name: str) -> tuple[np.ndarray, pd.Index]:
        """``factorized``, with the texts as an Arrow-backed index (built once)."""
        key = f"categories:{name}"
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = text_categories(self.answers[name])
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
                unique_dtype(texts),
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
    """The answers (of one value set, or one translation) for the codes of one system,
    each answered once, with the columns of ``schema``.

    ``answer`` answers distinct codes (an object array of str). Entry 0 is the answer for a
    missing code (None, NaN, NA or "": ``encoding.is_missing``). ``shipped_whole``: pickled
    (Dask) with what it has learnt, else a worker starts afresh.
    """

    def __init__(
        self, system: str | None, answer: Answerer, schema: Schema, *, shipped_whole: bool = False
    ) -> None:
        self.system = system
        self.answer = answer
        self.schema = schema
        self.shipped_whole = shipped_whole
        self.state = State(np.array([""], dtype=object), Answers.missing(schema, system))

    def __getstate__(self) -> dict[str, Any]:
        if self.shipped_whole:
            return {**self.__dict__, "state": State(self.state.codes, self.state.answers)}
        fresh = AnswerTable(self.system, self.answer, self.schema)
        return {**self.__dict__, "state": fresh.state}

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
        try:
            position = state.positions(values)
        except TypeError:  # a dict or a list among codes
            raise _unhashable(values) from None
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
            found = state.positions(uniques)
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
        position = filled(found)
        if values.null_count:
            position[_to_numpy_bool(values.is_null())] = 0
        lost = np.flatnonzero(position < 0)
        if len(lost):  # (all rows on a first call: no nulls among them then)
            missed = values if len(lost) == len(values) else values.take(pa.array(lost))
            if isinstance(missed, pa.ChunkedArray):
                missed = missed.combine_chunks()
            encoded = pc.dictionary_encode(missed)  # the distinct codes, in order of rows
            uniques = encoded.dictionary
            state, start = self.extend(
                state, np.asarray(uniques.to_numpy(zero_copy_only=False), dtype=object)
            )
            position[lost] = start + filled(encoded.indices)
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

    def grouped(
        self, values: pd.Series, encoded: Objects | pa.Array | None = None
    ) -> tuple[State, np.ndarray, np.ndarray | None]:
        """``column`` in two steps where the column is grouped by identity: the positions of
        the groups and each row's group (``position.take(rows)`` is ``column``'s; the
        result frame takes each column's values through both, never making the row
        positions), else the row positions and None."""
        if isinstance(encoded, Objects):
            state, position = self.distinct(encoded.values)
            return state, position, encoded.ids
        return (*self.column(values, encoded), None)

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


def _unhashable(values: np.ndarray) -> InvalidRequestError:
    """The error for a column of codes that holds a value no code can be (a dict, a list)."""
    for value in values:
        try:
            hash(value)
        except TypeError:
            shown = repr(value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            return InvalidRequestError(
                f"The code column holds a {type(value).__name__} ({shown}) among its codes: a "
                "column holds codes, or Codings and CodeableConcepts (dicts), not both"
            )
    return InvalidRequestError("The code column holds values that are not codes")


def filled(found: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow int array as int64 numpy, nulls as -1."""
    return np.asarray(pc.fill_null(found, -1).to_numpy(), dtype=np.int64)


def _to_numpy_bool(found: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)


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
    try:
        strings = pa.array(texts, type=pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # not all str: pandas says what they become
        return pd.Index(texts, dtype=_TEXT)
    return arrow_text_index(strings)


def arrow_text_index(values: pa.Array) -> pd.Index:
    """Distinct Arrow texts as an index of the dtype ``text_index`` gives (no copy)."""
    strings = values.cast(pa.large_string())
    return pd.Index(pd.arrays.ArrowStringArray(strings, dtype=_TEXT))  # type: ignore[call-arg]


def text_categories(values: np.ndarray) -> tuple[np.ndarray, pd.Index]:
    """``factorized`` with the texts as a ``text_index``: each value's id among the distinct
    non-missing texts (-1 for None), and those texts, in order of first appearance (found
    in Arrow when every value is a str or None)."""
    try:
        strings = pa.array(values, type=pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        ids, texts = factorized(values)
        return ids, text_index(texts)
    encoded = pc.dictionary_encode(strings)
    return filled(encoded.indices), arrow_text_index(encoded.dictionary)


def unique_dtype(categories: pd.Index) -> pd.CategoricalDtype:
    """A categorical dtype over texts known to be distinct (a dictionary's): pandas' own
    constructor would hash them all again to check."""
    fast = getattr(pd.CategoricalDtype, "_from_fastpath", None)  # pandas' own shortcut
    if fast is not None:
        try:
            found = fast(categories, False)
        except TypeError:  # another pandas: its signature changed
            found = None
        if isinstance(found, pd.CategoricalDtype):
            return found
    return pd.CategoricalDtype(categories)


def _used_texts(ids: np.ndarray, size: int, used: np.ndarray) -> np.ndarray:
    """Which of ``size`` texts the used answers point at (their positions, ascending)."""
    present = np.zeros(size + 1, dtype=bool)
    present[ids[used] + 1] = True
    return np.flatnonzero(present[1:])


def _categorical(
    ids: np.ndarray,
    texts: pd.Index,
    keep: np.ndarray,
    position: np.ndarray,
    rows: np.ndarray | None,
) -> pd.Categorical:
    """Row ``i`` gets ``texts[ids[position[i]]]`` (through ``rows``, see ``result_frame``);
    the categories are the texts ``keep`` (those the rows use), each stored once."""
    remap = np.full(len(texts) + 1, -1, dtype=_codes_dtype(len(keep)))
    remap[keep + 1] = np.arange(len(keep))
    per_entry = remap.take(ids + 1)
    return pd.Categorical.from_codes(
        _taken(per_entry, position, rows), dtype=unique_dtype(texts.take(keep)), validate=False
    )


def _taken(values: np.ndarray, position: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """``values.take(position)``, then through ``rows`` when given (see ``result_frame``)."""
    taken = values.take(position)
    return taken if rows is None else taken.take(rows)


def result_frame(
    answers: Answers,
    position: np.ndarray,
    system: str | None = None,
    state: State | None = None,
    rows: np.ndarray | None = None,
) -> pd.DataFrame:
    """The frame of the answers' schema: row ``i`` gets the answer at ``position[i]``
    (``rows`` given: at ``position[rows[i]]``, each column taken from its few distinct
    values, with no array of row positions made).

    ``result`` is a nullable boolean, a count an int64. Text columns of a categorical
    schema are categoricals over the texts the rows use (else ``object``). ``system``
    given: every row has that system in the ``per_system`` column. ``state`` (whose answers
    these are) keeps the distinct texts of each column across calls: when the rows use at
    least half of a column's texts, the result's categories are the state's own (one index
    shared by every such result, not a copy), else a copy of the texts used.
    """
    schema = answers.schema
    if not schema.categorical:
        return plain_frame(answers, position if rows is None else position.take(rows))
    if rows is not None and len(rows) == 0:
        position, rows = position.take(rows), None
    seen = np.zeros(len(answers), dtype=bool)  # (with rows: every group has a row)
    seen[position] = True
    used = np.flatnonzero(seen)  # the answers the rows use, ascending (no sort)
    size = len(position) if rows is None else len(rows)
    data: dict[str, Any] = {}
    for column in schema.columns:
        name = column.name
        if column.kind != "text":
            data[name] = _column(answers[name], column.kind, position, rows)
        elif system is not None and column.per_system:
            data[name] = pd.Categorical.from_codes(
                np.zeros(size, dtype=np.int8),
                text_index(np.array([system], dtype=object)),
                validate=False,
            )
        else:
            data[name] = _text_column(answers, name, position, used, state, rows)
    return pd.DataFrame(data, columns=schema.names, copy=False)


def _text_column(
    answers: Answers,
    name: str,
    position: np.ndarray,
    used: np.ndarray,
    state: State | None,
    rows: np.ndarray | None,
) -> pd.Categorical:
    """One text column of ``result_frame`` as a categorical."""
    if state is None:
        ids, texts = text_categories(answers[name])
    else:
        ids, texts = state.categories(name)
    keep = _used_texts(ids, len(texts), used)
    if state is not None and 2 * len(keep) >= len(texts):
        codes, dtype = state.category_codes(name)
        return pd.Categorical.from_codes(_taken(codes, position, rows), dtype=dtype, validate=False)
    return _categorical(ids, texts, keep, position, rows)


def _column(
    values: np.ndarray, kind: str, position: np.ndarray, rows: np.ndarray | None = None
) -> Any:
    """A result or count column: row ``i`` gets ``values[position[i]]`` (through ``rows``,
    see ``result_frame``)."""
    if kind == "result":
        taken = values.take(position)
        true, missing = taken == 1, taken < 0
        if rows is not None:
            true, missing = true.take(rows), missing.take(rows)
        return pd.arrays.BooleanArray(true, missing)
    taken = _taken(values, position, rows)
    if kind == "text":  # kept as objects (pandas would infer its string dtype)
        return pd.Series(taken, dtype=object, copy=False)
    return taken


def plain_frame(answers: Answers, position: np.ndarray) -> pd.DataFrame:
    """The frame of the answers' schema with ``object`` texts: row ``i`` gets the answer at
    ``position[i]``."""
    data = {c.name: _column(answers[c.name], c.kind, position) for c in answers.schema.columns}
    return pd.DataFrame(data, columns=answers.schema.names, copy=False)
