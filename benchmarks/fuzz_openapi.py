"""Schemathesis against the live server, from its own ``/openapi.json`` (issue 38, point 2).

Run from the repository root::

    PYTHONPATH=$PWD .venv/bin/python benchmarks/fuzz_openapi.py [--examples 50] [--max-time 600]
        [--phases examples,coverage,fuzzing,stateful]

A server on 127.0.0.1 (the shipped content, a bearer token, nothing stored on disk) is
fuzzed by the ``schemathesis`` command line as a subprocess: every check, the examples,
coverage, fuzzing and stateful phases, ``--examples`` test cases per operation (10 times the
test's budget by default). Printed: the test cases, the unique failures per check as
schemathesis counts them, those counted apart and why, then the findings; the exit code is
1 when a finding is left. Counted apart: the one allowed refusal (a 400 OperationOutcome
``required``, for a rule between inputs that the inputs' descriptions state), the refusals a
specification fixes (``SPEC_FIXED``, each named by its rule), a request whose header breaks
its documented pattern (schemathesis' header generator keeps to letters and digits, so it
sends ``If-None-Exist: 0`` as valid) and the histories read after a delete (which FHIR keeps
readable, its versions before the delete too). 410 and 412 count as answers to valid data
and refusals of invalid data (``CONFIG``).
Also printed: schemathesis' peak resident memory (its own rusage); above ``MAX_RSS`` (4 GiB)
is a finding too (issue 49: its coverage phase once grew past 24 GB on this document).
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
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "fuzz-token-38"
PHASES = "examples,coverage,fuzzing,stateful"
MAX_RSS = 4 * 2**30  # bytes: schemathesis' peak resident memory, every phase


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
    apart: dict[str, int] = field(default_factory=dict)
    peak_rss: int = 0  # bytes, schemathesis' own (its rusage when it ended)

    @property
    def allowed(self) -> int:
        """The allowed 400 ``required`` refusals."""
        return self.apart.get("allowed", 0)


def _schemathesis() -> list[str]:
    found = Path(sys.executable).with_name("schemathesis")
    return [str(found)] if found.exists() else [sys.executable, "-m", "schemathesis.cli"]


_FAILURE = re.compile(r"^\s*\S+ (ST\d+) (.+): (\d+)\s*$")
_CASES = re.compile(r"^\s*(\d+) generated")
_BLOCK = re.compile(r"^- (ST\d+ .+)$", re.M)
_STATUS = re.compile(r"^\[(\d{3})\]", re.M)
_BODY = re.compile(r"^\s*`(\{.*\})`\s*$", re.M)
ALLOWED = "ST202 Schema-valid request rejected"
# The checks take schemathesis' default statuses and two answers HTTP fixes whatever the
# request's data: 410 Gone (FHIR http.html#read: a read of a deleted resource, which is
# 404's answer for what was deleted) and 412 Precondition Failed (RFC 9110 13.1: an If-Match
# of another version, or a conditional create whose If-None-Exist matches several resources,
# FHIR http.html#ccreate): answers to valid data, and refusals of invalid data.
POSITIVE_STATUSES = ("2xx", "3xx", "401", "403", "404", "409", "410", "412", "429", "5xx")
NEGATIVE_STATUSES = (
    *("400", "401", "403", "404", "405", "406", "409", "410", "412", "415", "422", "428"),
    *("429", "5xx"),
)
CONFIG = (
    f"[checks.positive_data_acceptance]\nexpected-statuses = {json.dumps(POSITIVE_STATUSES)}\n"
    f"[checks.negative_data_rejection]\nexpected-statuses = {json.dumps(NEGATIVE_STATUSES)}\n"
)
# The refusals a specification fixes, by (operation path end, status, issue code, text):
# counted apart, each named with its rule (docs/benchmarks.md, OpenAPI fuzzing).
SPEC_FIXED: dict[str, tuple[re.Pattern[str], int, str, re.Pattern[str]]] = {
    # operation-api.md 7.2: $validate-code of a ValueSet url that cannot be found is a 400
    # ``invalid`` "ValueSet <url> not found" (test_conformance_versions.py, e1)
    "operation-api 7.2": (
        re.compile(r"^(?:GET|POST) /ValueSet/\$validate-code$"),
        400,
        "invalid",
        re.compile(r"^ValueSet \S+ not found$"),
    ),
    # tx.fhir.org (the tx ecosystem's reference server) refuses a supplement that is not
    # loaded with 400 ``not-found`` (VALUESET_SUPPLEMENT_MISSING), on every operation
    # (test_supplements.py)
    "tx ecosystem: supplement missing": (
        re.compile(r"^(?:GET|POST) /(?:ValueSet|CodeSystem)/(?:\{id\}/)?\$"),
        400,
        "not-found",
        # (the url as sent: any text, white space and line breaks included)
        re.compile(r"^The supplement .+ (?:that .+ asks for is not loaded|supplements )", re.S),
    ),
}
# The history of a deleted resource stays readable (FHIR R4 http.html#history: a history
# lists the delete; http.html#vread: a version before the delete is read as it was), which
# schemathesis' use-after-free check takes for a leak: counted apart.
AFTER_DELETE = "ST301"
_HISTORY_READ = re.compile(
    r"^\s*curl -X GET [^\n]*/_history(?:/[^/?'\s]+)?(?:\?[^'\n]*)?'?\s*$", re.M
)


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


def _issue(body: str) -> dict[str, Any]:
    try:
        issue = json.loads(body)["issue"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return {}
    return issue if isinstance(issue, dict) else {}


def allowed(status: int, body: str) -> bool:
    """The one refusal of a schema-valid request that is no finding: a 400
    OperationOutcome with the issue code ``required`` (a rule between inputs that OpenAPI
    cannot state, which the inputs' descriptions state)."""
    return status == 400 and _issue(body).get("code") == "required"


def spec_fixed(operation: str, status: int, body: str) -> str | None:
    """The rule of ``SPEC_FIXED`` that fixes this refusal of ``operation`` (``GET
    /ValueSet/$validate-code``), or None."""
    issue = _issue(body)
    text = str((issue.get("details") or {}).get("text") or "")
    for rule, (where, fixed, code, words) in SPEC_FIXED.items():
        same = status == fixed and issue.get("code") == code
        if same and where.match(operation) and words.match(text):
            return rule
    return None


_OPERATION = re.compile(r"^_+ ([A-Z]+ \S+) _+$", re.M)
_HEADER = re.compile(r"-H '([A-Za-z-]+): ([^']*)'")


def header_patterns(document: dict[str, Any]) -> dict[tuple[str, str], re.Pattern[str]]:
    """The documented pattern of each header, by (``POST /CodeSystem``, header name)."""
    out: dict[tuple[str, str], re.Pattern[str]] = {}
    for path, methods in document.get("paths", {}).items():
        for method, spec in methods.items():
            for param in spec.get("parameters", ()) if isinstance(spec, dict) else ():
                pattern = param.get("schema", {}).get("pattern")
                if param.get("in") == "header" and pattern:
                    out[(f"{method.upper()} {path}", param["name"].lower())] = re.compile(pattern)
    return out


def outside_document(
    operation: str, block: str, patterns: dict[tuple[str, str], re.Pattern[str]]
) -> bool:
    """Whether the request sent a header value its documented pattern refuses (then the
    request was not schema-valid: schemathesis' header generator keeps to letters and
    digits, so a pattern that needs ``=`` cannot be met, and it sends ``0``)."""
    for name, value in _HEADER.findall(block):
        pattern = patterns.get((operation, name.lower()))
        if pattern is not None and not pattern.search(value):
            return True
    return False


def _classify(run: FuzzRun, name: str, operation: str, block: str, patterns: Any) -> str:
    """Where one failure of the report counts: ``finding``, or the reason it is apart."""
    status, body = _STATUS.search(block), _BODY.search(block)
    if name == ALLOWED and status is not None and body is not None:
        code, text = int(status.group(1)), body.group(1)
        if allowed(code, text):
            return "allowed"
        rule = spec_fixed(operation, code, text)
        if rule is not None:
            return f"spec-fixed: {rule}"
        if outside_document(operation, block, patterns):
            return "outside the document"
    if name.startswith(AFTER_DELETE) and _HISTORY_READ.search(block):
        return "history after delete"
    return "finding"


_CURL = re.compile(r"curl -X ([A-Z]+) .*?'?https?://[^/\s']+(/[^\s'?]*)[^\s']*'?\s*$", re.M)


class Operations:
    """The document's operations by request: ``GET /fhir/R4/ValueSet/x/$expand`` is ``GET
    /ValueSet/{id}/$expand`` (a stateful failure has no heading that names it)."""

    def __init__(self, document: dict[str, Any]) -> None:
        base = str(document.get("servers", [{}])[0].get("url", "")).rstrip("/")
        self.paths = [
            (re.compile(re.escape(base) + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(p))), p)
            for p in sorted(document.get("paths", {}), key=lambda p: p.count("{"))
        ]

    def of(self, block: str, heading: str) -> str:
        """The operation of a failure's block: from its last curl (a stateful failure
        lists the steps before it), else its heading."""
        found = next(reversed(list(_CURL.finditer(block))), None)  # (the failing step)
        if found is not None:
            for pattern, path in self.paths:
                if pattern.fullmatch(found.group(2)):
                    return f"{found.group(1)} {path}"
        return heading


def _read_failures(
    run: FuzzRun, patterns: dict[tuple[str, str], re.Pattern[str]], operations: Operations
) -> None:
    """Each failure of the report (its check, operation, status and body), those that are
    no finding counted apart by reason (``run.apart``)."""
    starts = [m.start() for m in _BLOCK.finditer(run.output)] + [len(run.output)]
    headers = [(m.start(), m.group(1)) for m in _OPERATION.finditer(run.output)]
    for start, end in itertools.pairwise(starts):
        block = run.output[start:end]
        check = _BLOCK.match(block)
        assert check is not None
        name = check.group(1).strip()
        heading = next((op for at, op in reversed(headers) if at < start), "")
        operation = operations.of(block, heading)
        where = _classify(run, name, operation, block, patterns)
        if where == "finding":
            run.findings[name] = run.findings.get(name, 0) + 1
        else:
            run.apart[where] = run.apart.get(where, 0) + 1


def _document(base_url: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base_url}/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    with urllib.request.urlopen(request, timeout=20) as answer:  # 127.0.0.1 only
        found: dict[str, Any] = json.loads(answer.read())
    return found


def run_measured(
    command: list[str], env: dict[str, str], cwd: str, timeout: float
) -> tuple[int, str, int]:
    """Run ``command``: its exit code, output (stdout and stderr as written) and peak
    resident memory in bytes (the rusage of that one process, from ``os.wait4``); killed
    after ``timeout`` seconds."""
    with tempfile.TemporaryFile("w+") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd
        )
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return process.returncode, out.read(), usage.ru_maxrss * 1024  # (KiB on Linux)


def fuzz(
    base_url: str, *, examples: int, max_time: float, seed: int = 38, phases: str = PHASES
) -> FuzzRun:
    """Run schemathesis (every check, the ``phases``) against ``base_url`` (the FHIR base of
    a server on 127.0.0.1); ``max_time`` bounds the whole run."""
    document = _document(base_url)
    patterns = header_patterns(document)
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "schemathesis.toml"
        config.write_text(CONFIG)
        command = [
            *_schemathesis(),
            "--config-file",
            str(config),
            "run",
            f"{base_url}/openapi.json",
            "--checks",
            "all",
            "--phases",
            phases,
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
        code, output, peak = run_measured(command, env, folder, max_time + 120)
        run = FuzzRun(code, time.monotonic() - started, output, peak_rss=peak)
    _read_summary(run)
    _read_failures(run, patterns, Operations(document))
    return run


def main() -> int:
    """The longer run of the benchmarks: serve, fuzz, print the failures per check."""
    from workbench import Workbench

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=50, help="test cases per operation")
    parser.add_argument("--max-time", type=float, default=600.0, help="seconds, at most")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--log", help="a file for schemathesis' whole output")
    parser.add_argument("--phases", default=PHASES, help="schemathesis' phases, comma-separated")
    args = parser.parse_args()
    wb = Workbench()
    wb.load(ROOT / "valuesets", progress=False)
    with wb.serve(port=0, token=TOKEN) as handle:
        run = fuzz(
            handle.url,
            examples=args.examples,
            max_time=args.max_time,
            seed=args.seed,
            phases=args.phases,
        )
    if args.log:
        Path(args.log).write_text(run.output)
    print(f"schemathesis: exit {run.exit_code}, {run.seconds:.0f} s, {run.cases} test cases")
    print(f"peak resident memory: {run.peak_rss / 2**20:.0f} MiB (at most {MAX_RSS // 2**20})")
    for check, count in sorted(run.failures.items()):
        print(f"  {check}: {count}")
    print(f"unique failures: {sum(run.failures.values())}")
    print("apart: " + (", ".join(f"{n} {why}" for why, n in sorted(run.apart.items())) or "none"))
    print("findings:")
    for check, count in sorted(run.findings.items()):
        print(f"  {check}: {count}")
    if run.exit_code != 0 and not run.failures:
        print(run.output[-5000:])
    failed = run.findings or (run.exit_code != 0 and not run.failures)
    return 1 if failed or run.peak_rss > MAX_RSS else 0


if __name__ == "__main__":
    sys.exit(main())
