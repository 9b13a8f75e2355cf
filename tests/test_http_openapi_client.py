"""A client generated from the served OpenAPI document builds and works (issue 49, point 9):
``openapi-python-client`` reads the document from a file (nothing fetched), with no warning
about a schema it could not read, writes a package that compiles and imports, and its
``$validate-code`` GET answers from the live server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from http_support import TOKEN, client

from workbench import Workbench
from workbench.server.embedded import ServerHandle

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "workbench_fhir_client"
# The generator's post hooks (ruff, from PATH) are left out: the package is checked by
# compiling and importing it here.
CONFIG = f"package_name_override: {PACKAGE}\npost_hooks: []\n"
GENDER_VS = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
CALL = f"""
import json, sys
from {PACKAGE} import AuthenticatedClient
from {PACKAGE}.api.value_set import validate_code_value_set_type_get as operation
with AuthenticatedClient(base_url=sys.argv[1], token=sys.argv[2]) as api:
    answer = operation.sync_detailed(
        client=api, url_query={GENDER_VS!r}, system={GENDER_CS!r}, code="female"
    )
print(json.dumps([answer.status_code, type(answer.parsed).__name__, answer.parsed.to_dict()]))
"""


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    wb = Workbench()
    wb.load(ROOT / "valuesets", progress=False)
    with wb.serve(port=0, token=TOKEN) as handle:
        yield handle


def _generator() -> list[str]:
    found = Path(sys.executable).with_name("openapi-python-client")
    return [str(found)] if found.exists() else [sys.executable, "-m", "openapi_python_client"]


@pytest.fixture(scope="module")
def generated(server: ServerHandle, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The generator's run on the served document: its output and the package's folder."""
    folder = tmp_path_factory.mktemp("client")
    with client(server.url, token=None) as anonymous:
        document = anonymous.get("/openapi.json")
    assert document.status_code == 200, document.text
    (folder / "openapi.json").write_bytes(document.content)
    (folder / "config.yaml").write_text(CONFIG)
    command = [
        *_generator(),
        "generate",
        "--path",
        str(folder / "openapi.json"),
        "--config",
        str(folder / "config.yaml"),
        "--meta",
        "none",
        "--output-path",
        str(folder / PACKAGE),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=180, cwd=folder, env=_env(folder)
    )
    return {"done": done, "folder": folder}


def _env(folder: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(folder), "NO_COLOR": "1"}


def test_the_client_is_generated_without_a_warning(generated: dict[str, Any]) -> None:
    """The generator reads every schema of the document: no warning, no error."""
    done = generated["done"]
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Warning" not in output and "Error" not in output, output
    assert (generated["folder"] / PACKAGE / "api" / "value_set").is_dir()


def test_the_client_compiles_imports_and_calls_the_server(
    generated: dict[str, Any], server: ServerHandle
) -> None:
    """The package compiles and imports; its $validate-code GET answers a Parameters with
    ``result`` true from the live server."""
    folder = generated["folder"]
    assert generated["done"].returncode == 0
    compiled = subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(folder / PACKAGE)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    called = subprocess.run(
        [sys.executable, "-c", CALL, server.url, TOKEN],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
        env=_env(folder),
    )
    assert called.returncode == 0, called.stderr
    status, kind, body = json.loads(called.stdout)
    assert (status, kind) == (200, "Parameters"), body
    result = [p for p in body["parameter"] if p["name"] == "result"]
    assert result == [{"name": "result", "valueBoolean": True}], body
