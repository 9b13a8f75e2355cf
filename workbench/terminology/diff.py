"""``Diff``: what changed between two versions of one code system or value set
(``Workbench.diff``).

Both versions are read as one row per code (system, code, display, status, abstract,
parents) and joined on (system, code), column-wise: a code only in the newer version is
``added``, only in the older ``removed``; a code in both whose display differs is
``display-changed``, whose status (active, inactive, deprecated, retired…) or abstract
flag differs is ``status-changed``, whose parents differ is ``moved``. A code may have
several kinds of change (one row per kind in ``.frame``).

>>> import pandas as pd
>>> old = pd.DataFrame({"code": ["a", "b", "c"], "display": ["A", "B", "C"],
...     "parents": [[], ["a"], ["a"]], "abstract": [False] * 3, "inactive": [False] * 3,
...     "status": [None] * 3})
>>> new = pd.DataFrame({"code": ["a", "b", "d"], "display": ["A", "Bee", "D"],
...     "parents": [[], [], ["a"]], "abstract": [True, False, False],
...     "inactive": [False] * 3, "status": [None] * 3})
>>> d = between("http://x", "CodeSystem", "1", "2", concept_rows("http://x", old),
...     concept_rows("http://x", new))
>>> d.counts
{'added': 1, 'removed': 1, 'display-changed': 1, 'status-changed': 1, 'moved': 1}
>>> d.frame[["code", "change"]].values.tolist()  # doctest: +NORMALIZE_WHITESPACE
[['d', 'added'], ['c', 'removed'], ['b', 'display-changed'], ['a', 'status-changed'],
 ['b', 'moved']]
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.terminology.concepts import Entry

#: The kinds of change, in the order the frame and the counts list them.
KINDS = ("added", "removed", "display-changed", "status-changed", "moved")
#: The columns of one version's rows.
ROW = ["system", "code", "display", "status", "abstract", "parents"]
#: The columns of ``Diff.frame``: the code and its change, both versions' displays, the
#: system, then both versions' parents, abstract flags and statuses (what people look for
#: first, the narrow flags last: pandas, fitting a frame to a terminal, keeps as many
#: columns from the right as from the left).
COLUMNS = [
    "code",
    "change",
    "from_display",
    "to_display",
    "system",
    "from_parents",
    "to_parents",
    "from_abstract",
    "to_abstract",
    "from_status",
    "to_status",
]


def concept_rows(system: str, concepts: pd.DataFrame) -> pa.Table:
    """One version's rows from a code system's concepts frame (``Workbench.concepts``):
    the status is the concept's own (``deprecated``, ``retired``…), else ``inactive`` or
    ``active``; the parents are sorted and joined with ``", "``."""
    inactive = concepts["inactive"].to_numpy(dtype=bool)
    own = concepts["status"].astype(object).to_numpy()
    fallback = np.where(inactive, "inactive", "active").astype(object)
    parents = [
        ", ".join(sorted(p)) if p is not None and len(p) else "" for p in concepts["parents"]
    ]
    return rows_table(
        system,
        pa.array(concepts["code"].astype(object).to_numpy(), pa.string(), from_pandas=True),
        pa.array(concepts["display"].astype(object).to_numpy(), pa.string(), from_pandas=True),
        pa.array(np.where(pd.isna(own), fallback, own), pa.string(), from_pandas=True),
        pa.array(concepts["abstract"].to_numpy(dtype=bool)),
        pa.array(parents, pa.string()),
    )


def column_rows(system: str, columns: pa.Table, parents: pa.Array) -> pa.Table:
    """One version's rows straight from a store's columns (``concept_columns`` and
    ``parents_column``): no Python object per concept."""
    inactive = columns.column("inactive")
    return rows_table(
        system,
        columns.column("code"),
        columns.column("display"),
        pc.if_else(inactive, pa.scalar("inactive"), pa.scalar("active")),
        columns.column("abstract"),
        parents,
    )


def rows_table(system: str, *columns: Any) -> pa.Table:
    """The rows of one code system version: the columns of ``ROW`` but the system, which
    is the code system's on every row (``between`` joins on the code alone)."""
    return pa.table(dict(zip(ROW[1:], columns, strict=True)))


def entry_rows(entries: Sequence[Entry]) -> pa.Table:
    """One value set version's rows from its expansion (no parents: an expansion is flat)."""
    return pa.table(
        {
            "system": pa.array([e.system for e in entries], pa.string()),
            "code": pa.array([e.code for e in entries], pa.string()),
            "display": pa.array([e.display for e in entries], pa.string()),
            "status": pa.array(["inactive" if e.inactive else "active" for e in entries]),
            "abstract": pa.array([bool(e.abstract) for e in entries], pa.bool_()),
            "parents": pa.array([""] * len(entries), pa.string()),
        }
    )


def between(
    url: str,
    resource_type: str,
    from_version: str,
    to_version: str,
    old: pa.Table,
    new: pa.Table,
) -> Diff:
    """The ``Diff`` of two versions' rows (``concept_rows``, ``column_rows`` or
    ``entry_rows``), matched on (system, code) by Arrow's hash look-up (``index_in``);
    each kind's rows in code order.

    Each of the older version's columns is taken once into the newer one's row order and
    compared with the newer column as it is (a store's memory-mapped column is read, not
    copied); only the rows that changed are taken into the frames."""
    key_a, key_b = _key(old), _key(new)
    at = pc.index_in(key_b, value_set=key_a)  # each newer row's older row (null: added)
    matched = pc.is_valid(at)
    changed = {
        "display-changed": _differs(old, new, at, matched, "display"),
        "status-changed": pc.or_(
            _differs(old, new, at, matched, "status"), _differs(old, new, at, matched, "abstract")
        ),
        "moved": _differs(old, new, at, matched, "parents"),
    }
    parts = [
        _part(None, new.filter(pc.invert(matched)), "added", url),
        _part(old.filter(pc.invert(pc.is_in(key_a, value_set=key_b))), None, "removed", url),
    ]
    for kind, mask in changed.items():
        rows = pc.indices_nonzero(mask)
        parts.append(_part(old.take(at.take(rows)), new.take(rows), kind, url))
    frame = pd.concat(parts, ignore_index=True)[COLUMNS]
    return Diff(url, resource_type, from_version, to_version, len(old), len(new), frame)


def _differs(old: pa.Table, new: pa.Table, at: Any, matched: Any, name: str) -> Any:
    """Per newer row, whether column ``name`` differs from the older row it matched (false
    for an added row; a missing value is compared as ``""``, or false for ``abstract``)."""
    left, right = old.column(name).take(at), new.column(name)
    if old.column(name).null_count == 0 and right.null_count == 0:
        return pc.fill_null(pc.not_equal(left, right), False)  # null: an added row
    blank: Any = False if name == "abstract" else ""
    differ = pc.not_equal(pc.fill_null(left, blank), pc.fill_null(right, blank))
    return pc.and_(matched, differ)


def _key(rows: pa.Table) -> Any:
    """The key a row is matched on: the code, with its system when rows have one."""
    if "system" not in rows.column_names:
        return rows.column("code")
    return pc.binary_join_element_wise(rows.column("system"), rows.column("code"), "|")


def _part(old: pa.Table | None, new: pa.Table | None, kind: str, url: str) -> pd.DataFrame:
    """The frame of one kind's rows, in code order: both versions' values, None for the
    version that lacks the code (the system is ``url`` when rows have none)."""
    some = old if old is not None else new
    assert some is not None
    n = len(some)
    order = pc.sort_indices(
        some, [(k, "ascending") for k in ("system", "code") if k in some.column_names]
    ).to_numpy()
    system = some.column("system") if "system" in some.column_names else [url] * n
    out: dict[str, Any] = {
        "system": np.array(system, dtype=object)[order],
        "code": np.array(some.column("code").to_pylist(), dtype=object)[order],
        "change": kind,
    }
    for side, rows in (("from", old), ("to", new)):
        for name in ("display", "status", "abstract", "parents"):
            values = rows.column(name).to_pylist() if rows is not None else [None] * n
            out[f"{side}_{name}"] = np.array(values, dtype=object)[order]
    return pd.DataFrame(out, columns=COLUMNS)


@dataclass(frozen=True)
class Diff:
    """Version ``from_version`` of ``url`` (a CodeSystem or a ValueSet) against
    ``to_version``: ``.frame`` holds every change (one row per code and kind, with both
    versions' display, status, abstract flag and parents), ``.added``, ``.removed``,
    ``.display_changed``, ``.status_changed`` and ``.moved`` the rows of one kind."""

    url: str
    resource_type: str
    from_version: str
    to_version: str
    from_size: int
    to_size: int
    frame: pd.DataFrame = field(repr=False)

    def of(self, kind: str) -> pd.DataFrame:
        """The rows of one kind of change (one of ``KINDS``), renumbered from 0."""
        return self.frame[self.frame["change"] == kind].reset_index(drop=True)

    @property
    def added(self) -> pd.DataFrame:
        """The codes only the newer version has."""
        return self.of("added")

    @property
    def removed(self) -> pd.DataFrame:
        """The codes only the older version has."""
        return self.of("removed")

    @property
    def display_changed(self) -> pd.DataFrame:
        """The codes whose display changed."""
        return self.of("display-changed")

    @property
    def status_changed(self) -> pd.DataFrame:
        """The codes whose status (active, inactive, deprecated…) or abstract flag changed."""
        return self.of("status-changed")

    @property
    def moved(self) -> pd.DataFrame:
        """The codes whose parents changed."""
        return self.of("moved")

    @property
    def counts(self) -> dict[str, int]:
        """How many codes changed, per kind (every kind, zeros included)."""
        found = self.frame["change"].value_counts()
        return {kind: int(found.get(kind, 0)) for kind in KINDS}

    @property
    def label(self) -> str:
        """``url from_version → to_version``."""
        return f"{self.url} {self.from_version} → {self.to_version}"

    def chart(self) -> Any:
        """Bars of the changes per kind (a Vega-Lite chart JupyterLab draws itself)."""
        from workbench.charts import VegaLite

        values = [{"change": k, "codes": v} for k, v in self.counts.items()]
        return VegaLite(
            {
                "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
                "title": f"{self.resource_type} {self.label}",
                "data": {"values": values},
                "mark": {"type": "bar", "tooltip": True},
                "encoding": {
                    "y": {"field": "change", "type": "nominal", "sort": list(KINDS), "title": None},
                    "x": {"field": "codes", "type": "quantitative", "title": "codes"},
                    "color": {"field": "change", "type": "nominal", "legend": None},
                    "tooltip": [{"field": "change"}, {"field": "codes", "format": ","}],
                },
                "width": 320,
                "config": {"view": {"stroke": None}},
            }
        )

    def __repr__(self) -> str:
        counts = ", ".join(f"{k} {v:,}" for k, v in self.counts.items())
        return (
            f"<Diff {self.resource_type} {self.label} ({self.from_size:,} → {self.to_size:,} "
            f"codes): {counts}>"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th>{html.escape(kind)}</th><td>{n:,}</td><td>{self._sample(kind)}</td></tr>"
            for kind, n in self.counts.items()
        )
        return (
            f"<div class='workbench-diff'><b>{html.escape(self.resource_type)}</b> "
            f"{html.escape(self.label)}: {self.from_size:,} → {self.to_size:,} codes"
            f"<table><tr><th>change</th><th>codes</th><th>first codes</th></tr>{rows}"
            "</table></div>"
        )

    def _sample(self, kind: str, shown: int = 5) -> str:
        codes = self.frame.loc[self.frame["change"] == kind, "code"]
        text = ", ".join(html.escape(str(c)) for c in codes.head(shown))
        return text + (", …" if len(codes) > shown else "")
