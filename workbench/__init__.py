"""A Jupyter-friendly FHIR R4 terminology workbench.

>>> import workbench
>>> wb = workbench.Workbench()
"""

from __future__ import annotations

from typing import Any

from workbench.bulk.report import ValidationFrame, ValidationSummary
from workbench.errors import (
    ArchiveLimitError,
    CodeSystemNotFoundError,
    ColumnNotFoundError,
    ImportCycleError,
    IncompleteCodeSystemError,
    InvalidRequestError,
    InvalidResourceError,
    LoadError,
    PackageError,
    PackageIntegrityError,
    PackageNotFoundError,
    TooCostlyError,
    UnsupportedFilterError,
    ValueSetNotFoundError,
    WorkbenchError,
)
from workbench.extras import MissingExtraError
from workbench.fhirdata import FhirData, read_fhir
from workbench.frames import CodeSystem, codesystem_from_frame
from workbench.loading import LoadSummary
from workbench.notebook import accessor as _accessor  # noqa: F401  (registers .fhir)
from workbench.selection import WorkbenchChoiceError, current, use
from workbench.terminology.expand.expansion import Expansion
from workbench.terminology.validate.coding import Issue, ValidationResult
from workbench.views.errors import ViewDefinitionError
from workbench.workbench import Workbench

__all__ = [
    "ArchiveLimitError",
    "CodeSystem",
    "CodeSystemNotFoundError",
    "ColumnNotFoundError",
    "Expansion",
    "FhirData",
    "ImportCycleError",
    "IncompleteCodeSystemError",
    "InvalidRequestError",
    "InvalidResourceError",
    "Issue",
    "LoadError",
    "LoadSummary",
    "MissingExtraError",
    "PackageError",
    "PackageIntegrityError",
    "PackageNotFoundError",
    "TooCostlyError",
    "UnsupportedFilterError",
    "ValidationFrame",
    "ValidationResult",
    "ValidationSummary",
    "ValueSetNotFoundError",
    "ViewDefinitionError",
    "Workbench",
    "WorkbenchChoiceError",
    "WorkbenchError",
    "codesystem_from_frame",
    "current",
    "read_fhir",
    "use",
    "view",
]


def __getattr__(name: str) -> Any:
    """``workbench.view`` (SQL on FHIR views), imported when first used: polars comes with
    it, not with ``import workbench``."""
    if name == "view":
        from workbench.views.api import view

        return view
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")
