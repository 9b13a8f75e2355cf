"""Column translation on Dask collections: the pandas semantics, partition by partition.

The distinct (system, code) pairs of the whole column are gathered first (one pass over
the data: ``drop_duplicates``), translated once each on the client with the same engine
as ``Workbench.translate``, and the answer table (one row per distinct pair) is shipped to
the workers once, as validation ships its checker. Each partition then factorizes its own
rows and gathers their answers from the table, so the result is a lazy dask DataFrame
equal to what the pandas path gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from workbench.bulk_dask import _ship
from workbench.bulk_translate import ColumnTranslator, Key, translate_frame
from workbench.errors import InvalidRequestError


def meta() -> pd.DataFrame:
    """The empty frame that describes the result's columns and dtypes."""
    return pd.DataFrame(
        {
            "result": pd.Series(dtype="boolean"),
            "equivalence": pd.Series(dtype=object),
            "target_system": pd.Series(dtype=object),
            "target_code": pd.Series(dtype=object),
            "target_display": pd.Series(dtype=object),
            "matches": pd.Series(dtype=np.int64),
            "message": pd.Series(dtype=object),
        }
    )


def _columns(data: Any, code: str | None, system: str | None) -> tuple[Any, Any, str | None]:
    import dask.dataframe as dd

    if isinstance(data, dd.DataFrame):
        if code is None or code not in data.columns:
            raise InvalidRequestError(f"code must name a column of the frame, not {code!r}")
        if system is not None and system in data.columns:
            return data[code], data[system], None
        return data[code], None, system
    return data, None, system


def _compute(collection: Any) -> Any:
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return collection.compute()
    return collection.compute(scheduler=client)


def distinct_pairs(codes: Any, systems: Any, constant: str | None) -> list[tuple[Any, Any]]:
    """The distinct (system, code) pairs of the whole column (computed now)."""
    if systems is None:
        found = _compute(codes.drop_duplicates())
        return [(constant, c) for c in found.tolist()]
    frame = _compute(codes.to_frame("c").assign(s=systems).drop_duplicates())
    return list(zip(frame["s"].tolist(), frame["c"].tolist(), strict=True))


class AnswerTable:
    """The answers of every distinct pair of a column (one object, so that it is
    scattered whole, not key by key)."""

    def __init__(self, rows: dict[Key, tuple[Any, ...]]) -> None:
        self.rows = rows

    def __call__(self, system: str | None, code: str) -> tuple[Any, ...]:
        """The row of one normalised pair."""
        return self.rows[(system, code)]


def _partition(
    part: Any,
    table: AnswerTable,
    code: str | None,
    system: str | None,
) -> pd.DataFrame:
    if isinstance(part, pd.DataFrame):
        codes = part[code]
        if system is not None and system in part.columns:
            systems, constant = part[system], None
        else:
            systems, constant = None, system
    else:
        codes, systems, constant = part, None, system
    return translate_frame(table, codes, systems, constant, part.index)


def translate_dask(
    translator: ColumnTranslator,
    data: Any,
    *,
    code: str | None = None,
    system: str | None = None,
) -> Any:
    """Return a lazy dask DataFrame of ``COLUMNS`` aligned with ``data``'s partitions."""
    codes, systems, constant = _columns(data, code, system)
    table = AnswerTable(translator.table(distinct_pairs(codes, systems, constant)))
    shipped = _ship(table)
    return data.map_partitions(
        _partition, shipped, code, system, meta=meta(), align_dataframes=False
    )
