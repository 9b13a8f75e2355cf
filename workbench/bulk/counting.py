"""A column's distinct codes with their rows, as ``impact`` reads them from every backend
(each backend's ``counts`` counts with its own library and ends in ``code_counts``)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa

from workbench.bulk.columns import require_column
from workbench.bulk.encoding import arrow_strings


def column_of(data: Any, column: str | None, library: str = "pandas") -> Any:
    """The column ``column`` of a DataFrame, or the Series itself (``require_column``'s
    errors for a DataFrame without that column; ``library`` is kept for the callers)."""
    columns = getattr(data, "columns", None)
    if columns is None or getattr(data, "ndim", 2) == 1:  # a Series (Dask's has columns)
        return data
    return data[require_column(list(columns), column)]


def code_counts(codes: Any, rows: Any, missing: int) -> pd.DataFrame:
    """The distinct codes and their rows as ``impact`` reads them (``code``, ``rows``;
    ``attrs["missing"]``: the rows without a code, an empty one included)."""
    frame = pd.DataFrame({"code": pd.Series(codes, dtype=object), "rows": rows})
    blank = frame["code"].isna() | (frame["code"].astype(str).str.strip() == "")
    out = frame[~blank].reset_index(drop=True)
    out.attrs["missing"] = int(missing) + int(frame.loc[blank, "rows"].sum())
    return out


def pandas_counts(data: Any, column: str | None) -> pd.DataFrame:
    """The distinct codes of a pandas column with their rows (``code_counts``)."""
    values = column_of(data, column)
    found = values.value_counts(dropna=True, sort=False)
    found = found[found > 0]
    return code_counts(found.index.astype(object), found.to_numpy(), values.isna().sum())


def arrow_codes(data: Any, column: str | None) -> pa.Array | pa.ChunkedArray | None:
    """The codes of a pandas column as Arrow strings, for ``impact``'s look-up in its kept
    table (``impact_table``): an Arrow-backed string column as it is, an ``object``
    column of texts (and missing values) converted; None for other data or dtypes, which
    are counted by their backend's ``counts``."""
    if not isinstance(data, pd.Series | pd.DataFrame):
        return None
    values = column_of(data, column)
    found = arrow_strings(values)
    if found is not None or values.dtype != object:
        return found
    try:
        return pa.array(values.to_numpy(), pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # not all texts: counted as pandas counts
        return None
