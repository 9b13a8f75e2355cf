"""Filters compiled to boolean masks over a release store's concept rows, shared by every
release kind whose provider answers filters column-wise (SNOMED CT, LOINC, RxNorm)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.terminology.filters import CodeFilter


@dataclass(frozen=True, slots=True)
class MaskFilter(CodeFilter):
    """A compiled filter that also keeps its boolean mask over concept rows (and, for SNOMED
    CT, the ECL it came from)."""

    mask: Any = None
    ecl: str | None = None
