"""Polars input for bulk validation, answered natively: no Python object per row.

One system for every row (``system=`` a URI, or a system column that holds one value) and
no display column: a ``String`` code column is looked up through Arrow
(``pyarrow.compute.index_in`` against the answer table's cached array); a ``Categorical`` or
``Enum`` column through its distinct values and their physical codes. The result columns
are ``Enum`` columns whose categories are the answer table's texts (built once per table),
gathered by each row's answer. Anything else (several systems, displays) goes to the pandas
algorithm through Arrow, and comes back as a polars DataFrame.
"""

from __future__ import annotations

import sys
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
    return first if bool((values.cast(pl.String) == first).all()) else None


def positions(table: AnswerTable, values: pl.Series) -> tuple[State, np.ndarray]:
    """Each row's position in the answers of ``table`` (a String, Categorical or Enum
    column)."""
    import polars as pl

    if values.dtype == pl.Categorical or isinstance(values.dtype, pl.Enum):
        distinct = values.unique()
        physical = distinct.to_physical()
        present = physical.is_not_null().to_numpy()
        known = physical.drop_nulls().to_numpy().astype(np.int64)
        sentinel = int(known.max(initial=-1)) + 1  # where a null row looks (missing: 0)
        state, found = table.arrow(distinct.cast(pl.String).to_arrow())
        lookup = np.zeros(sentinel + 1, dtype=np.int64)
        lookup[known] = found[present]
        rows = values.to_physical()
        if rows.null_count():
            rows = rows.fill_null(sentinel)
        return state, lookup.take(rows.to_numpy())
    if values.dtype != pl.String:
        values = values.cast(pl.String)
    return _strings(table, values)


HASH_SEED = 20240611


def _hashed(state: State) -> tuple[pl.Series, pd.Index] | None:
    """The table's codes as a polars Series and their polars hashes as a hash index (None
    when two codes share a hash: then Arrow answers)."""
    import polars as pl

    key = "polars:hashed"
    if key not in state.cache:
        codes = pl.Series("code", state.codes.tolist(), dtype=pl.String)
        index = pd.Index(codes.hash(HASH_SEED).to_numpy())
        state.cache[key] = (codes, index) if index.is_unique else None
    found: tuple[pl.Series, pd.Index] | None = state.cache[key]
    return found


def _strings(table: AnswerTable, values: pl.Series) -> tuple[State, np.ndarray]:
    """Row positions of a String column: by the polars hash of each row, checked against
    the code it finds (a hash never decides alone); what is not found goes through Arrow."""
    import polars as pl

    state = table.state
    hashed = _hashed(state)
    if hashed is None:
        return table.arrow(values.to_arrow())
    codes, index = hashed
    position = index.get_indexer(pd.Index(values.hash(HASH_SEED).to_numpy(), copy=False))
    found = codes.gather(pl.Series(np.where(position >= 0, position, 0).astype(np.uint32)))
    same = (found == values).fill_null(False).to_numpy()
    position[~same] = -1
    if values.null_count():
        position[values.is_null().to_numpy()] = 0
    lost = np.flatnonzero(position < 0)
    if len(lost):
        state, answered = table.arrow(values.gather(lost).to_arrow())
        position[lost] = answered
    return state, position


def _enum_column(state: State, name: str) -> tuple[np.ndarray, pl.Series]:
    """Per answer, its index among the distinct texts of ``name`` (the last index for no
    text); and those texts as an Enum series ending in a null (both built once per table
    state)."""
    import polars as pl

    key = f"polars:{name}"
    found = state.cache.get(key)
    if found is None:
        ids, texts = state.factorized(name)
        labels = [str(t) for t in texts]
        index = np.where(ids < 0, len(labels), ids).astype(np.uint32)
        found = (index, pl.Series(name, [*labels, None], dtype=pl.Enum(labels)))
        state.cache[key] = found
    return found


def result_frame(state: State, rows: np.ndarray) -> pl.DataFrame:
    """The polars frame of COLUMNS for rows answered at ``rows`` in ``state``."""
    import polars as pl

    result = state.answers.result.take(rows)
    columns: dict[str, pl.Series] = {
        "result": pl.Series("result", pa.array(result == 1, mask=result < 0)),
    }
    for name in COLUMNS[1:]:
        index, texts = _enum_column(state, name)
        columns[name] = texts.gather(pl.Series(index.take(rows)))
    return pl.DataFrame(columns)


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
    state, rows = positions(checker.table(one), codes)
    return result_frame(state, rows)
