"""The workbench command's import, install and serve, each run as a real subprocess on real
content: the ICD-10-CM release that ``simple-icd-10-cm`` ships, an HL7 package in the
package cache (installed by the session's fixture, from the registry npm names), and the
server on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import icd10cm_xml
from http_support import GENDER_CS, GENDER_VS, HOST, TOKEN, client, free_port, values
from test_cli import run
from test_server_process import CONTENT, STOP_SECONDS, environment, output_of, wait_ready

ICD10CM = "http://hl7.org/fhir/sid/icd-10-cm"


def test_import_caches_a_release_that_later_commands_reopen(tmp_path: Path) -> None:
    """``workbench import`` imports once; the next import and a lookup reopen the cache."""
    xml, cache = icd10cm_xml(), tmp_path / "releases"
    first = run("import", xml, "--release-cache", cache, "--no-default-content")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"Loaded icd10cm {ICD10CM}|"), first.stdout
    assert " concepts, imported in " in first.stdout and str(cache) in first.stdout
    again = run("import", xml, "--release-cache", cache, "--no-default-content")
    assert again.returncode == 0 and " concepts, reopened in " in again.stdout, again.stdout
    found = run(
        "lookup", ICD10CM, "A00.0", "--release", xml, "--release-cache", cache,
        "--no-default-content",
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[0] == (
        "A00.0\tCholera due to Vibrio cholerae 01, biovar cholerae\tICD10CM"
    )
    assert "  billable: True" in found.stdout.splitlines()


def test_install_loads_a_package_from_the_cache(package_dirs: dict[str, Path]) -> None:
    """``workbench install NAME#VERSION`` finds the package in the cache and loads it."""
    folder = package_dirs["hl7.fhir.r4.expansions"]
    done = run("install", "hl7.fhir.r4.expansions#4.0.1", "--no-default-content")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(f"Loaded {folder}: "), done.stdout
    assert " ValueSets, " in done.stdout


def test_install_of_a_package_it_cannot_fetch_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """A package not in the cache, from a registry that does not answer: exit 2, one line
    naming the package, nothing left in the cache."""
    env = {
        **os.environ,
        "WORKBENCH_PACKAGE_CACHE": str(tmp_path / "cache"),
        "WORKBENCH_PACKAGE_REGISTRY": f"http://{HOST}:{free_port()}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "install", "example.not.there#1.0.0"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: ") and "example.not.there" in line, line
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "cache").glob("example.not.there*"))


def test_serve_answers_and_stops_on_sigterm(tmp_path: Path) -> None:
    """``workbench serve`` is server.py: it serves what it loaded, with its token, and a
    SIGTERM stops it with exit code 0."""
    port = free_port()
    command = [sys.executable, "-m", "workbench.cli", "serve", "--port", str(port)]
    command += ["--token", TOKEN, *CONTENT, "--data", str(tmp_path / "data")]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environment()
    )
    base = f"http://{HOST}:{port}/fhir/R4"
    try:
        wait_ready(process, base)
        with client(base) as http:
            answer = http.get(
                "/ValueSet/$validate-code",
                params={"url": GENDER_VS, "system": GENDER_CS, "code": "male"},
            )
        assert answer.status_code == 200, answer.text
        assert values(answer.json(), "result") == [True]
        process.send_signal(signal.SIGTERM)
        assert process.wait(STOP_SECONDS) == 0
    finally:
        output = output_of(process)
    assert "Stopped by SIGTERM" in output and f"{base}/docs" in output
    assert "Traceback" not in output


@pytest.mark.parametrize("command", [["serve", "--port", "not-a-port"], ["serve", "--bogus"]])
def test_serve_usage_errors_exit_2(command: list[str]) -> None:
    """A bad option of ``workbench serve`` is a usage error: exit 2, no trace."""
    done = run(*command)
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stderr and "usage: workbench serve" in done.stderr


def test_the_progress_bar_is_on_a_terminal_stderr_and_never_in_the_summary(
    tmp_path: Path,
) -> None:
    """stderr a terminal, stdout piped (``workbench validate ... > summary.txt``): the bar is
    drawn on stderr, and stdout holds the summary alone."""
    import pty
    import select

    path = tmp_path / "d.csv"
    path.write_text("gender\nmale\nfemale\nbogus\n")
    master, slave = pty.openpty()
    command = [sys.executable, "-m", "workbench.cli", "validate", str(path), "--column"]
    command += ["gender", "--valueset", GENDER_VS, "--fail-under", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    drawn = b""
    try:
        for _ in range(600):  # at most 60 s
            if not select.select([master], [], [], 0.1)[0]:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        summary = process.communicate(timeout=60)[0].decode()
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0
    assert b"validating" in drawn and b"3/?" in drawn, drawn[:300]  # (a CSV: no total)
    assert summary.startswith("rows: 3\nvalid: 2 (66.67%)"), summary[:200]


def test_a_reader_that_leaves_ends_the_command_quietly(tmp_path: Path) -> None:
    """``workbench expand ... | head -1``: when stdout's reader leaves, the command stops
    with 141 (128 + SIGPIPE, as cat or grep) and writes nothing on stderr."""
    xml, cache = icd10cm_xml(), tmp_path / "releases"
    command = [sys.executable, "-m", "workbench.cli", "expand", f"{ICD10CM}?fhir_vs"]
    command += ["--format", "csv", "--release", str(xml), "--release-cache", str(cache)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().startswith(b"code,display,system,version")
        process.stdout.close()  # far more than a pipe holds is still to come (98,000 codes)
        assert process.wait(120) == 141
        assert process.stderr.read() == b""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_a_reader_gone_before_the_summary_ends_validate_quietly(tmp_path: Path) -> None:
    """The summary of ``workbench validate`` written to a pipe whose reader already left:
    141, nothing on stderr (the exit code validate chose would otherwise be lost in a
    BrokenPipeError at the interpreter's exit, were it not written and flushed inside the
    command)."""
    path = tmp_path / "d.csv"
    path.write_text("gender\nmale\nbogus\n")
    command = [sys.executable, "-m", "workbench.cli", "validate", str(path), "--column"]
    command += ["gender", "--valueset", GENDER_VS]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # gone before anything is written
    try:
        assert process.wait(120) == 141
        assert process.stderr.read() == b""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        process.stderr.close()
