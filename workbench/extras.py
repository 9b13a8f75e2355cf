"""Optional libraries, each brought by one extra of the package (pyproject.toml's
``[project.optional-dependencies]``): ``require`` imports one, and when it is not installed
raises ``MissingExtraError`` saying what needs it and which extra to install. The command
line shows that as one line and exits 2.

>>> require("json", "quality", "the example").__name__
'json'
>>> require("surely_not_installed", "quality", "Excel reports")
Traceback (most recent call last):
...
workbench.extras.MissingExtraError: surely_not_installed is not installed: it is needed for \
Excel reports; install it with pip install 'workbench[quality]'
"""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingExtraError(ImportError):
    """An optional library is not installed: the text names it, what needs it and the
    extra that installs it (``module``, ``extra`` and ``purpose`` hold them)."""

    def __init__(self, module: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{module} is not installed: it is needed for {purpose}; install it with "
            f"pip install 'workbench[{extra}]'",
            name=module,
        )
        self.module = module
        self.extra = extra
        self.purpose = purpose


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` (e.g. ``"openpyxl"``, ``"matplotlib.pyplot"``) and return it; when
    it, or the package it is in, is not installed, raise ``MissingExtraError`` naming
    ``extra``, the extra that installs it, and ``purpose``, what needs it. An installed
    library that fails to import for another reason raises its own error."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or ""
        if missing and (module == missing or module.startswith(missing + ".")):
            raise MissingExtraError(module.partition(".")[0], extra, purpose) from exc
        raise
