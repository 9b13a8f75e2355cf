"""The ICD-10-CM store: the tabular list's rows as Arrow files in the release cache.

Built once per release (its folder is named by a hash of the tabular XML's bytes), then
memory-mapped. Files: ``concepts.arrow`` (code, display, parent, kind, abstract, billable,
active; rows in the tabular list's order), ``designations.arrow`` (the inclusion terms: row,
value; sorted by concept row) and the closure of the hierarchy (``parents``, ``children``,
``up``, ``down`` as CSR arrays).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from workbench.releases.closure import Closure
from workbench.releases.icd10cm import tabular
from workbench.releases.storage import ColumnarStore, write_table


class Store(ColumnarStore):
    """The opened store: rows found by code (a mapping made on first use)."""

    FORMAT = 2  # 2: rows by concept row, the active column and the closure
    TABLES = ("concepts", "designations")
    HIERARCHY = True
    LONG: ClassVar[dict[str, str]] = {"designations": "row"}


def build(path: str | Path, dest: Path) -> dict[str, Any]:
    """Read the tabular XML at ``path`` and write its store at ``dest`` (atomically).

    Raises ReleaseFormatError (naming the file and line) for a broken tabular XML."""
    found = tabular.read(path)
    return Store.build(dest, lambda tmp: _write(found, tmp))


def _write(found: tabular.Tabular, out: Path) -> dict[str, Any]:
    rows = found.rows
    row_of = {r.code: i for i, r in enumerate(rows)}
    concepts = pa.table(
        {
            "code": pa.array([r.code for r in rows], pa.string()),
            "display": pa.array([r.display for r in rows], pa.string()),
            "parent": pa.array([r.parent for r in rows], pa.string()),
            "kind": pa.array([r.kind for r in rows], pa.string()).dictionary_encode(),
            "abstract": pa.array([r.abstract for r in rows], pa.bool_()),
            "billable": pa.array([r.billable for r in rows], pa.bool_()),
            "active": pa.array(np.ones(len(rows), bool)),
        }
    )
    write_table(concepts, out / "concepts.arrow")
    pairs = [(i, term) for i, r in enumerate(rows) for term in r.designations]
    designations = pa.table(
        {
            "row": pa.array([i for i, _ in pairs], pa.int32()),
            "value": pa.array([t for _, t in pairs], pa.string()),
        }
    )
    write_table(designations, out / "designations.arrow")
    edges = [(i, row_of[r.parent]) for i, r in enumerate(rows) if r.parent in row_of]
    child = np.array([c for c, _ in edges], dtype=np.int64)
    parent = np.array([p for _, p in edges], dtype=np.int64)
    Closure.build(len(rows), child, parent).save(out)
    return {
        "system": tabular.SYSTEM,
        "version": found.version,
        "concepts": len(rows),
        "source": found.source,
    }
