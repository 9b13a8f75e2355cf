"""Column validation on Dask collections: the same semantics, lazily, partition by partition.

The value set is expanded once on the client; the index a worker needs (``Checker``, holding
the expansion and the code system indexes) is shipped once: scattered with ``broadcast`` to
every worker when a ``distributed`` client is active, else put in the graph as one shared
task. Each partition then runs the pandas algorithm.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from workbench.bulk import Checker, check_columns, validate_pandas


def is_dask(data: Any) -> bool:
    """True for a dask DataFrame or Series (without importing dask when it is not used)."""
    module = type(data).__module__
    return module.startswith(("dask.", "dask_expr"))


def meta() -> pd.DataFrame:
    """The empty frame that describes the result's columns and dtypes (the categoricals'
    categories are only known per partition)."""
    from dask.dataframe.utils import UNKNOWN_CATEGORIES

    unknown = pd.CategoricalDtype([UNKNOWN_CATEGORIES])
    return pd.DataFrame(
        {
            "result": pd.Series(dtype="boolean"),
            "message": pd.Series(dtype=unknown),
            "display": pd.Series(dtype=unknown),
            "issue": pd.Series(dtype=unknown),
            "system": pd.Series(dtype=unknown),
        }
    )


def _partition(
    part: Any, checker: Checker, code: str | None, system: str | None, display: str | None
) -> pd.DataFrame:
    return validate_pandas(checker, part, code=code, system=system, display=display)


def _ship(checker: Any) -> Any:
    import dask

    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return dask.delayed(checker, pure=False, traverse=False)
    return client.scatter(checker, broadcast=True, hash=False)


def validate_dask(
    checker: Checker,
    data: Any,
    *,
    code: str | None = None,
    system: str | None = None,
    display: str | None = None,
    progress: bool = False,
) -> Any:
    """Return a lazy dask DataFrame of COLUMNS aligned with ``data``'s partitions."""
    import dask.dataframe as dd

    if isinstance(data, dd.DataFrame):
        check_columns(list(data.columns), code=code, system=system, display=display)
    shipped = _ship(checker)
    result = data.map_partitions(
        _partition, shipped, code, system, display, meta=meta(), align_dataframes=False
    )
    if progress:
        result = _with_progress(result)
    return result


def _with_progress(result: Any) -> Any:
    try:
        from distributed import get_client, progress

        get_client()
    except (ImportError, ValueError):
        from dask.diagnostics import ProgressBar

        with ProgressBar():
            return result.persist()
    persisted = result.persist()
    progress(persisted)
    return persisted
