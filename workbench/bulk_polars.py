"""Polars input for bulk validation, answered natively: no Python object per row.

One system for every row (``system=`` a URI, or a system column that holds one value) and
no display column: each row finds its answer in the answer table through a ``Lookup`` built
once per table state: the row's polars hash proposes a position in an open-addressing table
of the codes' hashes, and the code at that position must equal the row (gathered and
compared by polars; a hash never decides alone). What is not found (a code the table has not
seen) is answered through Arrow and added to the table. A ``Categorical`` or ``Enum`` column
is looked up through its categories, and its rows take the answers by physical id. The
result columns are gathered by polars from per-answer columns (``Enum`` texts, a byte per
answer for the result and the nulls), the system is one literal value. Anything else
(several systems, displays) goes to the pandas algorithm through Arrow, and comes back as a
polars DataFrame.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench.bulk_table import AnswerTable, State
from workbench.errors import InvalidRequestError
from workbench.report import COLUMNS

if TYPE_CHECKING:
    import polars as pl

    from workbench.bulk import Checker


def is_polars(data: Any) -> bool:
    """Whether ``data`` is a polars DataFrame or Series (without importing polars)."""
    polars = sys.modules.get("polars")
    return polars is not None and isinstance(data, polars.DataFrame | polars.Series)


def to_pandas(data: Any) -> pd.Series | pd.DataFrame:
    """The polars data as pandas backed by the same Arrow buffers (no Python objects);
    categorical columns become strings first."""
    import polars as pl

    if isinstance(data, pl.Series):
        if data.dtype in (pl.Categorical,) or isinstance(data.dtype, pl.Enum):
            data = data.cast(pl.String)
        return data.to_pandas(use_pyarrow_extension_array=True)
    data = data.with_columns(pl.col(pl.Categorical, pl.Enum).cast(pl.String))
    return data.to_pandas(use_pyarrow_extension_array=True)


def from_pandas(frame: pd.DataFrame) -> Any:
    """A pandas result frame as a polars DataFrame (categoricals stay categorical)."""
    import polars as pl

    return pl.from_pandas(pd.DataFrame(frame), include_index=False)


def _uniform(values: pl.Series) -> str | None:
    """The one non-empty string every row of a column holds, else None."""
    import polars as pl

    if len(values) == 0 or values.null_count():
        return None
    first = values[0]
    if not isinstance(first, str) or first == "":
        return None
    if values.dtype == pl.Categorical or isinstance(values.dtype, pl.Enum):
        physical = values.to_physical()  # one category: one id
        return first if physical.min() == physical.max() else None
    return first if bool((values.cast(pl.String) == first).all()) else None


HASH_SEED = 20240611
TEXTS = ("message", "display", "issue")
SPREAD = 8  # hash slots per code (at most an eighth of the slots hold a code)


@dataclass(frozen=True)
class Lookup:
    """What a polars lookup needs of one table state (built once per state).

    ``slots`` is an open-addressing hash table over the codes' polars hashes: slot
    ``hash & (len(slots) - 1)`` holds a code's position, or, when taken, one of the next
    ``reach`` slots (0: an empty slot; position 0 is the missing answer, never a slot's).
    A hash only proposes a position: the row's string is compared with the code there.
    ``answers`` holds, per answer, its texts (``message``, ``display``, ``issue``: ``Enum``
    columns without nulls; a column no answer has is left out) and ``kind``, a byte: the
    result (0 NA, 1 false, 2 true) and one bit per text that is null (``4 << i`` for
    ``TEXTS[i]``).
    """

    codes: pl.Series
    hashes: np.ndarray
    slots: np.ndarray
    reach: int
    answers: dict[str, pl.Series]


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
    size = 1 << max(int(len(codes) * SPREAD - 1).bit_length(), 4)
    slots = np.zeros(size, dtype=np.uint32)
    home = (hashes & np.uint64(size - 1)).view(np.int64)
    todo = np.arange(1, len(codes), dtype=np.int64)
    reach = 0
    for step in range(size):  # a code not placed tries the next slot (slots outnumber codes)
        if not len(todo):
            break
        reach = step
        slot = (home.take(todo) + step) & (size - 1)
        free = np.flatnonzero(slots.take(slot) == 0)
        slots[slot[free]] = todo[free]  # of the codes trying one free slot, the last takes it
        placed = np.zeros(len(todo), dtype=bool)
        placed[free] = slots.take(slot[free]) == todo[free]
        todo = todo[~placed]
    # the texts are gathered without nulls (gathering nulls costs more than putting them
    # back from the kind's bits)
    kind = (state.answers.result + 1).astype(np.uint8)
    answers = {}
    for bit, name in enumerate(TEXTS):
        ids, texts = state.factorized(name)
        kind |= (ids < 0).astype(np.uint8) << (bit + 2)
        labels = [str(t) for t in texts]
        if labels:
            enum = pl.Series(name, labels, dtype=pl.Enum(labels))
            answers[name] = enum.gather(np.maximum(ids, 0).astype(np.uint32))
    answers["kind"] = pl.Series("kind", kind)
    return Lookup(codes, hashes, slots, reach, answers)


def _strings(table: AnswerTable, values: pl.Series) -> tuple[State, np.ndarray]:
    """Each row's position in the answers of ``table`` (a String column): found in the
    table's lookup, else answered through Arrow (and added to the table)."""
    state = table.state
    position, lost = find(lookup(state), values)
    if len(lost):
        state, answered = table.arrow(values.gather(lost).to_arrow())
        position[lost] = answered
    return state, position


def find(found: Lookup, values: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's position among the codes of ``found`` (a String column; a null row is
    the missing answer, 0), and the rows whose code is not there. A row's hash proposes a
    position (its home slot, else the next slots); the code there must equal the row."""
    import polars as pl

    mask = np.uint64(len(found.slots) - 1)
    hashes = values.hash(HASH_SEED).to_numpy()
    home = (hashes & mask).view(np.int64)
    position = found.slots.take(home)
    wrong = found.codes.gather(pl.Series(position)).ne_missing(values)
    if not wrong.any():
        return position, np.zeros(0, dtype=np.int64)
    rows = wrong.arg_true().to_numpy()
    position[rows] = _probe(found, hashes.take(rows), home.take(rows))
    sub = values.gather(rows)
    null = sub.is_null()
    right = found.codes.gather(pl.Series(position.take(rows))).eq_missing(sub) | null
    position[rows[null.to_numpy()]] = 0
    return position, rows[~right.to_numpy()]


def _probe(found: Lookup, hashes: np.ndarray, home: np.ndarray) -> np.ndarray:
    """Positions of the codes with these hashes past their home slot (0: none)."""
    size = len(found.slots)
    position = np.zeros(len(hashes), dtype=np.uint32)
    todo = np.arange(len(hashes))
    for step in range(1, found.reach + 1):
        at = found.slots.take((home.take(todo) + step) & (size - 1))
        hit = (at != 0) & (found.hashes.take(at) == hashes.take(todo))
        position[todo[hit]] = at[hit]
        todo = todo[~hit & (at != 0)]
        if not len(todo):
            break
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


def validate_codes(table: AnswerTable, values: pl.Series, system: str) -> pl.DataFrame:
    """The frame of COLUMNS for a String, Categorical or Enum column of codes of
    ``system``."""
    import polars as pl

    if values.dtype == pl.Categorical or isinstance(values.dtype, pl.Enum):
        strings, ids = _categories(values)
        state, position = _strings(table, strings)
        # per distinct id its answer, and one more for a null row: the missing answer
        at = pl.Series(np.append(position, 0).astype(np.uint32))
        if ids.null_count():
            ids = ids.fill_null(len(strings))
        answers = {name: s.gather(at) for name, s in lookup(state).answers.items()}
        return result_frame(answers, ids, system)
    if values.dtype != pl.String:
        values = values.cast(pl.String)
    state, position = _strings(table, values)
    return result_frame(lookup(state).answers, pl.Series(position), system)


def result_frame(answers: dict[str, pl.Series], at: pl.Series, system: str) -> pl.DataFrame:
    """The polars frame of COLUMNS: row ``i`` gets the answer at ``at[i]`` (``answers`` as
    in ``Lookup``); the system is the same for every row (one Enum value, not repeated in
    memory)."""
    import polars as pl

    kind = pl.col("kind")
    columns = [pl.when(kind & 3 != 0).then(kind & 3 == 2).alias("result")]
    for bit, name in enumerate(TEXTS):
        if name in answers:
            texts = pl.lit(answers[name]).gather(pl.col("at"))
            columns.append(pl.when(kind & (4 << bit) == 0).then(texts).alias(name))
        else:  # no answer has a text here
            columns.append(pl.lit(None, dtype=pl.Enum([])).alias(name))
    columns.append(pl.lit(system, dtype=pl.Enum([system])).alias("system"))
    frame = pl.DataFrame({"at": at}).with_columns(answers["kind"].gather(at).alias("kind"))
    return frame.select(columns).select(COLUMNS)


def validate_polars(
    checker: Checker,
    data: Any,
    *,
    code: str | None,
    system: str | None,
    display: str | None,
) -> pl.DataFrame | None:
    """The answer for polars data with one system and no displays; None otherwise (then
    the pandas algorithm answers)."""
    import polars as pl

    from workbench.bulk import check_columns

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
    if one is None:
        return None
    return validate_codes(checker.table(one), codes, one)
