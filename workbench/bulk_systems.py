"""Bulk validation of a code column whose system column holds several systems.

Real data often mixes code systems in one column (ICD-10-CM, SNOMED CT and LOINC codes
side by side, with a system column saying which). Each distinct (system, code) pair is
answered once, from the answer table of its system (``AnswerTable``, the same tables a
one-system column uses), and every row takes its pair's answer; no Python runs per row.

Both columns are read in their own encoding:

* the system column as each row's id among its distinct values: category codes, an Arrow
  dictionary (``dictionary_encode``), object identity groups, else ``factorize``; equal
  systems (and the missing ones: None, NaN, NA, "") are then one group;
* the code column likewise: category codes over the categories, object identity groups
  (``code_column``), else ``factorize``. Arrow strings are looked up with ``index_in`` in
  the answer table of the system most rows have (so most rows are found at once, with no
  hashing beyond that) and only the rest is dictionary encoded.

A row's pair is ``group * (codes + 1) + code``; the distinct pairs come from a dense bitmap
over that key space (or ``factorize`` when it is large), in order, so each system's codes
are one run of them. The result's text columns are categoricals over the texts the pairs
use, taken from each answer state's cached distinct texts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.bulk_table import (
    AnswerTable,
    Objects,
    State,
    _codes_dtype,
    arrow_strings,
    missing_mask,
    object_strings,
    shares_objects,
)
from workbench.report import COLUMNS

Tables = Callable[["str | None"], AnswerTable]
DENSE_FACTOR = 4  # a dense pair bitmap up to this many entries per row (or 2**22 in all)
_TEXT = pd.StringDtype("pyarrow", na_value=np.nan)


@dataclass(frozen=True)
class Encoded:
    """A code column as each row's id into ``values`` (an object array; -1: missing).

    When ``state`` is given, ``values`` starts with that state's codes (of ``table``), so
    an id below ``len(state.codes)`` is already the position of the answer in it.
    """

    ids: np.ndarray
    values: np.ndarray
    table: AnswerTable | None = None
    state: State | None = None


# --- encodings ------------------------------------------------------------------------------


def _arrow_ids(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow column's dictionary: each row's id (-1 for null) and the distinct values."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    encoded = pc.dictionary_encode(values)
    ids = np.asarray(pc.fill_null(encoded.indices, -1).to_numpy(), dtype=np.int64)
    distinct = np.asarray(encoded.dictionary.to_numpy(zero_copy_only=False), dtype=object)
    return ids, distinct


def _arrow(values: pd.Series) -> pa.Array | None:
    """The column as Arrow strings, when it is Arrow-backed or an object column of fresh
    strings (equal values not one object); None otherwise."""
    found = arrow_strings(values)
    if found is not None:
        return found
    if pd.api.types.is_object_dtype(values.dtype):
        array = np.ascontiguousarray(np.asarray(values, dtype=object))
        if not shares_objects(array):
            return object_strings(array)
    return None


def column_ids(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's id among the column's distinct values (-1: missing) and those values,
    in the column's own encoding (equal values may have several ids)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        ids = np.asarray(values.cat.codes.to_numpy(), dtype=np.int64)
        return ids, np.asarray(values.cat.categories, dtype=object)
    arrow = _arrow(values)
    if arrow is not None:
        return _arrow_ids(arrow)
    if pd.api.types.is_object_dtype(values.dtype):
        grouped = Objects.of(np.ascontiguousarray(np.asarray(values, dtype=object)))
        return grouped.ids, grouped.values
    ids, uniques = pd.factorize(values)
    return np.asarray(ids, dtype=np.int64), np.asarray(uniques, dtype=object)


def system_groups(values: pd.Series) -> tuple[np.ndarray, list[str | None]]:
    """Rows grouped by system: each row's group and each group's system (None: missing,
    i.e. None, NaN, NA or ""). Equal systems are one group, whatever their encoding; the
    groups are in the order of their systems (None last), whatever the rows' order."""
    ids, distinct = column_ids(values)
    missing = missing_mask(distinct) if len(distinct) else np.zeros(0, dtype=bool)
    texts: list[str | None] = [
        None if missing[k] else str(value) for k, value in enumerate(distinct.tolist())
    ]
    systems = [*sorted({t for t in texts if t is not None}), None]
    number = {system: g for g, system in enumerate(systems)}
    group = np.array([number[t] for t in texts] + [len(systems) - 1], dtype=np.int64)
    return group.take(ids), systems  # id -1 (a missing system) takes the last entry


def encode_codes(
    codes: pd.Series, encoded: Objects | pa.Array | None, table: AnswerTable
) -> Encoded:
    """The code column as ids (see ``Encoded``). ``encoded``: the column's ``code_column``
    encoding; ``table``: the answer table most rows are looked up in. Strings (the rows
    as Arrow strings, the categories, the distinct objects) are looked up in that table
    with ``index_in`` first, so most of them need no hashing of their own."""
    if isinstance(encoded, Objects):
        arrow = object_strings(encoded.values)
        if arrow is None:
            return Encoded(encoded.ids, encoded.values)
        return _through(encode_arrow(arrow, table), encoded.ids)
    if encoded is not None:
        return encode_arrow(encoded, table)
    if isinstance(codes.dtype, pd.CategoricalDtype):
        categories = codes.cat.categories
        row_ids = np.asarray(codes.cat.codes.to_numpy(), dtype=np.int64)
        arrow = arrow_strings(pd.Series(categories, copy=False))
        if arrow is None:
            arrow = object_strings(np.asarray(categories, dtype=object))
        if arrow is None:
            return Encoded(row_ids, np.asarray(categories, dtype=object))
        return _through(encode_arrow(arrow, table), row_ids)
    arrow = arrow_strings(codes)
    if arrow is not None:
        return encode_arrow(arrow, table)
    ids, values = column_ids(codes)
    return Encoded(ids, values)


def _through(found: Encoded, row_ids: np.ndarray) -> Encoded:
    """``found`` encodes distinct values; rows given as ids into them (-1: missing)."""
    ids = np.append(found.ids, -1).take(row_ids)
    return Encoded(ids, found.values, found.table, found.state)


def encode_arrow(values: pa.Array | pa.ChunkedArray, table: AnswerTable) -> Encoded:
    """Arrow strings as ids: the position in ``table``'s state where it has them, the
    others (dictionary encoded) after its codes."""
    if pa.types.is_string_view(values.type):
        values = values.cast(pa.large_string())
    state = table.state
    found = pc.index_in(values, value_set=state.arrow(values.type))
    ids = np.asarray(pc.fill_null(found, -1).to_numpy(), dtype=np.int64)
    lost = np.flatnonzero(ids < 0)
    if not len(lost):
        return Encoded(ids, state.codes, table, state)
    rest, distinct = _arrow_ids(values.take(pa.array(lost)))
    known = len(state.codes)
    ids[lost] = np.where(rest >= 0, rest + known, -1)
    return Encoded(ids, np.concatenate([state.codes, distinct]), table, state)


# --- pairs ----------------------------------------------------------------------------------


def distinct_pairs(
    groups: np.ndarray, codes: np.ndarray, n_groups: int, n_codes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's pair (an index into the distinct pairs) and the distinct pairs as keys
    ``group * n_codes + code``, ascending (so each group's pairs are one run)."""
    key = groups * n_codes + codes
    space = n_groups * n_codes
    if space <= max(DENSE_FACTOR * len(key), 1 << 22):
        seen = np.zeros(space, dtype=bool)
        seen[key] = True
        pairs = np.flatnonzero(seen)
        slot = np.empty(space, dtype=np.int32 if len(pairs) < 2**31 else np.int64)
        slot[pairs] = np.arange(len(pairs))
        return slot.take(key), pairs
    ids, uniques = pd.factorize(key)
    order = np.argsort(uniques, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank.take(np.asarray(ids, dtype=np.int64)), np.asarray(uniques, dtype=np.int64)[order]


def _group_answers(
    table: AnswerTable, codes: np.ndarray, encoded: Encoded, missing_id: int
) -> tuple[State, np.ndarray]:
    """Positions (in the returned state) of one group's distinct code ids."""
    position = np.zeros(len(codes), dtype=np.int64)  # a missing code: entry 0
    present = np.flatnonzero(codes != missing_id)
    wanted = codes[present]
    if encoded.state is not None and encoded.table is table:
        state = encoded.state
        known = wanted < len(state.codes)
        position[present[known]] = wanted[known]
        new = present[~known]
        if len(new):  # distinct codes that are not in the state (index_in said so)
            state, start = table.extend(state, encoded.values.take(codes[new]))
            position[new] = start + np.arange(len(new))
        return state, position
    state, found = table.distinct(encoded.values.take(wanted))
    position[present] = found
    return state, position


# --- the result -----------------------------------------------------------------------------


def _text_index(values: pa.Array) -> pd.Index:
    """Distinct Arrow texts as an index of the dtype ``text_index`` gives (no copy)."""
    strings = values.cast(pa.large_string())
    return pd.Index(pd.arrays.ArrowStringArray(strings, dtype=_TEXT))  # type: ignore[call-arg]


def _unique_dtype(categories: pd.Index) -> pd.CategoricalDtype:
    """A categorical dtype over texts known to be distinct (a dictionary's): pandas' own
    constructor would hash them all again to check."""
    fast = getattr(pd.CategoricalDtype, "_from_fastpath", None)
    if fast is None:
        return pd.CategoricalDtype(categories)
    found: pd.CategoricalDtype = fast(categories, False)
    return found


@dataclass(frozen=True)
class Union:
    """The distinct texts of one answer column over several states (as a categorical
    dtype), and for each state the id of each of its answers' text (-1: none)."""

    states: tuple[State, ...]
    codes: tuple[np.ndarray, ...]
    dtype: pd.CategoricalDtype


UNIONS_KEPT = 4  # unions kept per state and answer column (for different sets of states)


def text_union(states: tuple[State, ...], name: str) -> Union:
    """The ``Union`` of one answer column over ``states``, kept in the largest state's
    cache (states never change, so it holds while they are the tables' states)."""
    home = max(states, key=lambda state: len(state.codes))
    key = f"union:{name}"
    kept: list[Union] = home.cache.get(key, [])
    for union in kept:
        if len(union.states) == len(states) and all(
            a is b for a, b in zip(union.states, states, strict=True)
        ):
            return union
    parts = [state.categories(name) for state in states]
    texts = [pa.array(t.array).cast(pa.large_string()) for _, t in parts]
    encoded = pc.dictionary_encode(pa.concat_arrays(texts))
    ids = np.asarray(encoded.indices.to_numpy(), dtype=np.int64)
    categories = _text_index(encoded.dictionary)
    narrow = _codes_dtype(len(categories))
    codes: list[np.ndarray] = []
    start = 0
    for (answer_ids, _), part in zip(parts, texts, strict=True):
        segment = np.append(ids[start : start + len(part)], -1)  # id -1 (no text) stays -1
        codes.append(segment.take(answer_ids).astype(narrow))
        start += len(part)
    found = Union(states, tuple(codes), _unique_dtype(categories))
    home.cache[key] = [found, *kept[: UNIONS_KEPT - 1]]
    return found


def pairs_frame(parts: Sequence[tuple[State, np.ndarray]], row_pair: np.ndarray) -> pd.DataFrame:
    """The frame of COLUMNS: ``parts`` are each group's answer state and the positions of
    its pairs in it (the pairs in order, group after group); row ``i`` takes pair
    ``row_pair[i]``.

    Text columns are categoricals over the texts of the states' answers (``text_union``,
    kept across calls): its categories are shared by every such result when the rows use
    at least half of them, else a copy of the texts used."""
    result = np.concatenate([state.answers.result.take(at) for state, at in parts])
    data: dict[str, object] = {
        "result": pd.arrays.BooleanArray((result == 1).take(row_pair), (result < 0).take(row_pair))
    }
    states = tuple(state for state, _ in parts)
    for name in ("message", "display", "issue", "system"):
        union = text_union(states, name)
        per_pair = np.concatenate(
            [codes.take(at) for codes, (_, at) in zip(union.codes, parts, strict=True)]
        )
        size = len(union.dtype.categories)
        seen = np.zeros(size + 1, dtype=bool)
        seen[per_pair.astype(np.int64) + 1] = True
        keep = np.flatnonzero(seen[1:])
        if 2 * len(keep) >= size:
            data[name] = pd.Categorical.from_codes(
                per_pair.take(row_pair), dtype=union.dtype, validate=False
            )
            continue
        remap = np.full(size + 1, -1, dtype=_codes_dtype(len(keep)))
        remap[keep + 1] = np.arange(len(keep))
        dtype = _unique_dtype(union.dtype.categories.take(keep))
        codes = remap.take(per_pair.astype(np.int64) + 1).take(row_pair)
        data[name] = pd.Categorical.from_codes(codes, dtype=dtype, validate=False)
    return pd.DataFrame(data, columns=COLUMNS, copy=False)


# --- the entry ------------------------------------------------------------------------------


def validate_systems(
    tables: Tables,
    codes: pd.Series,
    systems: pd.Series,
    encoded: Objects | pa.Array | None = None,
) -> pd.DataFrame:
    """Validate a code column against its system column (no displays); ``tables(system)``
    gives the answer table of a system (None: codes without a system). The frame of
    COLUMNS, row for row."""
    groups, names = system_groups(systems)
    counts = np.bincount(groups, minlength=len(names))
    table_of = [tables(system) if n else None for system, n in zip(names, counts, strict=True)]
    main = table_of[int(np.argmax(counts))]
    assert main is not None
    code_ids = encode_codes(codes, encoded, main)
    missing_id = len(code_ids.values)
    ids = np.where(code_ids.ids < 0, missing_id, code_ids.ids)
    row_pair, pairs = distinct_pairs(groups, ids, len(names), missing_id + 1)
    pair_group, pair_code = np.divmod(pairs, missing_id + 1)
    bounds = np.searchsorted(pair_group, np.arange(len(names) + 1))
    parts: list[tuple[State, np.ndarray]] = []
    for g, table in enumerate(table_of):
        start, end = bounds[g], bounds[g + 1]
        if table is not None and start < end:
            parts.append(_group_answers(table, pair_code[start:end], code_ids, missing_id))
    return pairs_frame(parts, row_pair)
