"""The server fuzzed from its own ``/openapi.json`` (issue 38, point 2): schemathesis, as a
subprocess, against the live server on 127.0.0.1, with every check and every phase
(examples, coverage, fuzzing, stateful), in a bounded budget, finds nothing; each phase runs
(none skipped for want of time) and schemathesis stays within 4 GiB of memory (issue 49, point
9). The longer run is ``benchmarks/fuzz_openapi.py`` (10 times the examples)."""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from fuzz_openapi import MAX_RSS, PHASES, TOKEN, FuzzRun, fuzz  # noqa: E402

from workbench import Workbench  # noqa: E402
from workbench.server.embedded import ServerHandle  # noqa: E402

EXAMPLES = 5  # test cases per operation and phase (the benchmark runs 20 times more)
# The phases in three runs, each with its own --max-time (seconds), so that none is skipped
# for want of time when the machine is busy (in one run, the phases share one budget and the
# last, stateful, got none once the coverage phase overran its share).
BUDGETS = {"examples,coverage": 25.0, "fuzzing": 12.0, "stateful": 12.0}
# Each run draws its seed (FUZZ_SEED=38 repeats a run), so that runs explore more between them.
SEED = int(os.environ.get("FUZZ_SEED") or random.randrange(1, 2**31))


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    """A module-private server: the stateful phase creates, updates and deletes."""
    wb = Workbench()
    wb.load(ROOT / "valuesets", progress=False)
    with wb.serve(port=0, token=TOKEN) as handle:
        yield handle


@pytest.fixture(scope="module")
def runs(server: ServerHandle) -> dict[str, FuzzRun]:
    return {
        phases: fuzz(server.url, examples=EXAMPLES, max_time=budget, seed=SEED, phases=phases)
        for phases, budget in BUDGETS.items()
    }


@pytest.mark.parametrize("phases", list(BUDGETS))
def test_schemathesis_finds_nothing(runs: dict[str, FuzzRun], phases: str) -> None:
    """No 5xx, every response as documented (status, content type, headers, schema), every
    schema-violating request refused, every schema-valid one accepted (but the one allowed
    refusal, a 400 'required' for a rule between inputs that the inputs' descriptions state,
    and the refusals a specification fixes, counted apart: ``fuzz_openapi.SPEC_FIXED``),
    Allow on every 405, nothing found after a delete."""
    run = runs[phases]
    assert run.cases > 0, run.output[-3000:]
    assert run.findings == {}, f"FUZZ_SEED={SEED}\n" + run.output[-20000:]


def test_the_budget_holds(runs: dict[str, FuzzRun]) -> None:
    """The issue's budget: at most 90 s in all (about 55 s on a quiet machine)."""
    assert sum(run.seconds for run in runs.values()) <= 90, [r.seconds for r in runs.values()]


@pytest.mark.parametrize("phases", list(BUDGETS))
def test_every_phase_runs_within_its_memory(runs: dict[str, FuzzRun], phases: str) -> None:
    """Every phase ran (none skipped or errored), and schemathesis' peak resident memory
    stayed within 4 GiB (issue 49: its coverage phase once grew past 24 GB)."""
    assert ",".join(BUDGETS) == PHASES == "examples,coverage,fuzzing,stateful"
    run = runs[phases]
    summary = run.output.rpartition("Test Phases:")[2].partition("\n\n")[0]
    for phase in phases.split(","):
        line = next(line for line in summary.splitlines() if phase.title() in line)
        assert line.split()[0] in ("\u2705", "\u274c"), summary  # (passed or failed: it ran)
    assert "Schema Error" not in run.output, run.output[-5000:]
    assert 0 < run.peak_rss <= MAX_RSS, run.peak_rss
