"""The polars half of ``workbench.pandera``: pandera's polars check backend for
ValueSetCheck (imported only when polars is installed)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
from pandera.api.base.checks import CheckResult
from pandera.backends.polars.checks import PolarsCheckBackend
from pandera.constants import CHECK_OUTPUT_KEY


class PolarsValueSetBackend(PolarsCheckBackend):
    """The failure cases are the failing rows' ``'code' reason`` texts; pandera numbers the
    rows (its ``index``) from the pass column."""

    check: Any

    def apply(self, check_obj: Any) -> Any:
        """Each row's pass and the failing rows' texts."""
        return self.check.verdicts(check_obj)

    def postprocess(self, check_obj: Any, check_output: Any) -> CheckResult:
        """The pass column as a lazy frame, and the failure cases beside it."""
        results = pl.LazyFrame({CHECK_OUTPUT_KEY: pl.Series(check_output.passed, dtype=pl.Boolean)})
        cases = np.asarray(check_output.cases, dtype=object)
        failures = pl.LazyFrame({"failure_case": pl.Series(cases, dtype=pl.String)})
        return CheckResult(
            check_output=results,
            check_passed=results.select(pl.col(CHECK_OUTPUT_KEY).all()),
            checked_object=check_obj,
            failure_cases=failures,
        )


def register(check_class: Any) -> None:
    """Register the backend for ``check_class`` on polars lazy frames."""
    check_class.register_backend(pl.LazyFrame, PolarsValueSetBackend)
