"""Clients nobody here wrote: fhirpy against the embedded server, and the server.py CLI run as
a subprocess (127.0.0.1 only)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from fhirpy import SyncFHIRClient
from fhirpy.base.exceptions import AuthorizationError, OperationOutcome, ResourceNotFound
from http_support import (
    DEMO_ALL,
    DEMO_CS,
    GENDER_CS,
    GENDER_VS,
    HOST,
    TOKEN,
    client,
    free_port,
    without_volatile,
)

from workbench import Workbench
from workbench.server.embedded import ServerHandle

ROOT = Path(__file__).resolve().parent.parent
START_DEADLINE = 60.0


@pytest.fixture(scope="module")
def fhirpy_wb() -> Workbench:
    fresh = Workbench()
    fresh.load(ROOT / "valuesets", progress=False)
    return fresh


@pytest.fixture(scope="module")
def fhirpy_server(fhirpy_wb: Workbench) -> Iterator[ServerHandle]:
    with fhirpy_wb.serve(port=0, token=TOKEN) as handle:
        yield handle


@pytest.fixture
def fhir(fhirpy_server: ServerHandle) -> SyncFHIRClient:
    return SyncFHIRClient(fhirpy_server.url, authorization=f"Bearer {TOKEN}")


def plain(value: Any) -> Any:
    """fhirpy's AttrDicts (and lists of them) as plain dicts and lists."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# --- fhirpy ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize(
    ("url", "system", "code"),
    [
        pytest.param(GENDER_VS, GENDER_CS, "female", id="valid"),
        pytest.param(GENDER_VS, GENDER_CS, "nope", id="invalid"),
        pytest.param(DEMO_ALL, DEMO_CS, "in-person", id="abstract"),
    ],
)
def test_fhirpy_validate_code(
    fhir: SyncFHIRClient, fhirpy_wb: Workbench, method: str, url: str, system: str, code: str
) -> None:
    if method == "get":
        answer = fhir.execute(
            "ValueSet/$validate-code",
            method="get",
            params={"url": url, "system": system, "code": code},
        )
    else:
        body = {
            "resourceType": "Parameters",
            "parameter": [
                {"name": "url", "valueUri": url},
                {"name": "coding", "valueCoding": {"system": system, "code": code}},
            ],
        }
        answer = fhir.execute("ValueSet/$validate-code", method="post", data=body)
    if method == "get":
        expected = fhirpy_wb.validate_code(url, code=code, system=system)
    else:  # the issues of a Coding are located in it (Coding.code)
        expected = fhirpy_wb.validate_code(url, coding={"system": system, "code": code})
    assert plain(answer) == expected.to_parameters()


def test_fhirpy_validate_code_on_instance(fhir: SyncFHIRClient) -> None:
    reference = fhir.reference("ValueSet", "administrative-gender")
    answer = reference.execute(
        "$validate-code", method="get", params={"system": GENDER_CS, "code": "male"}
    )
    assert plain(answer["parameter"]) == [
        {"name": "result", "valueBoolean": True},
        {"name": "display", "valueString": "Male"},
        {"name": "code", "valueCode": "male"},
        {"name": "system", "valueUri": GENDER_CS},
        {"name": "version", "valueString": "4.0.1"},
    ]


def test_fhirpy_expand(fhir: SyncFHIRClient, fhirpy_wb: Workbench) -> None:
    got = fhir.execute("ValueSet/$expand", method="get", params={"url": DEMO_ALL, "count": 4})
    assert got["resourceType"] == "ValueSet"
    expected = fhirpy_wb.expand(DEMO_ALL, count=4).to_valueset()
    assert without_volatile(plain(got)) == without_volatile(expected)
    posted = fhir.execute(
        "ValueSet/$expand",
        data={
            "resourceType": "Parameters",
            "parameter": [
                {"name": "url", "valueUri": DEMO_ALL},
                {"name": "filter", "valueString": "phone"},
            ],
        },
    )
    assert [c["code"] for c in posted["expansion"]["contains"]] == ["phone", "phone-triage"]


def test_fhirpy_lookup(fhir: SyncFHIRClient, fhirpy_wb: Workbench) -> None:
    got = fhir.execute(
        "CodeSystem/$lookup",
        method="get",
        params={"system": DEMO_CS, "code": "office-new", "property": "duration-minutes"},
    )
    expected = fhirpy_wb.lookup(DEMO_CS, "office-new", properties=["duration-minutes"])
    assert plain(got) == expected.to_parameters()
    posted = fhir.execute(
        "CodeSystem/$lookup",
        data={
            "resourceType": "Parameters",
            "parameter": [
                {"name": "coding", "valueCoding": {"system": GENDER_CS, "code": "other"}}
            ],
        },
    )
    assert {"name": "display", "valueString": "Other"} in plain(posted["parameter"])


def test_fhirpy_read_change_save_read(fhir: SyncFHIRClient, fhirpy_wb: Workbench) -> None:
    valueset = fhir.reference("ValueSet", "workbench-demo-bookable").to_resource()
    assert valueset["url"] == "http://example.org/fhir/ValueSet/workbench-demo-bookable"
    version = int(valueset["meta"]["versionId"])
    valueset["title"] = "Bookable visits (edited with fhirpy)"
    valueset.save()
    assert valueset["meta"]["versionId"] == str(version + 1)
    again = fhir.reference("ValueSet", "workbench-demo-bookable").to_resource()
    assert again["title"] == "Bookable visits (edited with fhirpy)"
    assert again["meta"]["versionId"] == str(version + 1)
    assert (
        plain(again.serialize())["compose"]
        == fhirpy_wb.registry.read("ValueSet", "workbench-demo-bookable")["compose"]
    )
    assert fhirpy_wb.registry.read("ValueSet", "workbench-demo-bookable")["title"] == (
        "Bookable visits (edited with fhirpy)"
    )
    valueset.refresh()
    assert valueset["title"] == "Bookable visits (edited with fhirpy)"


def test_fhirpy_search(fhir: SyncFHIRClient) -> None:
    found = fhir.resources("ValueSet").search(name="WorkbenchDemo").fetch_all()
    assert {r["id"] for r in found} == {
        "workbench-demo-all",
        "workbench-demo-bookable",
        "workbench-demo-in-person",
        "workbench-demo-remote-live",
    }
    first = fhir.resources("CodeSystem").search(url=DEMO_CS).first()
    assert first is not None
    assert first["id"] == "workbench-demo"


def test_fhirpy_errors(fhirpy_server: ServerHandle, fhir: SyncFHIRClient) -> None:
    with pytest.raises(OperationOutcome) as unknown:
        fhir.execute(
            "ValueSet/$validate-code",
            method="get",
            params={"url": "http://example.org/fhir/ValueSet/none", "code": "x", "system": "y"},
        )
    issue = unknown.value.resource["issue"][0]
    assert (issue["code"], issue["details"]["text"]) == (
        "invalid",
        "ValueSet http://example.org/fhir/ValueSet/none not found",
    )
    with pytest.raises(ResourceNotFound):
        fhir.reference("ValueSet", "no-such-id").to_resource()
    stranger = SyncFHIRClient(fhirpy_server.url, authorization="Bearer wrong")
    with pytest.raises(AuthorizationError):
        stranger.reference("ValueSet", "workbench-demo-all").to_resource()


# --- the server.py CLI ----------------------------------------------------------------


def test_cli_help() -> None:
    done = subprocess.run(
        [sys.executable, "server.py", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for option in ("--host", "--port", "--base", "--data", "--token", "--load", "--package"):
        assert re.search(rf"(^|\s){option}\b", done.stdout), option


def _collect(stream: IO[str], into: list[str]) -> None:
    for line in stream:
        into.append(line)


def test_cli_serves(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://{HOST}:{port}/fhir/R4"
    out: list[str] = []
    err: list[str] = []
    command = [
        sys.executable,
        "server.py",
        "--host",
        HOST,
        "--port",
        str(port),
        "--token",
        "abc",
        "--data",
        str(tmp_path / "data"),
    ]
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        readers = [
            threading.Thread(target=_collect, args=(proc.stdout, out), daemon=True),
            threading.Thread(target=_collect, args=(proc.stderr, err), daemon=True),
        ]
        for reader in readers:
            reader.start()
        try:
            deadline = time.monotonic() + START_DEADLINE
            with client(base, token=None) as anonymous:
                while True:
                    assert proc.poll() is None, "server.py exited early:\n" + "".join(err)
                    assert time.monotonic() < deadline, "server.py did not start:\n" + "".join(err)
                    try:
                        if anonymous.get("/metadata").status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    time.sleep(0.1)
            printed = "".join(out)
            assert f"FHIR R4 terminology server: {base}" in printed
            assert "Access token: abc" in printed
            curl = next(line.strip() for line in out if line.strip().startswith("curl "))
            match = re.fullmatch(r"curl -H '(Authorization: Bearer abc)' '([^']+)'", curl)
            assert match, curl
            # Do what the printed curl example does, with httpx.
            with client(base, token=None) as anonymous:
                name, value = match.group(1).split(": ", 1)
                answer = anonymous.get(match.group(2), headers={name: value})
                assert answer.status_code == 200, answer.text
                assert answer.json()["parameter"][0] == {"name": "result", "valueBoolean": True}
                assert anonymous.get("/ValueSet").status_code == 401
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)
        for reader in readers:
            reader.join(timeout=5)
    assert proc.returncode in (0, -15), "".join(err)
