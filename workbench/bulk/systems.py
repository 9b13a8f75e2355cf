"""Bulk validation of a code column whose system column holds several systems.

Real data often mixes code systems in one column (ICD-10-CM, SNOMED CT and LOINC codes
side by side, with a system column saying which). Each distinct (system, code) pair is
answered once, from the answer table of its system (``AnswerTable``, the same tables a
one-system column uses), and every row takes its pair's answer; no Python runs per row.

Both columns are read in their own encoding:

* the system column as each row's id among its distinct values: category codes, an Arrow
  dictionary (``dictionary_encode``), object identity groups, else ``factorize``; equal
  systems (and the missing ones: None, NaN, NA, "") are then one group;
* the code column likewise: Arrow strings row by row, the categories of a categorical,
  the distinct objects of an object column (identity groups from ``code_column``). They
  are looked up first in the answer table of the system most rows have (``index_in``
  against its codes, or its hash index for a few), so most of them need no hashing of
  their own, and only the rest is dictionary encoded. What a column's categories or
  objects were found to be is kept with that table's answers (for the same categories
  index; for the same objects, by address, holding them), so a column validated again
  is not looked up again.

A row's pair is first taken in both encodings (``system id * width + code id``), from a
dense bitmap over that key space (or ``factorize`` when it is large); each such pair is
then mapped to its (system group, code) pair, so only distinct pairs, never rows, go
through that mapping. Each system's codes are one run of the pairs and are answered by
its table. The result's text columns are categoricals over the texts of the answers
(``text_union``, kept across calls).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.bulk.encoding import (
    Objects,
    arrow_ids,
    arrow_strings,
    column_ids,
    missing_mask,
    object_strings,
    pointers,
)
from workbench.bulk.schema import Answers
from workbench.bulk.table import (
    AnswerTable,
    State,
    _codes_dtype,
    arrow_text_index,
    plain_frame,
    unique_dtype,
)

Tables = Callable[["str | None"], AnswerTable]
DENSE_FACTOR = 4  # a dense pair bitmap up to this many entries per row (or 2**22 in all)
FEW = 8  # strings at most 1/FEW of a state's codes are looked up in its hash index
MAIN_SAMPLE = 1 << 16  # rows looked at to find the system of most rows
# code objects known by address per answer state: up to twice its codes (or HELD_MIN),
# then started afresh with the latest call's (they are held alive while kept)
HELD_FACTOR, HELD_MIN = 2, 1 << 14


@dataclass(frozen=True)
class Encoded:
    """A code column as each row's id in its own encoding (``rows``; -1: missing), each
    such id's id into ``values`` (``raw``; -1: missing; None: the same ids), and
    ``values``, an object array of the distinct codes.

    When ``state`` is given, ``values`` starts with that state's codes (of ``table``), so
    an id below ``len(state.codes)`` is already the position of the answer in it.
    """

    rows: np.ndarray
    raw: np.ndarray | None
    values: np.ndarray
    table: AnswerTable | None = None
    state: State | None = None

    @property
    def width(self) -> int:
        """How many ids a row may have (its own encoding's)."""
        return len(self.values) if self.raw is None else len(self.raw)


@dataclass(frozen=True)
class Held:
    """Distinct code objects found in a state before, by address: ``objects`` keeps them
    alive (so no other object can have their address while this is kept), ``index``
    holds their addresses, ``positions`` their answers' positions in the state."""

    objects: np.ndarray
    index: pd.Index
    positions: np.ndarray


# --- encodings ------------------------------------------------------------------------------


def system_groups(values: pd.Series) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """The system column as each row's id in its own encoding (-1: missing), each id's
    group (at id + 1; the first entry is the missing systems') and each group's system
    (None: missing, i.e. None, NaN, NA or ""). Equal systems are one group, whatever their
    encoding; the groups are in the order of their systems (None last)."""
    ids, distinct = column_ids(values)
    missing = missing_mask(distinct) if len(distinct) else np.zeros(0, dtype=bool)
    texts: list[str | None] = [
        None if missing[k] else str(value) for k, value in enumerate(distinct.tolist())
    ]
    systems = [*sorted({t for t in texts if t is not None}), None]
    number = {system: g for g, system in enumerate(systems)}
    group = np.array([len(systems) - 1] + [number[t] for t in texts], dtype=np.int64)
    return ids, group, systems


def encode_codes(
    codes: pd.Series, encoded: Objects | pa.Array | None, table: AnswerTable
) -> Encoded:
    """The code column as ids (see ``Encoded``). ``encoded``: the column's ``code_column``
    encoding; ``table``: the answer table most rows are looked up in. Strings (the rows
    as Arrow strings, the categories, the distinct objects) are looked up in that table
    with ``index_in`` first, so most of them need no hashing of their own."""
    if isinstance(encoded, Objects):
        return encode_objects(encoded, table)
    if encoded is not None:
        return encode_arrow(encoded, table)
    if isinstance(codes.dtype, pd.CategoricalDtype):
        return encode_categorical(codes, table)
    arrow = arrow_strings(codes)
    if arrow is not None:
        return encode_arrow(arrow, table)
    ids, values = column_ids(codes)
    return Encoded(ids, None, values)


def encode_categorical(codes: pd.Series, table: AnswerTable) -> Encoded:
    """A categorical column: its categories looked up (as Arrow strings when they are
    strings), the rows by their category codes. The categories' encoding is kept in
    ``table``'s state for the very same categories index (held, so it stays that index),
    so a column validated again is not looked up again."""
    categories = codes.cat.categories
    rows = codes.cat.codes.to_numpy()
    state = table.state
    held = state.cache.get("categories")
    if held is not None and held[0] is categories:
        found: Encoded = held[1]
        return Encoded(rows, found.rows, found.values, table, state)
    arrow = arrow_strings(pd.Series(categories, copy=False))
    if arrow is None:
        arrow = object_strings(np.asarray(categories, dtype=object))
    if arrow is None:
        return Encoded(rows, None, np.asarray(categories, dtype=object))
    found = encode_arrow(arrow, table, state)
    state.cache["categories"] = (categories, found)
    return Encoded(rows, found.rows, found.values, table, state)


def encode_arrow(
    values: pa.Array | pa.ChunkedArray, table: AnswerTable, state: State | None = None
) -> Encoded:
    """Arrow strings as ids: the position in ``table``'s state (``state``: that one) where
    it has them, the others (dictionary encoded) after its codes."""
    if pa.types.is_string_view(values.type):
        values = values.cast(pa.large_string())
    state = table.state if state is None else state
    found = pc.index_in(values, value_set=state.arrow(values.type))
    ids = np.asarray(pc.fill_null(found, -1).to_numpy(), dtype=np.int64)
    lost = np.flatnonzero(ids < 0)
    if not len(lost):
        return Encoded(ids, None, state.codes, table, state)
    rest, distinct = arrow_ids(values.take(pa.array(lost)))
    known = len(state.codes)
    ids[lost] = np.where(rest >= 0, rest + known, -1)
    return Encoded(ids, None, np.concatenate([state.codes, distinct]), table, state)


def _encode_few(values: np.ndarray, table: AnswerTable, state: State) -> Encoded:
    """``encode_arrow`` for a few strings (an object array; missing: None, NaN, NA), looked
    up in the state's cached hash index rather than by hashing all its codes again."""
    ids = state.positions(values)
    lost = np.flatnonzero(ids < 0)
    if not len(lost):
        return Encoded(ids, None, state.codes, table, state)
    rest, distinct = pd.factorize(values.take(lost))  # a missing value: -1
    ids[lost] = np.where(rest >= 0, rest + len(state.codes), -1)
    values = np.concatenate([state.codes, np.asarray(distinct, dtype=object)])
    return Encoded(ids, None, values, table, state)


def encode_objects(objects: Objects, table: AnswerTable) -> Encoded:
    """An object column grouped by identity: the groups' objects found in ``table``'s
    state before are known by their address (``Held``, kept in the state), the others are
    looked up as Arrow strings (when they are all strings; else as objects)."""
    values = np.ascontiguousarray(objects.values)
    state = table.state
    raw = np.full(len(values), -1, dtype=np.int64)
    held: Held | None = state.cache.get("objects")
    addresses = pointers(values)
    rest = np.arange(len(values))
    if held is not None:
        found = held.index.get_indexer(pd.Index(addresses, copy=False))
        hit = found >= 0
        raw[hit] = held.positions.take(found[hit])
        rest = np.flatnonzero(~hit)
    if not len(rest):
        return Encoded(objects.ids, raw, state.codes, table, state)
    part = values.take(rest)
    arrow = object_strings(part)
    if arrow is None:  # not all strings: looked up as objects, by equality
        return Encoded(objects.ids, None, values)
    if FEW * len(part) < len(state.codes):  # hashing the state's codes would cost more
        looked = _encode_few(part, table, state)
    else:
        looked = encode_arrow(arrow, table, state)
    raw[rest] = looked.rows
    known = np.flatnonzero((looked.rows >= 0) & (looked.rows < len(state.codes)))
    if len(known):
        room = max(HELD_FACTOR * len(state.codes), HELD_MIN)
        kept = [] if held is None or len(held.objects) + len(known) > room else [held]
        state.cache["objects"] = Held(
            np.concatenate([*(h.objects for h in kept), part.take(known)]),
            pd.Index(
                np.concatenate([*(h.index.to_numpy() for h in kept), addresses.take(rest[known])])
            ),
            np.concatenate([*(h.positions for h in kept), looked.rows.take(known)]),
        )
    return Encoded(objects.ids, raw, looked.values, table, state)


# --- pairs ----------------------------------------------------------------------------------


def distinct_pairs(
    groups: np.ndarray, codes: np.ndarray, n_groups: int, n_codes: int, offset: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's pair (an index into the distinct pairs) and the distinct pairs as keys
    ``group * n_codes + code + offset`` (below ``n_groups * n_codes``), ascending (so each
    group's pairs are one run). The keys are 32-bit when they fit."""
    space = n_groups * n_codes
    kind = np.int32 if space < 2**31 else np.int64
    key = np.multiply(groups, n_codes, dtype=kind)
    np.add(key, codes, out=key, casting="unsafe")
    if offset:
        key += offset
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
            grown, start = table.extend(state, encoded.values.take(codes[new]))
            position[new] = start + np.arange(len(new))
            if "objects" in state.cache:  # its positions hold in the grown state too
                grown.cache.setdefault("objects", state.cache["objects"])
            state = grown
        return state, position
    if encoded.state is None:
        state, found = table.distinct(encoded.values.take(wanted))
        position[present] = found
        return state, position
    return _answers_via(table, wanted, present, position, encoded.state, encoded.values)


def _answers_via(
    table: AnswerTable,
    wanted: np.ndarray,
    present: np.ndarray,
    position: np.ndarray,
    main: State,
    values: np.ndarray,
) -> tuple[State, np.ndarray]:
    """``_group_answers`` for a table other than the main one, whose codes are given as
    ids among the main state's codes (then others): where each main code is in this
    table is kept in its state (``via``, for that main state), so codes this group had
    before (codes without a system are often another system's codes) are not looked up
    again."""
    base = table.state
    kept = base.cache.get("via")
    if kept is not None and kept[0] is main:
        via = kept[1].copy()
    else:
        via = np.full(len(main.codes), -1, dtype=np.int64)
    inside = wanted < len(via)
    found = np.full(len(wanted), -1, dtype=np.int64)
    found[inside] = via.take(wanted[inside])
    need = np.flatnonzero(found < 0)
    state = base
    if len(need):
        state, looked = table.distinct(values.take(wanted[need]), base)
        found[need] = looked
        fresh = need[inside[need]]
        via[wanted[fresh]] = found[fresh]
        state.cache["via"] = (main, via)  # positions in ``base`` hold in ``state`` too
    position[present] = found
    return state, position


# --- the result -----------------------------------------------------------------------------


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
    categories = arrow_text_index(encoded.dictionary)
    narrow = _codes_dtype(len(categories))
    codes: list[np.ndarray] = []
    start = 0
    for (answer_ids, _), part in zip(parts, texts, strict=True):
        segment = np.append(ids[start : start + len(part)], -1)  # id -1 (no text) stays -1
        codes.append(segment.take(answer_ids).astype(narrow))
        start += len(part)
    found = Union(states, tuple(codes), unique_dtype(categories))
    home.cache[key] = [found, *kept[: UNIONS_KEPT - 1]]
    return found


def pairs_frame(
    parts: Sequence[tuple[State, np.ndarray]], pair_of: np.ndarray, row_pair: np.ndarray
) -> pd.DataFrame:
    """The frame of the states' schema: ``parts`` are each group's answer state and the
    positions of its pairs in it (the pairs in order, group after group); row ``i`` takes
    pair ``pair_of[row_pair[i]]``.

    Text columns of a categorical schema are categoricals over the texts of the states'
    answers (``text_union``, kept across calls): its categories are shared by every such
    result when the rows use at least half of them, else a copy of the texts used."""
    schema = parts[0][0].answers.schema
    if not schema.categorical:
        answers = Answers.concat([state.answers.take(at) for state, at in parts])
        return plain_frame(answers, pair_of.take(row_pair))
    per_pair = np.concatenate([state.answers.result.take(at) for state, at in parts])
    result = per_pair.take(pair_of).take(row_pair)
    data: dict[str, object] = {"result": pd.arrays.BooleanArray(result == 1, result < 0)}
    states = tuple(state for state, _ in parts)
    for name in schema.texts:
        data[name] = _union_column(text_union(states, name), parts, pair_of, row_pair)
    return pd.DataFrame(data, columns=schema.names, copy=False)


def _union_column(
    union: Union,
    parts: Sequence[tuple[State, np.ndarray]],
    pair_of: np.ndarray,
    row_pair: np.ndarray,
) -> pd.Categorical:
    """One text column of ``pairs_frame``."""
    per_pair = np.concatenate(
        [codes.take(at) for codes, (_, at) in zip(union.codes, parts, strict=True)]
    ).take(pair_of)
    size = len(union.dtype.categories)
    seen = np.zeros(size + 1, dtype=bool)
    seen[per_pair.astype(np.int64) + 1] = True
    keep = np.flatnonzero(seen[1:])
    if 2 * len(keep) >= size:
        return pd.Categorical.from_codes(per_pair.take(row_pair), dtype=union.dtype, validate=False)
    remap = np.full(size + 1, -1, dtype=_codes_dtype(len(keep)))
    remap[keep + 1] = np.arange(len(keep))
    dtype = unique_dtype(union.dtype.categories.take(keep))
    codes = remap.take(per_pair.astype(np.int64) + 1).take(row_pair)
    return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)


# --- the entry ------------------------------------------------------------------------------


def answer_systems(
    tables: Tables,
    codes: pd.Series,
    systems: pd.Series,
    encoded: Objects | pa.Array | None = None,
) -> pd.DataFrame:
    """Validate a code column against its system column (no displays); ``tables(system)``
    gives the answer table of a system (None: codes without a system). The frame of the
    tables' schema, row for row.

    The rows' pairs are first taken in both columns' own encodings (the ids each row
    has), then each such pair is mapped to its (system, code) pair: only distinct pairs,
    never rows, go through that mapping."""
    system_rows, group_of, names = system_groups(systems)
    table_of: dict[int, AnswerTable] = {}
    # the system of most rows (on a sample: it only decides where codes are looked up first)
    sample = system_rows[:: max(1, len(system_rows) // MAIN_SAMPLE)]
    per_id = np.bincount(sample.astype(np.int64) + 1, minlength=len(group_of))
    main = int(np.argmax(np.bincount(group_of, weights=per_id, minlength=len(names))))
    table_of[main] = tables(names[main])
    code = encode_codes(codes, encoded, table_of[main])
    width = code.width + 1
    row_pair, raw_pairs = distinct_pairs(
        system_rows, code.rows, len(group_of), width, offset=width + 1
    )
    raw_system, raw_code = np.divmod(raw_pairs, code.width + 1)
    missing_id = len(code.values)
    code_id = raw_code - 1
    if code.raw is not None:
        code_id = np.append(code.raw, -1).take(code_id)
    code_id[code_id < 0] = missing_id
    pair_of_raw, pairs = distinct_pairs(
        group_of.take(raw_system), code_id, len(names), missing_id + 1
    )
    pair_group, pair_code = np.divmod(pairs, missing_id + 1)
    bounds = np.searchsorted(pair_group, np.arange(len(names) + 1))
    parts: list[tuple[State, np.ndarray]] = []
    for g, system in enumerate(names):
        start, end = bounds[g], bounds[g + 1]
        if start < end:
            table = table_of[g] if g in table_of else tables(system)
            parts.append(_group_answers(table, pair_code[start:end], code, missing_id))
    return pairs_frame(parts, pair_of_raw, row_pair)
