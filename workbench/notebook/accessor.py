"""The ``.fhir`` pandas accessor: ``df.fhir.validate(...)`` and ``s.fhir.validate(...)``.

It only delegates to ``Workbench.validate_column``. Without ``workbench=...`` it uses the
Workbench created last (``workbench.current()``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from workbench.workbench import Workbench, current


@pd.api.extensions.register_dataframe_accessor("fhir")
class FHIRFrameAccessor:
    """``df.fhir.validate(valueset, code="dx_code", system="dx_system")``."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame

    def validate(
        self,
        valueset: str | Mapping[str, Any],
        *,
        code: str,
        system: str | None = None,
        display: str | None = None,
        abstract: bool = False,
        workbench: Workbench | None = None,
    ) -> Any:
        """Validate the column ``code`` (with ``system``/``display`` columns or constants)."""
        wb = workbench or current()
        return wb.validate_column(
            self._frame, valueset, code=code, system=system, display=display, abstract=abstract
        )

    def translate(
        self,
        url: str | None,
        *,
        code: str,
        system: str | None = None,
        target_system: str | None = None,
        workbench: Workbench | None = None,
    ) -> pd.DataFrame:
        """Translate the column ``code`` through the ConceptMap ``url``."""
        wb = workbench or current()
        return wb.translate_column(
            self._frame, url, code=code, system=system, target_system=target_system
        )


@pd.api.extensions.register_series_accessor("fhir")
class FHIRSeriesAccessor:
    """``df["dx_code"].fhir.validate(valueset, system=...)``."""

    def __init__(self, series: pd.Series) -> None:
        self._series = series

    def validate(
        self,
        valueset: str | Mapping[str, Any],
        *,
        system: str | None = None,
        abstract: bool = False,
        workbench: Workbench | None = None,
    ) -> Any:
        """Validate this Series of codes (or Codings, or CodeableConcepts)."""
        wb = workbench or current()
        return wb.validate_column(self._series, valueset, system=system, abstract=abstract)

    def translate(
        self,
        url: str | None,
        *,
        system: str | None = None,
        target_system: str | None = None,
        workbench: Workbench | None = None,
    ) -> pd.DataFrame:
        """Translate this Series of codes through the ConceptMap ``url``."""
        wb = workbench or current()
        return wb.translate_column(self._series, url, system=system, target_system=target_system)
