"""``server.py`` as a real process: SIGTERM and SIGINT answer the requests in flight and exit
0, also under ``make serve`` (so make exits 0); ``--root-path`` puts the proxy's prefix into
the links. Every server listens on 127.0.0.1 only; every wait is bounded."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from http_support import GENDER_CS, GENDER_VS, HOST, TOKEN, client, free_port, params

ROOT = Path(__file__).resolve().parent.parent
R4 = ROOT / "valuesets" / "r4-core"
CONTENT = [
    "--no-default-content",
    "--load",
    str(R4 / "ValueSet-administrative-gender.json"),
    "--load",
    str(R4 / "CodeSystem-administrative-gender.json"),
]
START_SECONDS = 60.0
STOP_SECONDS = 30.0
BODY = json.dumps(
    params(
        ("url", {"valueUri": GENDER_VS}),
        ("system", {"valueUri": GENDER_CS}),
        ("code", {"valueCode": "female"}),
    )
).encode()


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.pop("WORKBENCH_TOKEN", None)
    return env


def output_of(process: subprocess.Popen[bytes]) -> str:
    """What a server process wrote (stdout and stderr together), once it has ended: killed
    first if it is still running."""
    if process.poll() is None:
        process.kill()
        process.wait(STOP_SECONDS)
    return process.communicate()[0].decode(errors="replace")


def wait_ready(process: subprocess.Popen[bytes], url: str) -> None:
    """Poll ``GET {url}/metadata`` until it answers (the process must stay alive)."""
    deadline = time.monotonic() + START_SECONDS
    with client(url, token=None) as http:
        while True:
            assert process.poll() is None, process.communicate()[0].decode(errors="replace")
            assert time.monotonic() < deadline, "the server did not start"
            try:
                if http.get("/metadata").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)


def start_in_flight(port: int, path: str) -> socket.socket:
    """Send a POST whose body is only half sent: the request stays in flight until
    ``finish`` sends the rest."""
    sock = socket.create_connection((HOST, port), timeout=STOP_SECONDS)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/fhir+json\r\nContent-Length: {len(BODY)}\r\n\r\n"
    )
    sock.sendall(head.encode() + BODY[:20])
    # another request answered means the server has read the first one's headers
    time.sleep(0.2)
    with client(f"http://{HOST}:{port}", token=None) as http:
        assert http.get("/fhir/R4/metadata").status_code == 200
    return sock


def finish(sock: socket.socket) -> tuple[int, Any]:
    """Send the rest of the body; read the response until the server closes."""
    sock.sendall(BODY[20:])
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "data"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_answers_requests_in_flight_and_exits_0(
    sig: signal.Signals, data_dir: Path
) -> None:
    port = free_port()
    command = [sys.executable, str(ROOT / "server.py"), "--port", str(port), "--token", TOKEN]
    command += [*CONTENT, "--data", str(data_dir), "--root-path", "/proxy"]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environment()
    )
    try:
        wait_ready(process, f"http://{HOST}:{port}/fhir/R4")
        with client(f"http://{HOST}:{port}/fhir/R4") as http:
            caps = http.get("/metadata").json()
        # --root-path: the base as the proxy's clients see it
        assert caps["implementation"]["url"] == f"http://{HOST}:{port}/proxy/fhir/R4"
        sock = start_in_flight(port, "/fhir/R4/ValueSet/$validate-code")
        process.send_signal(sig)
        time.sleep(0.5)
        assert process.poll() is None, "the server stopped with a request in flight"
        status, body = finish(sock)
        assert status == 200, body
        assert body["parameter"][0] == {"name": "result", "valueBoolean": True}
        assert process.wait(STOP_SECONDS) == 0
    finally:
        output = output_of(process)
    assert f"Stopped by {sig.name}; requests in flight were answered." in output
    assert f"http://{HOST}:{port}/fhir/R4/docs" in output
    assert "Traceback" not in output


def test_make_serve_exits_0_when_the_server_is_terminated(data_dir: Path) -> None:
    venv = Path(sys.prefix)
    port = free_port()
    args = " ".join([*CONTENT, "--token", TOKEN, "--data", str(data_dir)])
    command = ["make", "--no-print-directory", "-C", str(ROOT), "serve"]
    # -o: never (re)install into the running interpreter's environment from here
    command += ["-o", f"{venv}/.installed-base", f"VENV={venv}", f"PORT={port}", f"ARGS={args}"]
    make = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environment()
    )
    try:
        wait_ready(make, f"http://{HOST}:{port}/fhir/R4")
        [server] = [
            p
            for p in psutil.Process(make.pid).children(recursive=True)
            if "server.py" in " ".join(p.cmdline())
        ]
        sock = start_in_flight(port, "/fhir/R4/ValueSet/$validate-code")
        server.send_signal(signal.SIGTERM)
        status, _ = finish(sock)
        assert status == 200
        assert make.wait(STOP_SECONDS) == 0
    finally:
        if make.poll() is None:
            for child in psutil.Process(make.pid).children(recursive=True):
                child.kill()
            make.kill()
            make.wait(STOP_SECONDS)
    output = make.communicate()[0].decode(errors="replace")
    assert "Stopped by SIGTERM" in output
    assert "Error" not in output
