"""``Workbench.impact``: what a new release of a code system does to a column of its codes.

The column's distinct codes are counted by its own library (pandas, polars, Dask, Spark:
each backend's ``counts``), then each distinct code is looked up in both versions,
column-wise where a store can (``describe``):

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
import pyarrow as pa
import pyarrow.compute as pc

from workbench.bulk.counting import pandas_counts
from workbench.bulk.fix import Audit
from workbench.bulk.impact_fix import FIX_KINDS, fix_impact
from workbench.errors import CodeSystemNotFoundError, InvalidRequestError
from workbench.terminology.engine import Terminology
from workbench.terminology.provider import CodeSystemProvider, Successor

CHANGES = ("unchanged", "retired", "display-changed", "became-header", "new", "unknown")
COLUMNS = [
    "system",
    "code",
    "rows",
    "change",
    "from_display",
    "to_display",
    "children",
    "replacements",
    "replacement",
    "relation",
]


def version_of(engine: Terminology, url: str, version: str) -> CodeSystemProvider:
    """The loaded version of a code system, else CodeSystemNotFoundError naming the loaded
    versions."""
    found = engine.codesystem(url, version)
    if found is None:
        loaded = engine.codesystem_versions(url)
        said = ", ".join(map(repr, loaded)) if loaded else "none"
        raise CodeSystemNotFoundError(url, version, context=f"the loaded versions are {said}")
    return found


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
    old, new = version_of(engine, system, from_version), version_of(engine, system, to_version)
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


def _known(provider: CodeSystemProvider, codes: Sequence[str]) -> tuple[Any, Any, list[Any]]:
    """Known, inactive and display of each code: by Arrow's hash look-up in a store's
    columns when it has them, else ``describe``, else concept by concept."""
    columns = provider.concept_columns()
    if columns is not None:
        at = pc.index_in(pa.array(codes, pa.string()), value_set=columns.column("code"))
        known = pc.is_valid(at).to_numpy(zero_copy_only=False)
        inactive = pc.fill_null(columns.column("inactive").take(at), False)
        display = columns.column("display").take(at).to_pylist()
        return known, inactive.to_numpy(zero_copy_only=False), display
    described = provider.describe(codes)
    if described is not None:
        return described
    concepts = [provider.get(c) for c in codes]
    known = np.array([c is not None for c in concepts], dtype=bool)
    inactive = np.array([c is not None and c.inactive for c in concepts], dtype=bool)
    return known, inactive, [c.display if c is not None else None for c in concepts]


def classify(
    old: CodeSystemProvider, new: CodeSystemProvider, codes: list[str], rows: np.ndarray
) -> pd.DataFrame:
    """The impact frame of distinct ``codes`` (``COLUMNS``), most frequent first."""
    known_a, inactive_a, display_a = _known(old, codes)
    known_b, inactive_b, display_b = _known(new, codes)
    active_a, active_b = known_a & ~inactive_a, known_b & ~inactive_b
    change = np.full(len(codes), "unchanged", dtype=object)
    children: list[tuple[str, ...]] = [()] * len(codes)
    both = np.flatnonzero(active_a & active_b)
    grew = both[_parents(new, [codes[i] for i in both]) & ~_parents(old, [codes[i] for i in both])]
    found = _children(new, [codes[i] for i in grew])
    for i in grew:
        change[i], children[i] = "became-header", found.get(codes[i], ())
    shown = np.array([a != b for a, b in zip(display_a, display_b, strict=True)], dtype=bool)
    change[(change == "unchanged") & active_a & active_b & shown] = "display-changed"
    change[active_a & ~active_b] = "retired"
    change[~known_a & known_b] = "new"
    change[~known_a & ~known_b] = "unknown"
    replacements: list[tuple[str, ...]] = [()] * len(codes)
    replacement: list[str | None] = [None] * len(codes)
    relation: list[str | None] = [None] * len(codes)
    for i in np.flatnonzero(known_b & inactive_b):
        successors = new.successors(codes[i])
        replacements[i] = tuple(s.code for s in successors)
        strongest = _one_to_one(successors)
        if strongest is not None:
            replacement[i], relation[i] = strongest.code, strongest.relation
    frame = pd.DataFrame(
        {
            "system": new.url,
            "code": np.array(codes, dtype=object),
            "rows": rows,
            "change": pd.Categorical(change, categories=CHANGES),
            "from_display": np.array(display_a, dtype=object),
            "to_display": np.array(display_b, dtype=object),
            "children": pd.Series(children, dtype=object),
            "replacements": pd.Series(replacements, dtype=object),
            "replacement": np.array(replacement, dtype=object),
            "relation": np.array(relation, dtype=object),
        },
        columns=COLUMNS,
    )
    order = np.lexsort((np.asarray(codes, dtype=object).astype(str), -rows))
    return frame.take(order).reset_index(drop=True)


def _parent_pairs(provider: CodeSystemProvider) -> tuple[Any, Any] | None:
    """(child code, parent code) of every parent link, straight from a store's columns
    (``parents_column``), or None when the provider has no such columns."""
    columns, parents = provider.concept_columns(), provider.parents_column()
    if columns is None or parents is None:
        return None
    lists = pc.split_pattern(parents, ", ")
    flat = pc.list_flatten(lists)
    child = columns.column("code").take(pc.list_parent_indices(lists))
    keep = pc.not_equal(flat, "")
    return child.filter(keep), flat.filter(keep)


def _parents(provider: CodeSystemProvider, codes: list[str]) -> np.ndarray:
    """Which of ``codes`` have children in ``provider`` (column-wise when it can)."""
    pairs = _parent_pairs(provider)
    if pairs is None:
        concepts = [provider.get(c) for c in codes]
        return np.array([c is not None and bool(c.children) for c in concepts], dtype=bool)
    wanted = pa.array(codes, pa.string())
    return pc.is_in(wanted, value_set=pc.unique(pairs[1])).to_numpy(zero_copy_only=False)


def _children(provider: CodeSystemProvider, codes: list[str]) -> dict[str, tuple[str, ...]]:
    """The children of ``codes`` in ``provider``, sorted."""
    pairs = _parent_pairs(provider)
    if pairs is None:
        made = {c: provider.get(c) for c in codes}
        return {c: tuple(sorted(m.children)) for c, m in made.items() if m is not None}
    keep = pc.is_in(pairs[1], value_set=pa.array(codes, pa.string()))
    found: dict[str, list[str]] = {}
    for child, parent in zip(
        pairs[0].filter(keep).to_pylist(), pairs[1].filter(keep).to_pylist(), strict=True
    ):
        found.setdefault(parent, []).append(child)
    return {parent: tuple(sorted(kids)) for parent, kids in found.items()}


def _one_to_one(found: list[Successor]) -> Successor | None:
    """The one successor that replaces a code one to one (None when there are several,
    or only weaker ones)."""
    strong = [s for s in found if s.replaces]
    return strong[0] if len(strong) == 1 else None


@dataclass(frozen=True)
class ImpactFix:
    """What ``Impact.fix`` did: ``data`` (a fixed copy, of the data's library), ``audit``
    (one row per cell changed: row, column, before, after, kind, why, map) and
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
