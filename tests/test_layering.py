"""Imports point inward: the engine pulls in neither the server nor the widgets."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        pytest.param(
            "workbench", ("fastapi", "starlette", "uvicorn", "ipywidgets", "pyspark"), id="package"
        ),
        pytest.param(
            "workbench.terminology.engine", ("fastapi", "ipywidgets", "pyspark"), id="engine"
        ),
        pytest.param("workbench.bulk", ("fastapi", "ipywidgets", "dask", "pyspark"), id="bulk"),
        pytest.param("workbench.spark", ("pyspark",), id="spark-helpers"),
        pytest.param("workbench.operations", ("fastapi", "uvicorn", "ipywidgets"), id="operations"),
    ],
)
def test_importing_leaves_adapters_out(module: str, forbidden: tuple[str, ...]) -> None:
    code = f"import sys, {module}\nprint(','.join(m for m in {forbidden!r} if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.strip()
    assert loaded == ""


# --- no import cycles -------------------------------------------------------------------

PACKAGE = Path(__file__).resolve().parent.parent / "workbench"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_level_imports(
    tree: ast.Module, *, in_functions: bool = False
) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run (or that a type checker follows) when the module is imported: at
    module level, in class bodies and in ``if TYPE_CHECKING:`` / ``try`` blocks, but not
    inside functions (a lazy import there is how the facade reaches the server), unless
    ``in_functions``."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif in_functions or not isinstance(
            node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
        ):
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo += [n for n in getattr(node, field, None) or () if isinstance(n, ast.AST)]


def import_graph(*, in_functions: bool = False) -> dict[str, set[str]]:
    """Module -> the package modules it imports (``from pkg import mod`` counts as mod;
    ``in_functions``: imports inside functions too)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        tree = ast.parse(path.read_text())
        for node in _module_level_imports(tree, in_functions=in_functions):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    package = (
                        name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    )
                    package = package[: len(package) - node.level + 1]
                    base = ".".join([*package, *([base] if base else [])])
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.mark.parametrize("in_functions", [False, True], ids=["module-level", "with-functions"])
def test_the_package_has_no_import_cycle(in_functions: bool) -> None:
    """No circle of imports, lazy imports inside functions included (a lazy import only
    hides a circle from the interpreter, not from the reader)."""
    assert cycles(import_graph(in_functions=in_functions)) == []


def test_bulk_is_in_no_import_cycle_even_through_functions() -> None:
    """The bulk package takes the engine as arguments: no import of the facade (or of the
    package, which pulls it in) anywhere in it, lazy ones included, and no cycle through
    it."""
    graph = import_graph(in_functions=True)
    bulk = {name for name in graph if name.startswith("workbench.bulk")}
    assert "workbench.bulk.dispatch" in bulk
    for name in bulk:
        assert not graph[name] & {"workbench.workbench", "workbench"}, name
        assert not any(
            e.startswith(("workbench.notebook", "workbench.server")) for e in graph[name]
        )
    assert [c for c in cycles(graph) if bulk & set(c)] == []


def test_operations_and_server_take_the_engine_through_the_interface() -> None:
    graph = import_graph()
    for name, edges in graph.items():
        if name.startswith(("workbench.operations", "workbench.server")):
            assert "workbench.workbench" not in edges, name
            assert "workbench" not in edges, name  # the package would pull in the facade


def test_cycle_detection_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
