"""``wb.report(result)``: the report of a column validation, whatever library it ran in.

A pandas result is its own report (a ``ValidationFrame``). A polars, Dask or Spark result
stays that library's frame; ``validate_column`` remembers, for as long as the result
lives, the call that made it (``remember``), and ``report_of`` collects the result and the
input columns it is about into pandas (one computation for Dask, one job for Spark: the
backend's ``collect``) and wraps them like a pandas result: the same ``summary()``,
``by_code()``, ``fix()``, ``to_html()`` and ``to_excel()``, with the counts of the very
result given.
"""

from __future__ import annotations

import threading
import weakref
from functools import partial
from typing import Any

import pandas as pd

from workbench.bulk import pandas_backend
from workbench.bulk.encoding import checked_codes
from workbench.bulk.jobs import Backend, ValidateColumn
from workbench.bulk.report import Revalidate, ValidationFrame, to_report
from workbench.errors import InvalidRequestError

_SOURCES: dict[int, tuple[weakref.ref[Any], ValidateColumn, Any, Backend]] = {}
_LOCK = threading.Lock()


def remember(result: Any, job: ValidateColumn, data: Any, backend: Backend) -> Any:
    """Keep the call that made ``result`` while ``result`` lives; return ``result`` (a
    result that cannot be referred to weakly is not kept: ``report_of`` then says so)."""
    key = id(result)

    def forget(_: Any) -> None:
        with _LOCK:
            found = _SOURCES.get(key)
            if found is not None and found[0]() is None:
                del _SOURCES[key]

    try:
        ref = weakref.ref(result, forget)
    except TypeError:
        return result
    with _LOCK:
        _SOURCES[key] = (ref, job, data, backend)
    return result


def report_of(result: Any) -> ValidationFrame:
    """The report of ``result``, a ``validate_column`` result of any backend. Raises
    InvalidRequestError for anything else."""
    if isinstance(result, ValidationFrame):
        return result
    with _LOCK:
        found = _SOURCES.get(id(result))
    if found is None or found[0]() is not result:
        raise InvalidRequestError(
            "report() takes what validate_column returned (a pandas, polars, Dask or Spark "
            f"result of this session), not this {type(result).__name__}"
        )
    _, job, data, backend = found
    frame, source = backend.collect(job, data, result)
    frame.index = source.index  # (row for row: the result is aligned with its input)
    frame["result"] = frame["result"].astype("boolean")
    codes = source[job.code] if isinstance(source, pd.DataFrame) else source
    return to_report(
        frame,
        checked_codes(codes),
        suggester=job.suggester(),
        revalidate=Revalidate(
            source, job.code, job.system, partial(pandas_backend.validate, job), job.engine
        ),
    )


def input_columns(job: ValidateColumn, columns: list[Any]) -> list[Any]:
    """The input columns a result is about: the code, system and display columns named."""
    named = [job.code, job.system, job.display]
    return [c for c in dict.fromkeys(named) if c is not None and c in columns]
