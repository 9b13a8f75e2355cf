"""Notebook adapters: the pandas accessor, widgets and HTML views. They translate and
delegate to the engine; none of them holds terminology logic.

The widgets import ipywidgets (the ``notebook`` extra: without it, ``MissingExtraError``
says so), so they load on first use::

    from workbench.notebook import CodeValidator, ColumnReport, MapExplorer, ServerPanel
    from workbench.notebook import BindingExplorer, ValueSetBrowser, VersionDiff
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from workbench.extras import require

_WIDGETS = {
    "BindingExplorer": "workbench.notebook.binding_explorer",
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
        require("ipywidgets", "notebook", f"the notebook widget {name}")
        if name == "ColumnReport":  # its table
            require("itables", "notebook", "the notebook widget ColumnReport")
        return getattr(import_module(_WIDGETS[name]), name)
    raise AttributeError(f"module 'workbench.notebook' has no attribute {name!r}")
