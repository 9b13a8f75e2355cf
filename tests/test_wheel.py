"""The package as a user installs it: the wheel, built from a copy of the sources with this
environment's setuptools (nothing downloaded), installed into a fresh virtual environment
outside the checkout, works from another folder: ``workbench validate`` and ``workbench
serve`` with the default content, and ``Workbench()`` loading it. The fresh environment
sees this one's libraries through a ``.pth`` file that names its site-packages as a plain
path (so its own ``.pth`` files, among them the editable install's finder, are not run), and
``import workbench`` there is the installed wheel, never the checkout."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from http_support import GENDER_CS, GENDER_VS, HOST, TOKEN, client, free_port, values
from packaging.version import Version
from test_server_process import STOP_SECONDS, output_of, wait_ready

ROOT = Path(__file__).resolve().parent.parent
#: What building the wheel reads: the sdist's files.
SOURCES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "workbench", "valuesets")
#: The setuptools the build needs (pyproject.toml's build-system; the test extra brings it).
SETUPTOOLS = Version("77")
TIMEOUT = 120


def _clean_environment() -> dict[str, str]:
    """This environment without what would put the checkout on ``sys.path``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))}
    env.pop("WORKBENCH_TOKEN", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in command],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=cwd,
        env=env,
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build_wheel(tmp: Path) -> Path:
    """The wheel of a copy of the sources (setuptools writes its build folders beside them,
    so the checkout is left as it is)."""
    found = Version(importlib.metadata.version("setuptools"))
    assert found >= SETUPTOOLS, (
        f"setuptools {found} cannot build the wheel (pyproject.toml needs {SETUPTOOLS}+); "
        "the test extra brings it: make test, or pip install -e '.[test]'"
    )
    source = tmp / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = tmp / "dist"
    pip = [sys.executable, "-m", "pip"]
    # the build runs in this environment (its setuptools): PYTHONPATH kept, nothing fetched
    _run(*pip, "wheel", "--no-deps", "--no-index", "--no-build-isolation", "-w", dist, source,
         cwd=tmp)  # fmt: skip
    [wheel] = dist.glob("workbench-*.whl")
    return wheel


def fresh_venv(tmp: Path, wheel: Path) -> Path:
    """A new virtual environment with the wheel installed (no dependencies: this
    environment's are made visible to it, without running this environment's .pth files)."""
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp)
    python = venv / "bin" / "python"
    env = _clean_environment()
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
         wheel, cwd=tmp, env=env)  # fmt: skip
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(_run(python, "-c", where, cwd=tmp, env=env).strip())
    ours = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    (site / "zz_workbench_test_libraries.pth").write_text("".join(f"{p}\n" for p in ours))
    return venv


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fresh environment with the wheel installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    return fresh_venv(tmp, build_wheel(tmp))


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A working folder outside the checkout."""
    assert not tmp_path.resolve().is_relative_to(ROOT)
    return tmp_path


PROBE = """
import workbench
from workbench import Workbench
from workbench.content import default_content
print(workbench.__file__)
print(default_content())
wb = Workbench()
print(len(wb.registry.all("ValueSet")))
summary = wb.load(default_content(), progress=False)
print(len(summary.valuesets), len(summary.codesystems))
print(wb.validate_code(url={vs!r}, system={cs!r}, code="female").result)
"""


def test_the_wheel_ships_the_default_content_and_imports_from_the_venv(
    installed: Path, elsewhere: Path
) -> None:
    code = PROBE.format(vs=GENDER_VS, cs=GENDER_CS)
    out = _run(installed / "bin" / "python", "-c", code, cwd=elsewhere, env=_clean_environment())
    module, content, empty, counts, valid = out.splitlines()
    site = installed.resolve()
    assert Path(module).resolve().is_relative_to(site), module
    assert Path(content).resolve().is_relative_to(site) and content.endswith("workbench/valuesets")
    assert empty == "0"  # Workbench() itself starts empty
    files = list((ROOT / "valuesets").rglob("*.json"))
    assert sum(map(int, counts.split())) == len(files)
    assert (Path(content) / "README.md").read_bytes() == (ROOT / "valuesets/README.md").read_bytes()
    assert valid == "True"


def test_workbench_validate_from_another_folder(installed: Path, elsewhere: Path) -> None:
    (elsewhere / "patients.csv").write_text("id,gender\n1,male\n2,female\n3,bogus\n")
    done = subprocess.run(
        [installed / "bin" / "workbench", "validate", "patients.csv", "--column", "gender",
         "--valueset", GENDER_VS, "--fail-under", "60"],
        capture_output=True, text=True, timeout=TIMEOUT, cwd=elsewhere, env=_clean_environment(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "rows: 3" in done.stdout and "valid: 2 (66.67%)" in done.stdout, done.stdout
    assert "'bogus' unknown-code" in done.stdout
    assert done.stderr == ""


def test_workbench_serve_from_another_folder(installed: Path, elsewhere: Path) -> None:
    port = free_port()
    command = [installed / "bin" / "workbench", "serve", "--port", str(port), "--token", TOKEN]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=elsewhere,
        env=_clean_environment(),
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
    # the default content it loaded is the installed package's
    assert f"Loaded {installed.resolve()}/" in output or f"Loaded {installed}/" in output, output
    assert "workbench/valuesets: " in output and "Traceback" not in output
