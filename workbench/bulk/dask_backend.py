"""The Dask backend: the same semantics, lazily, partition by partition.

Validation: the value set is compiled once on the client (an unknown one fails there); the
engine itself (``shipping.ShippedChecker``: ``validate_code``'s own decision, not a copy
of its rules) is shipped once: scattered with ``broadcast`` to every worker when a
``distributed`` client is active, else put in the graph as one shared task (the threaded
scheduler uses the live engine). Each partition then runs the pandas algorithm with it.

Translation: the distinct (system, code) pairs of the whole column are gathered first (one
pass: ``drop_duplicates``) and translated once each on the client by the pandas backend;
the answer tables (``translate.Answered``, without the engine) are shipped to the workers
once, and each partition looks its rows up in them with the pandas algorithm.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from workbench.bulk import counting, libraries
from workbench.bulk.columns import require_column
from workbench.bulk.jobs import TranslateColumn, ValidateColumn
from workbench.bulk.pandas_backend import (
    check_columns,
    translate_pandas,
    validate_pandas,
)
from workbench.bulk.schema import TRANSLATION, VALIDATION, Schema
from workbench.bulk.shipping import ShippedChecker
from workbench.bulk.translate import Answered


def handles(data: Any) -> bool:
    """True for a dask DataFrame or Series (without importing dask when it is not used)."""
    return libraries.is_dask(data)


def counts(data: Any, column: str | None) -> pd.DataFrame:
    """The distinct codes of a dask column with their rows, counted on the workers (one
    computation)."""
    import dask

    values = counting.column_of(data, column, "dask")
    found, missing = dask.compute(values.value_counts(dropna=True), values.isna().sum())
    return counting.code_counts(found.index.astype(object), found.to_numpy(), missing)


def meta(schema: Schema = VALIDATION) -> pd.DataFrame:
    """The empty frame that describes a result's columns and dtypes (the categoricals'
    categories are only known per partition)."""
    from dask.dataframe.utils import UNKNOWN_CATEGORIES

    return schema.meta(pd.CategoricalDtype([UNKNOWN_CATEGORIES]))


def _partition(
    part: Any, shipped: ShippedChecker, code: str | None, system: str | None, display: str | None
) -> pd.DataFrame:
    return validate_pandas(shipped.open(), part, code=code, system=system, display=display)


def _ship(shipped: Any) -> Any:
    import dask

    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return dask.delayed(shipped, pure=False, traverse=False)
    return client.scatter(shipped, broadcast=True, hash=False)


def validate(job: ValidateColumn, data: Any) -> Any:
    """A lazy dask DataFrame of ``VALIDATION`` aligned with ``data``'s partitions."""
    import dask.dataframe as dd

    if isinstance(data, dd.DataFrame):
        check_columns(list(data.columns), code=job.code, system=job.system, display=job.display)
    job.checker()  # an unknown value set fails here, on the client
    shipped = _ship(job.shipped_checker())
    result = data.map_partitions(
        _partition,
        shipped,
        job.code,
        job.system,
        job.display,
        meta=meta(),
        align_dataframes=False,
    )
    if job.progress:
        result = _with_progress(result)
    return result


def collect(job: ValidateColumn, data: Any, result: Any) -> tuple[pd.DataFrame, Any]:
    """The result and the input columns it is about, computed together as pandas
    (``reports.report_of``)."""
    import dask
    import dask.dataframe as dd

    from workbench.bulk.reports import input_columns

    if isinstance(data, dd.DataFrame):
        data = data[input_columns(job, list(data.columns))]
    try:
        from distributed import get_client

        frame, source = dask.compute(result, data, scheduler=get_client())
    except (ImportError, ValueError):
        frame, source = dask.compute(result, data)
    return frame, source


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


# --- translation ---------------------------------------------------------------------------


def _compute(collection: Any) -> Any:
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return collection.compute()
    return collection.compute(scheduler=client)


def _distinct(data: Any, code: str | None, system: str | None) -> Any:
    """The distinct (system, code) rows of the whole column, computed now (pandas)."""
    import dask.dataframe as dd

    if not isinstance(data, dd.DataFrame):
        return _compute(data.drop_duplicates())
    require_column(list(data.columns), code)
    columns = [code] + ([system] if system is not None and system in data.columns else [])
    return _compute(data[columns].drop_duplicates())


def _translate_partition(
    part: Any, answered: Answered, code: str | None, system: str | None
) -> pd.DataFrame:
    return translate_pandas(answered.table, part, code=code, system=system)


def translate(job: TranslateColumn, data: Any) -> Any:
    """A lazy dask DataFrame of ``TRANSLATION`` aligned with ``data``'s partitions: every
    distinct pair translated on the client, the answers shipped once."""
    translator = job.translator()
    distinct = _distinct(data, job.code, job.system)
    translate_pandas(translator.table, distinct, code=job.code, system=job.system)
    return data.map_partitions(
        _translate_partition,
        _ship(translator.answered()),
        job.code,
        job.system,
        meta=meta(TRANSLATION),
        align_dataframes=False,
    )
