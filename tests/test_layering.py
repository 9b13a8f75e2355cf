"""Imports point inward: the engine pulls in neither the server nor the widgets."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        pytest.param("workbench", ("fastapi", "starlette", "uvicorn", "ipywidgets"), id="package"),
        pytest.param("workbench.terminology.engine", ("fastapi", "ipywidgets"), id="engine"),
        pytest.param("workbench.bulk", ("fastapi", "ipywidgets", "dask"), id="bulk"),
        pytest.param("workbench.operations", ("fastapi", "uvicorn", "ipywidgets"), id="operations"),
    ],
)
def test_importing_leaves_adapters_out(module: str, forbidden: tuple[str, ...]) -> None:
    code = f"import sys, {module}\nprint(','.join(m for m in {forbidden!r} if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()
    assert loaded == ""
