"""The house rules on size: every module of the package at most 600 lines, every function
(of the package and of server.py) at most 80, so that each still owns one thing."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [*sorted((ROOT / "workbench").rglob("*.py")), ROOT / "server.py"]
MODULE_LINES = 600
FUNCTION_LINES = 80


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", SOURCES, ids=_name)
def test_module_and_function_sizes(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= MODULE_LINES, f"{_name(path)} has {lines} lines (at most {MODULE_LINES})"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines, from line {node.lineno})"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > FUNCTION_LINES
    ]
    assert not long, f"{_name(path)}: functions over {FUNCTION_LINES} lines: {long}"


def test_the_rule_sees_the_package() -> None:
    assert len(SOURCES) > 100  # the glob found the package, not an empty folder
