"""The server fuzzed from its own ``/openapi.json`` (issue 38, point 2): schemathesis, as a
subprocess, against the live server on 127.0.0.1, with every check and every phase
(examples, coverage, fuzzing, stateful), in a bounded budget, finds nothing. The longer run
is ``benchmarks/fuzz_openapi.py`` (10 times the examples)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from fuzz_openapi import TOKEN, FuzzRun, fuzz  # noqa: E402

from workbench import Workbench  # noqa: E402
from workbench.server.embedded import ServerHandle  # noqa: E402

EXAMPLES = 10  # test cases per operation and phase (the benchmark runs 10 times more)
BUDGET = 50.0  # seconds for the whole schemathesis run


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    """A module-private server: the stateful phase creates, updates and deletes."""
    wb = Workbench()
    wb.load(ROOT / "valuesets", progress=False)
    with wb.serve(port=0, token=TOKEN) as handle:
        yield handle


@pytest.fixture(scope="module")
def run(server: ServerHandle) -> FuzzRun:
    return fuzz(server.url, examples=EXAMPLES, max_time=BUDGET)


def test_schemathesis_finds_nothing(run: FuzzRun) -> None:
    assert run.cases > 0, run.output[-3000:]
    assert run.failures == {}, run.output[-20000:]
    assert run.exit_code == 0, run.output[-5000:]


def test_the_budget_holds(run: FuzzRun) -> None:
    assert run.seconds <= BUDGET + 15, run.seconds
