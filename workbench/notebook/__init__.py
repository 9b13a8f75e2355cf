"""Notebook adapters: the pandas accessor, widgets and HTML views. They translate and
delegate to the engine; none of them holds terminology logic.

The widgets import ipywidgets, so they load on first use::

    from workbench.notebook import CodeValidator, ColumnReport, MapExplorer, ServerPanel
    from workbench.notebook import ValueSetBrowser, VersionDiff
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WIDGETS = {
    "ValueSetBrowser": "workbench.notebook.valueset_browser",
    "CodeSystemTree": "workbench.notebook.valueset_browser",
    "CodeValidator": "workbench.notebook.code_validator",
    "ColumnReport": "workbench.notebook.column_report",
    "ServerPanel": "workbench.notebook.server_panel",
    "MapExplorer": "workbench.notebook.map_explorer",
    "VersionDiff": "workbench.notebook.version_diff",
}

__all__ = sorted(_WIDGETS)


def __getattr__(name: str) -> Any:
    if name in _WIDGETS:
        return getattr(import_module(_WIDGETS[name]), name)
    raise AttributeError(f"module 'workbench.notebook' has no attribute {name!r}")
