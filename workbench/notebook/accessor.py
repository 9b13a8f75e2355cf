"""The ``.fhir`` pandas accessor: ``df.fhir.validate(...)`` and ``s.fhir.validate(...)``.

It only delegates to ``Workbench.validate_column`` / ``translate_column``. The Workbench is
the one given (``workbench=wb``), else the one chosen with ``workbench.use(wb)``, else the
only one that exists; with several and none chosen the call raises an error naming them
(``workbench.selection``). An error from the call names the Workbench it used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pandas as pd

from workbench.selection import current
from workbench.workbench import Workbench

_T = TypeVar("_T")


def _resolve(workbench: Workbench | None) -> Workbench:
    """The Workbench given, else the chosen one, else the only one."""
    if workbench is None:
        return current()
    if not isinstance(workbench, Workbench):
        raise TypeError(f"workbench= takes a Workbench, not {type(workbench).__name__}")
    return workbench


def _on(wb: Workbench, call: Callable[[], _T]) -> _T:
    """Run ``call``; an error it raises gets a note naming ``wb`` and what it holds."""
    try:
        return call()
    except Exception as exc:
        note = f"(this .fhir call used {wb!r})"
        notes = exc.__dict__.setdefault("__notes__", [])  # add_note, also on Python 3.10
        if isinstance(notes, list) and note not in notes:
            notes.append(note)
        raise


@pd.api.extensions.register_dataframe_accessor("fhir")
class FHIRFrameAccessor:
    """``df.fhir.validate(valueset, code="dx_code", system_column="dx_system")``."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame

    def validate(
        self,
        valueset: str | Mapping[str, Any],
        *,
        code: str,
        system: str | None = None,
        system_column: str | None = None,
        display: str | None = None,
        abstract: bool | None = None,
        workbench: Workbench | None = None,
    ) -> Any:
        """Validate the column ``code`` (``system``: the system URI of every row;
        ``system_column``: a column of systems; ``display``: a column of displays)."""
        wb = _resolve(workbench)
        return _on(
            wb,
            lambda: wb.validate_column(
                self._frame,
                valueset,
                code=code,
                system=system,
                system_column=system_column,
                display=display,
                abstract=abstract,
            ),
        )

    def translate(
        self,
        url: str | None,
        *,
        code: str,
        system: str | None = None,
        system_column: str | None = None,
        target_system: str | None = None,
        workbench: Workbench | None = None,
    ) -> pd.DataFrame:
        """Translate the column ``code`` through the ConceptMap ``url`` (``system`` or
        ``system_column`` as in ``validate``)."""
        wb = _resolve(workbench)
        return _on(
            wb,
            lambda: wb.translate_column(
                self._frame,
                url,
                code=code,
                system=system,
                system_column=system_column,
                target_system=target_system,
            ),
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
        abstract: bool | None = None,
        workbench: Workbench | None = None,
    ) -> Any:
        """Validate this Series of codes (or Codings, or CodeableConcepts)."""
        wb = _resolve(workbench)
        return _on(
            wb, lambda: wb.validate_column(self._series, valueset, system=system, abstract=abstract)
        )

    def translate(
        self,
        url: str | None,
        *,
        system: str | None = None,
        target_system: str | None = None,
        workbench: Workbench | None = None,
    ) -> pd.DataFrame:
        """Translate this Series of codes through the ConceptMap ``url``."""
        wb = _resolve(workbench)
        return _on(
            wb,
            lambda: wb.translate_column(
                self._series, url, system=system, target_system=target_system
            ),
        )
