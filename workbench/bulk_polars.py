"""Polars input for bulk validation: polars columns go to pandas through Arrow, never
through Python objects, and the result comes back as a polars DataFrame."""

from __future__ import annotations

import sys
from typing import Any

import pandas as pd


def is_polars(data: Any) -> bool:
    """Whether ``data`` is a polars DataFrame or Series (without importing polars)."""
    polars = sys.modules.get("polars")
    return polars is not None and isinstance(data, polars.DataFrame | polars.Series)


def to_pandas(data: Any) -> pd.Series | pd.DataFrame:
    """The polars data as pandas backed by the same Arrow buffers (no Python objects)."""
    return data.to_pandas(use_pyarrow_extension_array=True)


def from_pandas(frame: pd.DataFrame) -> Any:
    """A pandas result frame as a polars DataFrame (categoricals stay categorical)."""
    import polars as pl

    return pl.from_pandas(pd.DataFrame(frame), include_index=False)
