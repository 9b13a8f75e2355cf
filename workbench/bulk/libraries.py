"""Which dataframe library a value belongs to, asked without importing a library that is
not in use: the backends' ``handles`` and ``Impact.fix`` both ask here."""

from __future__ import annotations

import sys
from typing import Any


def is_polars(data: Any) -> bool:
    """Whether ``data`` is a polars DataFrame or Series."""
    polars = sys.modules.get("polars")
    return polars is not None and isinstance(data, polars.DataFrame | polars.Series)


def is_dask(data: Any) -> bool:
    """Whether ``data`` is a Dask DataFrame or Series."""
    return type(data).__module__.startswith(("dask.", "dask_expr"))


def is_spark(data: Any) -> bool:
    """Whether ``data`` is a Spark DataFrame (classic or Connect)."""
    sql = sys.modules.get("pyspark.sql")
    return sql is not None and isinstance(data, sql.DataFrame)
