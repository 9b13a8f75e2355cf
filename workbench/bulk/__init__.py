"""Bulk work on whole columns (pandas, polars, Dask): validation against a value set and
translation through ConceptMaps, with the semantics of ``validate_code`` and ``translate``.

``dispatch`` picks the backend; ``encoding`` reads a column; ``schema`` declares the result
columns; ``table`` keeps the answers per distinct code; ``systems`` answers a column of
several systems; ``checker`` and ``translate`` answer distinct codes with the engine;
``report`` and ``suggest`` make a validation's report.
"""

from __future__ import annotations

from workbench.bulk.dispatch import translate_column, validate_column
from workbench.bulk.reports import report_of

__all__ = ["report_of", "translate_column", "validate_column"]
