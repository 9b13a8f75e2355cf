"""workbench.great_expectations in a real GX Core checkpoint (one ephemeral context for the
module: GX is slow to import and to set up), the Workbench chosen with workbench.use."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

import workbench
from workbench import Workbench
from workbench.great_expectations import ExpectColumnValuesToBeInValueSet

import great_expectations as gx  # isort: skip  (after the module that imports it quietly)

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"


@pytest.fixture(scope="module")
def checkpoint() -> Iterator[Any]:
    """A checkpoint over a pandas dataframe asset with two expectations: all rows, and
    ``mostly=0.5``; analytics off (the test talks to nothing)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GX_ANALYTICS_ENABLED", "false")
        context = gx.get_context(mode="ephemeral")
        batch = (
            context.data_sources.add_pandas("frames")
            .add_dataframe_asset("patients")
            .add_batch_definition_whole_dataframe("whole")
        )
        suite = context.suites.add(gx.ExpectationSuite(name="codes"))
        suite.add_expectation(
            ExpectColumnValuesToBeInValueSet(column="gender", value_set_url=GENDER)
        )
        suite.add_expectation(
            ExpectColumnValuesToBeInValueSet(column="gender", value_set_url=GENDER, mostly=0.5)
        )
        definition = context.validation_definitions.add(
            gx.ValidationDefinition(name="nightly", data=batch, suite=suite)
        )
        yield context.checkpoints.add(
            gx.Checkpoint(
                name="nightly",
                validation_definitions=[definition],
                result_format={"result_format": "COMPLETE"},
            )
        )


def _results(checkpoint: Any, wb: Workbench, codes: list[Any]) -> list[Any]:
    with workbench.use(wb):
        run = checkpoint.run(batch_parameters={"dataframe": pd.DataFrame({"gender": codes})})
    [validation] = run.run_results.values()
    return [r for r in validation.results]


def test_a_checkpoint_lists_the_failing_codes_and_their_reasons(
    checkpoint: Any, default_wb: Workbench
) -> None:
    every, mostly = _results(checkpoint, default_wb, ["male", "mail", None, "mail", "female"])
    assert (every.success, mostly.success) == (False, True)  # 2 of 4 codes fail
    result = every.result
    assert result["unexpected_list"] == ["mail", "mail"]
    assert result["unexpected_index_list"] == [1, 3]
    assert result["missing_count"] == 1  # missing values are not checked
    reasons = result["reasons"]
    assert reasons["counts"] == {"valid": 2, "unknown-code": 2}
    assert reasons["codes"]["mail"]["reason"] == "unknown-code"
    assert "Unknown code 'mail'" in reasons["codes"]["mail"]["message"]


def test_a_valid_column_passes(checkpoint: Any, default_wb: Workbench) -> None:
    results = _results(checkpoint, default_wb, ["male", "female", "other", "unknown"])
    assert all(r.success for r in results)
    assert results[0].result["unexpected_list"] == []
