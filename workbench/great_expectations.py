"""Great Expectations (GX Core 1.x): ``ExpectColumnValuesToBeInValueSet(column=...,
value_set_url=...)``, a column map expectation answered by ``Workbench.validate_column``
(validate_code's semantics): its ``unexpected_list`` holds the failing codes, and its
result's ``reasons`` the rows per reason and each failing code's reason and message.

The Workbench is the one chosen with ``workbench.use(wb)``, else the only one that exists
(an expectation is configuration that GX serialises, so it names no Workbench). Needs
great_expectations (the ``quality`` extra); ``import workbench`` does not import it.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import pandas as pd

from workbench.extras import require

with warnings.catch_warnings():
    # GX's import uses deprecated modules (sre_constants) and imports pyspark when it is
    # installed, which warns about pandas 3: neither concerns the checks here
    warnings.simplefilter("ignore", DeprecationWarning)
    warnings.filterwarnings("ignore", "PySpark does not yet fully support", FutureWarning)
    require("great_expectations", "quality", "workbench.great_expectations")
    from great_expectations.execution_engine import PandasExecutionEngine
    from great_expectations.expectations.expectation import ColumnMapExpectation
    from great_expectations.expectations.metrics import (
        ColumnAggregateMetricProvider,
        ColumnMapMetricProvider,
        column_aggregate_value,
        column_condition_partial,
    )
    from great_expectations.validator.metric_configuration import MetricConfiguration

from workbench.selection import current

CONDITION = "column_values.in_fhir_value_set"
REASONS = "column.fhir_value_set_reasons"


class ColumnValuesInFhirValueSet(ColumnMapMetricProvider):
    """The row condition: whether each (non-null) code is valid in the value set."""

    condition_metric_name = CONDITION
    condition_value_keys = ("value_set_url",)

    @column_condition_partial(engine=PandasExecutionEngine)
    def _pandas(cls, column: pd.Series, value_set_url: str, **_: Any) -> pd.Series:
        report = current().validate_column(column, value_set_url)
        return pd.Series(report["result"].fillna(False).astype(bool).to_numpy(), column.index)


class ColumnFhirValueSetReasons(ColumnAggregateMetricProvider):
    """Why the codes failed: the rows per reason, and each failing code's reason and
    message (its distinct values validated once)."""

    metric_name = REASONS
    value_keys = ("value_set_url",)

    @column_aggregate_value(engine=PandasExecutionEngine)
    def _pandas(cls, column: pd.Series, value_set_url: str, **_: Any) -> dict[str, Any]:
        return reasons(column, value_set_url)


def reasons(column: pd.Series, value_set_url: str) -> dict[str, Any]:
    """``{"counts": {reason: rows}, "codes": {code: {"reason", "message"}}}`` of a column."""
    counts = column.value_counts(dropna=True)
    distinct = pd.Series(counts.index, dtype=object)
    report = current().validate_column(distinct, value_set_url)
    issues = report.reason.to_numpy(dtype=object)
    by_reason: dict[str, int] = {}
    codes = {}
    for code, rows, issue, message in zip(
        distinct, counts.to_numpy(), issues, report["message"], strict=True
    ):
        by_reason[str(issue)] = by_reason.get(str(issue), 0) + int(rows)
        if issue != "valid":
            codes[str(code)] = {"reason": str(issue), "message": message}
    return {"counts": by_reason, "codes": codes}


class ExpectColumnValuesToBeInValueSet(ColumnMapExpectation):
    """Expect each value of ``column`` to be a valid code of the FHIR value set
    ``value_set_url`` (``mostly`` as every column map expectation). Missing values are not
    checked (GX's rule for map expectations)."""

    value_set_url: str

    map_metric: ClassVar[str] = CONDITION
    success_keys: ClassVar[tuple[str, ...]] = ("value_set_url", "mostly")

    def get_validation_dependencies(
        self,
        execution_engine: Any = None,
        runtime_configuration: dict | None = None,
        **kwargs: Any,
    ) -> Any:
        """The map metric's dependencies, and the reasons beside them."""
        dependencies = super().get_validation_dependencies(
            execution_engine=execution_engine, runtime_configuration=runtime_configuration
        )
        domain = {
            key: value
            for key, value in self.configuration.kwargs.items()
            if key in ("column", "batch_id", "row_condition", "condition_parser")
        }
        dependencies.set_metric_configuration(
            REASONS,
            MetricConfiguration(
                REASONS,
                metric_domain_kwargs=domain,
                metric_value_kwargs={"value_set_url": self.value_set_url},
            ),
        )
        return dependencies

    def _validate(
        self,
        metrics: dict,
        runtime_configuration: dict | None = None,
        execution_engine: Any = None,
    ) -> Any:
        answer = super()._validate(metrics, runtime_configuration, execution_engine)
        answer["result"]["reasons"] = metrics[REASONS]
        return answer
