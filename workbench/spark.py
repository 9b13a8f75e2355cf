"""Spark helpers in Spark's own style: functions for ``DataFrame.transform`` that add the
answers to the rows as one struct column.

``wb.validate_column(df, ...)`` on a Spark DataFrame returns the result columns alone (as
on pandas); these keep the input's columns and add one struct column, so the answers stay
next to their rows and never clash with input columns called ``system`` or ``display``::

    from workbench.spark import validate
    checked = df.transform(validate(wb, GENDER, code="gender", into="gender_check"))
    checked.where("gender_check.result = false").select("id", "gender_check.*")

As with ``validate_column``, the value set or maps are resolved when the function is
applied and no Spark job starts (but see ``spark_backend.with_translation``): the distinct
codes are answered inside the plan when the caller's action runs. pyspark is imported
only when a function is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from workbench.bulk import spark_backend
from workbench.bulk.columns import system_of
from workbench.bulk.jobs import TranslateColumn, ValidateColumn

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from workbench.workbench import Workbench

Transform = Callable[["DataFrame"], "DataFrame"]


def validate(
    wb: Workbench,
    valueset: str | Mapping[str, Any],
    *,
    code: str,
    system: str | None = None,
    system_column: str | None = None,
    display: str | None = None,
    abstract: bool | None = None,
    into: str = "validation",
) -> Transform:
    """For ``df.transform``: ``df`` with the struct column ``into`` holding
    ``validate_column``'s columns (result, message, display, issue, system) for each row."""

    def apply(data: DataFrame) -> DataFrame:
        rows_of = system_of(data, system, system_column)
        job = ValidateColumn(wb.terminology, valueset, code, rows_of, display, abstract)
        return spark_backend.with_validation(job, data, into)

    return apply


def translate(
    wb: Workbench,
    url: str | None,
    *,
    code: str,
    system: str | None = None,
    system_column: str | None = None,
    target_system: str | None = None,
    reverse: bool = False,
    into: str = "translation",
) -> Transform:
    """For ``df.transform``: ``df`` with the struct column ``into`` holding
    ``translate_column``'s columns (result, equivalence, target_system, target_code,
    target_display, matches, message) for each row."""

    def apply(data: DataFrame) -> DataFrame:
        rows_of = system_of(data, system, system_column)
        job = TranslateColumn(wb.service, url, code, rows_of, target_system, reverse)
        return spark_backend.with_translation(job, data, into)

    return apply
