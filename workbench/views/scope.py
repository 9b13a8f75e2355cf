"""What a FHIRPath path is compiled against: its focus, the view's constants, the columns of
``%rowIndex`` and ``getResourceKey()``, and the workbench answering terminology functions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from workbench.fhirpath.nodes import Node
from workbench.views.definition import Constant
from workbench.views.values import Value


@dataclass(frozen=True)
class Scope:
    """What a path is compiled against: its ``focus`` (``$this``), the view's constants,
    the ``%rowIndex`` and ``getResourceKey()`` columns (None inside a per-item expression
    such as a ``where`` criterion, where outer columns cannot be read), and the hooks of the
    terminology functions (``terminology``: None when no workbench is at hand)."""

    focus: Value
    constants: dict[str, Constant]
    row_index: pl.Expr | None
    resource_key: pl.Expr | None
    #: The compiler (``workbench.views.compiler.compile_node``), for the functions and
    #: operators that compile their arguments.
    compile: Callable[[Node, Scope], Value]
    at_root: bool = False
    terminology: Any = None

    def on(self, focus: Value, *, per_item: bool = False) -> Scope:
        """The same scope over another focus; ``per_item``: inside a per-item expression."""
        if per_item:
            return replace(self, focus=focus, row_index=None, resource_key=None, at_root=False)
        return replace(self, focus=focus, at_root=False)
