"""Schemathesis against the live server, from its own ``/openapi.json`` (issue 38, point 2).

Run from the repository root::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/fuzz_openapi.py [--examples 50] [--max-time 600]

A server on 127.0.0.1 (the shipped content, a bearer token, nothing stored on disk) is
fuzzed by the ``schemathesis`` command line as a subprocess: every check, the examples,
coverage, fuzzing and stateful phases, ``--examples`` test cases per operation (10 times the
test's budget by default). Printed: the test cases, the unique failures per check as
schemathesis counts them, then the findings: those failures less the one allowed refusal
(a 400 OperationOutcome ``required``, for a rule between inputs) and the histories read
after a delete (which FHIR keeps readable); the exit code is 1 when a finding is left.
``tests/test_http_openapi_fuzz.py`` runs the same harness with a small budget.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "fuzz-token-38"
PHASES = "examples,coverage,fuzzing,stateful"


@dataclass
class FuzzRun:
    """What one schemathesis run found: its exit code, wall time and output, the test
    cases it generated and the unique failures per check (``ST202 Schema-valid request
    rejected``: 3), as the summary counts them (``failures``) and without the allowed
    exception (``findings``; ``allowed`` counts those)."""

    exit_code: int
    seconds: float
    output: str
    cases: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    findings: dict[str, int] = field(default_factory=dict)
    allowed: int = 0
    history_after_delete: int = 0


def _schemathesis() -> list[str]:
    found = Path(sys.executable).with_name("schemathesis")
    return [str(found)] if found.exists() else [sys.executable, "-m", "schemathesis.cli"]


_FAILURE = re.compile(r"^\s*\S+ (ST\d+) (.+): (\d+)\s*$")
_CASES = re.compile(r"^\s*(\d+) generated")
_BLOCK = re.compile(r"^- (ST\d+ .+)$", re.M)
_STATUS = re.compile(r"^\[(\d{3})\]", re.M)
_BODY = re.compile(r"^\s*`(\{.*\})`\s*$", re.M)
ALLOWED = "ST202 Schema-valid request rejected"
# The history of a deleted resource stays readable (FHIR R4 http.html#history: a history
# lists the delete), which schemathesis' use-after-free check takes for a leak: counted apart.
AFTER_DELETE = "ST301"
_HISTORY_READ = re.compile(r"^\s*curl -X GET [^\n]*/_history'?\s*$", re.M)


def _read_summary(run: FuzzRun) -> None:
    """The failures per check and the test cases, from the closing summary."""
    summary = run.output.rpartition("SUMMARY")[2]
    for line in summary.splitlines():
        found = _FAILURE.match(line)
        if found:
            run.failures[f"{found.group(1)} {found.group(2)}"] = int(found.group(3))
        cases = _CASES.match(line)
        if cases:
            run.cases = int(cases.group(1))


def allowed(status: int, body: str) -> bool:
    """The one refusal of a schema-valid request that is no finding: a 400
    OperationOutcome with the issue code ``required`` (a rule between inputs that OpenAPI
    cannot state, which the inputs' descriptions state)."""
    try:
        issue = json.loads(body)["issue"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return False
    return status == 400 and issue.get("code") == "required"


def _read_failures(run: FuzzRun) -> None:
    """Each failure of the report (its check, status and body), the allowed ones apart."""
    starts = [m.start() for m in _BLOCK.finditer(run.output)] + [len(run.output)]
    for start, end in itertools.pairwise(starts):
        block = run.output[start:end]
        check = _BLOCK.match(block)
        status, body = _STATUS.search(block), _BODY.search(block)
        assert check is not None
        name = check.group(1).strip()
        if (
            name == ALLOWED
            and status is not None
            and body is not None
            and allowed(int(status.group(1)), body.group(1))
        ):
            run.allowed += 1
            continue
        if name.startswith(AFTER_DELETE) and _HISTORY_READ.search(block):
            run.history_after_delete += 1
            continue
        run.findings[name] = run.findings.get(name, 0) + 1


def fuzz(base_url: str, *, examples: int, max_time: float, seed: int = 38) -> FuzzRun:
    """Run schemathesis (every check and phase) against ``base_url`` (the FHIR base of a
    server on 127.0.0.1); ``max_time`` bounds the whole run."""
    with tempfile.TemporaryDirectory() as folder:
        command = [
            *_schemathesis(),
            "run",
            f"{base_url}/openapi.json",
            "--checks",
            "all",
            "--phases",
            PHASES,
            "--max-examples",
            str(examples),
            "--max-time",
            str(max(1, int(max_time))),
            "--seed",
            str(seed),
            "--workers",
            "1",
            "--no-shrink",
            "--continue-on-failure",
            "--request-timeout",
            "20",
            "--header",
            f"Authorization: Bearer {TOKEN}",
        ]
        env = {**os.environ, "NO_COLOR": "1", "SCHEMATHESIS_TELEMETRY": "false"}
        started = time.monotonic()
        done = subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=max_time + 120, cwd=folder
        )
        run = FuzzRun(done.returncode, time.monotonic() - started, done.stdout + done.stderr)
    _read_summary(run)
    _read_failures(run)
    return run


def main() -> int:
    """The longer run of the benchmarks: serve, fuzz, print the failures per check."""
    from workbench import Workbench

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=50, help="test cases per operation")
    parser.add_argument("--max-time", type=float, default=600.0, help="seconds, at most")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--log", help="a file for schemathesis' whole output")
    args = parser.parse_args()
    wb = Workbench()
    wb.load(ROOT / "valuesets", progress=False)
    with wb.serve(port=0, token=TOKEN) as handle:
        run = fuzz(handle.url, examples=args.examples, max_time=args.max_time, seed=args.seed)
    if args.log:
        Path(args.log).write_text(run.output)
    print(f"schemathesis: exit {run.exit_code}, {run.seconds:.0f} s, {run.cases} test cases")
    for check, count in sorted(run.failures.items()):
        print(f"  {check}: {count}")
    print(f"unique failures: {sum(run.failures.values())}")
    print(
        f"findings (less {run.allowed} allowed 400 'required' refusals and "
        f"{run.history_after_delete} histories read after a delete):"
    )
    for check, count in sorted(run.findings.items()):
        print(f"  {check}: {count}")
    if run.exit_code != 0 and not run.failures:
        print(run.output[-5000:])
    return 1 if run.findings or (run.exit_code != 0 and not run.failures) else 0


if __name__ == "__main__":
    sys.exit(main())
