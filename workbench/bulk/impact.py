"""``Workbench.impact``: what a new release of a code system does to a column of its codes.

Each distinct code is classified once per pair of loaded versions and kept
(``impact_table``; ``impact_codes`` classifies, column-wise where a store can): a pandas
column of texts is looked up in that table as Arrow strings and counted by ``bincount``,
as ``validate_column`` looks a column up in its answer tables; other libraries' columns
(polars, Dask, Spark) are counted by their own library (each backend's ``counts``) and
their distinct codes looked up in the same table:

==================  ===========================================================
change              when
==================  ===========================================================
``unchanged``       in both versions, same display, no new children
``retired``         in the older version, not in the newer one (or inactive there)
``display-changed`` in both, its display changed
``became-header``   in both, a leaf before and with children now (ICD-10-CM's
                    codes that gained subcodes): ``children`` names them
``new``             not in the older version, in the newer one
``unknown``         in neither version
==================  ===========================================================

For a code the newer version has as inactive, ``replacements`` lists what that release
records (SNOMED CT's historical associations, LOINC's MAP_TO; ``provider.successors``),
and ``replacement`` the one code that replaces it one to one (exactly one SAME AS /
REPLACED BY / MAP_TO), which ``Impact.fix`` applies, with an audit. The children of a
header are never applied: choosing one is a clinical decision.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from workbench.bulk.counting import arrow_codes, pandas_counts
from workbench.bulk.fix import Audit
from workbench.bulk.impact_codes import CHANGES
from workbench.bulk.impact_fix import FIX_KINDS, fix_impact
from workbench.bulk.impact_table import COLUMNS, table_for
from workbench.errors import InvalidRequestError
from workbench.terminology.engine import Terminology
from workbench.terminology.provider import CodeSystemProvider

__all__ = [
    "CHANGES",
    "COLUMNS",
    "FIX_KINDS",
    "Impact",
    "ImpactFix",
    "against",
    "classify",
    "impact_column",
]


def impact_column(
    engine: Terminology,
    counts: Callable[[Any, str | None], pd.DataFrame],
    data: Any,
    column: str | None,
    *,
    system: str,
    from_version: str,
    to_version: str,
) -> Impact:
    """``Workbench.impact``: see there (``counts``: the data's backend's)."""
    from workbench.changes import check_pair

    check_pair(from_version, to_version)
    if not isinstance(system, str) or not system:
        raise InvalidRequestError("impact() needs system=: the code system's canonical URL")
    # a version that is not loaded: CodeSystemNotFoundError naming the loaded ones
    old = engine.require_codesystem(system, from_version)
    new = engine.require_codesystem(system, to_version)
    strings = arrow_codes(data, column)
    if strings is not None:
        frame, missing = table_for(old, new).column(old, new, strings)
    else:
        counted = counts(data, column)
        codes = [str(c) for c in counted["code"]]
        frame = classify(old, new, codes, counted["rows"].to_numpy(dtype=np.int64))
        missing = int(counted.attrs.get("missing", 0))
    return Impact(system, from_version, to_version, column, frame, missing, data)


def against(report: Any, to_version: str, from_version: str | None) -> Impact:
    """``ValidationFrame.against``: the impact on the data the report validated, of its one
    system, from the version validation used (the system's default) unless given."""
    revalidate = getattr(report, "revalidate", None)
    if revalidate is None:
        raise InvalidRequestError(
            "against() needs the report validate_column returned on pandas data in this "
            "session (an unpickled or derived report has lost its data)"
        )
    systems = {s for s in report["system"].astype(object).dropna().unique()}
    if len(systems) != 1:
        raise InvalidRequestError(
            f"against() takes a report of one code system, not {sorted(map(str, systems))}"
        )
    system = str(systems.pop())
    engine: Terminology = revalidate.engine
    if from_version is None:
        used = engine.codesystem(system)
        from_version = str(used.version) if used is not None else ""
    return impact_column(
        engine,
        pandas_counts,
        revalidate.source,
        revalidate.code,
        system=system,
        from_version=from_version,
        to_version=to_version,
    )


def classify(
    old: CodeSystemProvider, new: CodeSystemProvider, codes: list[str], rows: np.ndarray
) -> pd.DataFrame:
    """The impact frame of distinct ``codes`` (``COLUMNS``), most frequent first, through
    the kept table of the two versions (``impact_table``)."""
    return table_for(old, new).counted(old, new, codes, rows)


@dataclass(frozen=True)
class ImpactFix:
    """What ``Impact.fix`` did: ``data`` (a fixed copy, of the data's library), ``audit``
    (one row per cell changed: before, after, kind, row, column, why, map) and
    ``rows_fixed``."""

    data: Any  # of the library the data came in
    audit: Audit
    rows_fixed: int

    def __repr__(self) -> str:
        distinct = self.audit.drop_duplicates(["before", "after"])
        return f"<ImpactFix {self.rows_fixed:,} rows ({len(distinct):,} codes replaced)>"


@dataclass(frozen=True)
class Impact:
    """The impact of ``system`` ``from_version`` → ``to_version`` on a column: ``.frame``
    one row per distinct code (``COLUMNS``: rows, change, both displays, children,
    replacements), ``.counts`` the rows per change, ``missing`` the rows without a code."""

    system: str
    from_version: str
    to_version: str
    column: str | None
    frame: pd.DataFrame = field(repr=False)
    missing: int = 0
    data: Any = field(default=None, repr=False, compare=False)

    @property
    def counts(self) -> dict[str, int]:
        """Rows per change (every change, zeros included)."""
        rows = self.frame.groupby("change", observed=False)["rows"].sum()
        return {kind: int(rows.get(kind, 0)) for kind in CHANGES}

    def fix(self, data: Any = None, *, kinds: Sequence[str] = FIX_KINDS) -> ImpactFix:
        """Replace each code that has one one-to-one replacement (``replacement``) in a
        copy of ``data`` (by default the data ``impact`` was given: pandas, polars, Dask
        or Spark, fixed in its own library), with an audit; the children of a header and
        weaker associations are never applied (``impact_fix.py``). Raises
        InvalidRequestError for another kind, or data without the column."""
        source = self.data if data is None else data
        fixed, audit = fix_impact(self.frame, self.column, self.to_version, source, kinds)
        return ImpactFix(fixed, audit, len(audit))

    def __repr__(self) -> str:
        counts = ", ".join(f"{k} {v:,}" for k, v in self.counts.items() if v) or "no rows"
        return (
            f"<Impact {self.system} {self.from_version} → {self.to_version}: "
            f"{len(self.frame):,} distinct codes; rows: {counts}>"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th>{html.escape(k)}</th><td>{v:,}</td></tr>" for k, v in self.counts.items()
        )
        changed = self.frame[self.frame["change"] != "unchanged"].head(20)
        table = changed.astype(object).where(changed.notna(), "").to_html(index=False)
        return (
            f"<div class='workbench-impact'><b>{html.escape(self.system)}</b> "
            f"{html.escape(self.from_version)} → {html.escape(self.to_version)}"
            f"<table><tr><th>change</th><th>rows</th></tr>{rows}</table>"
            f"<details open><summary>Changed codes (most frequent first)</summary>{table}"
            "</details></div>"
        )
