"""The entry of a binding check from a Workbench: its data read as ``read_fhir`` reads it,
the request checked, one ``BindingChecker`` per Workbench kept for its compiled plans."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from workbench.bindings.check import BindingCheck, BindingChecker
from workbench.bindings.distributed import Shipped, dask_rows, spark_rows
from workbench.bindings.store import Structures
from workbench.bulk.libraries import is_dask, is_spark
from workbench.terminology.engine import Terminology


class Holder(Protocol):
    """What a binding check needs of a Workbench: its definitions and its engine."""

    structures: Structures
    terminology: Terminology


def checker_of(wb: Holder) -> BindingChecker:
    """The Workbench's binding checker (made once, kept on it)."""
    found = wb.__dict__.get("_binding_checker")
    if found is None:
        found = wb.__dict__["_binding_checker"] = BindingChecker(wb.structures, wb.terminology)
    return found


def check_bindings(
    wb: Holder,
    data: Any,
    *,
    strength: str | Sequence[str] = ("required", "extensible"),
    profiles: str | Sequence[str] | None = "declared",
) -> Any:
    """``Workbench.check_bindings``: see there (a ``BindingReport``; for a Spark or Dask
    DataFrame of JSON texts, a lazy DataFrame of the report's rows)."""
    request = BindingCheck.of(strength, profiles)
    checker = checker_of(wb)
    if is_spark(data) or is_dask(data):
        checker.require_definitions()
        shipped = Shipped.of(wb.structures, wb.terminology, request)
        return spark_rows(shipped, data) if is_spark(data) else dask_rows(shipped, data)
    return checker.check(request, data)
