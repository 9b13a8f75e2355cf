"""Set-up: ``make lab`` passes ``--allow-root`` only as root; system packages are installed
without recommends; every notebook runs from ``pip install 'workbench[notebook]'`` (no
``sys.path`` hacks, no module of the repository's other folders, no test-only package)."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _fake_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    jupyter = venv / "bin" / "jupyter"
    jupyter.write_text('#!/bin/sh\necho "jupyter $@"\n')
    jupyter.chmod(0o755)
    (venv / "bin" / "python").touch()
    (venv / ".installed-test").touch()
    os.utime(venv / ".installed-test", (4e9, 4e9))  # newer than pyproject.toml
    return venv


@pytest.mark.parametrize("as_root", [True, False], ids=["root", "user"])
def test_make_lab_allows_root_only_as_root(as_root: bool) -> None:
    if os.geteuid() != 0 and as_root:
        pytest.fail("this check runs as root (the container's user); run it there")
    with tempfile.TemporaryDirectory() as folder:  # in /tmp: readable by another user
        Path(folder).chmod(0o755)
        _check_lab(_fake_venv(Path(folder)), as_root)


def _check_lab(venv: Path, as_root: bool) -> None:
    command = ["make", "-s", "-C", str(ROOT), "lab", f"VENV={venv}"]
    if not as_root:
        setpriv = shutil.which("setpriv")
        assert setpriv, "util-linux's setpriv runs make as another user"
        command = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["jupyter", "lab", "notebooks/", *(["--allow-root"] * as_root)]


def test_system_packages_come_without_recommends() -> None:
    text = (ROOT / "Makefile").read_text()
    installs = re.findall(r"apt-get install[^;\n']*", text)
    assert installs, "the Makefile installs Debian packages"
    assert all("--no-install-recommends" in line for line in installs), installs


def _notebook_extra() -> set[str]:
    """The distributions ``pip install 'workbench[notebook]'`` brings (transitively)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [Requirement(r) for r in project["dependencies"]]
    todo += [Requirement(r) for r in project["optional-dependencies"]["notebook"]]
    found: set[str] = set()
    while todo:
        req = todo.pop()
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        if name in found:
            continue
        found.add(name)
        try:
            requires = importlib.metadata.requires(req.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in requires:
            dep = Requirement(text)
            extras = req.extras or {""}
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in extras):
                todo.append(dep)
    return found


def _imports(notebook: Path) -> tuple[set[str], list[str]]:
    modules: set[str] = set()
    sources = []
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        sources.append(source)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module.split(".")[0])
    return modules, sources


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_notebooks_need_only_the_notebook_extra(notebook: Path) -> None:
    modules, sources = _imports(notebook)
    assert not any("sys.path" in s or "benchmarks" in s for s in sources)
    provided = _notebook_extra()
    by_module = importlib.metadata.packages_distributions()
    for module in sorted(modules - set(sys.stdlib_module_names) - {"workbench"}):
        dists = {re.sub(r"[-_.]+", "-", d).lower() for d in by_module.get(module, [])}
        assert dists & provided, f"{notebook.name} imports {module}, not in workbench[notebook]"


def test_readme_first_screen_says_what_make_test_fetches() -> None:
    text = (ROOT / "README.md").read_text()
    first = re.search(r"```sh\n(.*?)```\n\n(.*?)\n\n", text, re.S)
    assert first is not None
    commands = [line.split("#")[0].strip() for line in first[1].splitlines()]
    assert commands[:2] == ["make serve", "make test"]
    said = " ".join(first[2].split())
    for needed in ("Chromium", "--no-install-recommends", "~/.fhir/packages", "MB", ".venv"):
        assert needed in said, needed
