"""The one dispatch: which backend answers a column, for validation and translation alike.

Each backend is a module (``polars_backend``, ``dask_backend``, ``spark_backend``,
``pandas_backend``) with ``handles(data)``, ``validate(job, data)`` and
``translate(job, data)``; the first that handles the data answers, pandas being the
default. A new dataframe library is one more such module in ``BACKENDS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.bulk import dask_backend, pandas_backend, polars_backend, reports, spark_backend
from workbench.bulk.columns import system_of
from workbench.bulk.jobs import Backend, TranslateColumn, ValidateColumn
from workbench.terminology.engine import Terminology
from workbench.terminology.service import EngineService

BACKENDS: tuple[Backend, ...] = (polars_backend, dask_backend, spark_backend, pandas_backend)


def backend_of(data: Any) -> Backend:
    """The backend of ``data`` (pandas for anything no other takes: it says what it takes)."""
    return next((b for b in BACKENDS if b.handles(data)), pandas_backend)


def validate_column(
    engine: Terminology,
    data: Any,
    valueset: str | Mapping[str, Any],
    *,
    code: str | None = None,
    system: str | None = None,
    system_column: str | None = None,
    display: str | None = None,
    abstract: bool | None = None,
    progress: bool = False,
) -> Any:
    """``Workbench.validate_column``: see there."""
    system = system_of(data, system, system_column)
    job = ValidateColumn(engine, valueset, code, system, display, abstract, progress)
    backend = backend_of(data)
    result = backend.validate(job, data)
    if backend is not pandas_backend:  # (a pandas result is its own report)
        reports.remember(result, job, data, backend)
    return result


def translate_column(
    service: EngineService,
    data: Any,
    url: str | None,
    *,
    code: str | None = None,
    system: str | None = None,
    system_column: str | None = None,
    target_system: str | None = None,
    reverse: bool = False,
) -> Any:
    """``Workbench.translate_column``: see there."""
    system = system_of(data, system, system_column)
    job = TranslateColumn(service, url, code, system, target_system, reverse)
    return backend_of(data).translate(job, data)
