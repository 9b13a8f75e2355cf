"""A SNOMED CT store folder, opened by memory-mapping its Arrow and numpy files.

Opening reads only ``meta.json`` and maps the files; pages come into memory as they are
touched, so memory follows use, not the size of the release. Concepts are rows ``0..n-1``
ordered by SCTID; every other file refers to concepts by row.

Files: ``concepts.arrow`` (id, active, moduleId, effectiveTime, defined, display, fsn),
``descriptions.arrow`` (sorted by concept row), ``acceptability.arrow`` (language refset
rows by description row), ``concrete.arrow``, ``members.arrow`` (active refset members by
refset), ``associations.arrow`` (historical associations), ``maps.arrow`` (the rows of
the simple, complex and extended map refsets), ``mrcm_domain.arrow``,
``mrcm_range.arrow`` and numpy arrays for the active relationships (``rel_*``, sorted by
source row) and the closure (``parents``, ``children``, ``up``, ``down`` as CSR).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from workbench.releases.storage import ColumnarStore

SCT = "http://snomed.info/sct"
_ARRAYS = (
    "rel_src",
    "rel_dst",
    "rel_type",
    "rel_group",
    "rel_dst_id",
    "rel_char",
    "rel_by_dst",
)


class Store(ColumnarStore):
    """The opened store: tables and arrays, mapped, plus row look-ups by SCTID."""

    FORMAT = 1
    TABLES = (
        "concepts",
        "descriptions",
        "acceptability",
        "concrete",
        "members",
        "associations",
        "maps",
        "mrcm_domain",
        "mrcm_range",
    )
    ARRAYS = _ARRAYS
    HIERARCHY = True
    CODE = "id"
    NUMERIC = True

    def number(self, code: Any) -> int | None:
        """An SCTID's integer (anything ``int()`` reads), None for anything else."""
        try:
            return int(code)
        except (TypeError, ValueError):
            return None

    # --- concepts ---------------------------------------------------------------------

    @cached_property
    def defined(self) -> npt.NDArray[np.bool_]:
        """The sufficiently-defined flag of every concept row."""
        return self.tables["concepts"].column("defined").to_numpy(zero_copy_only=False)

    # --- descriptions -----------------------------------------------------------------

    def descriptions(self, row: int) -> pa.Table:
        """The descriptions of one concept row (with a ``row`` column: their position)."""
        keys = self.column_np("descriptions", "concept")
        lo, hi = np.searchsorted(keys, [row, row + 1])
        table = self.tables["descriptions"].slice(int(lo), int(hi - lo))
        return table.append_column("row", pa.array(np.arange(lo, hi, dtype=np.int64)))

    def acceptability(self, lo: int, hi: int) -> pa.Table:
        """Language refset rows of the description rows ``lo..hi-1``."""
        keys = self.column_np("acceptability", "description")
        a, b = np.searchsorted(keys, [lo, hi])
        return self.tables["acceptability"].slice(int(a), int(b - a))

    # --- relationships ----------------------------------------------------------------

    def relationships(self, row: int) -> dict[str, np.ndarray]:
        """The active relationships whose source is ``row``."""
        src = self.arrays["rel_src"]
        lo, hi = np.searchsorted(src, [row, row + 1])
        return {name: self.arrays[name][lo:hi] for name in _ARRAYS if name != "rel_by_dst"}

    def concrete(self, row: int) -> pa.Table:
        """The active concrete values whose source is ``row``."""
        return self.slice_by("concrete", "source", row)

    # --- reference sets -----------------------------------------------------------------

    def members(self, refset: int) -> npt.NDArray[np.int64]:
        """The active referenced component ids of a refset (sorted)."""
        found = self.slice_by("members", "refsetId", refset)
        return found.column("referencedComponentId").to_numpy()

    def refsets(self) -> list[int]:
        """The ids of the refsets that have members."""
        return [int(r) for r in self.meta.get("refsets", [])]

    def maps(self, refset: int) -> pa.Table:
        """The rows of one map refset (source, target, group, priority, rule, advice,
        correlation, active), by source, group and priority."""
        return self.slice_by("maps", "refsetId", refset)

    def associations(self, source: int | None = None) -> pa.Table:
        """Historical association rows (source, target, refsetId, active), all or one source's."""
        if source is None:
            return self.tables["associations"]
        return self.slice_by("associations", "source", source)


#: The store's files (besides ``meta.json``).
FILES = Store.files()
#: The store format (bump it when the files change).
FORMAT = Store.FORMAT


def is_store(path: Path) -> bool:
    """True when ``path`` holds a complete store of this format."""
    return Store.is_store(path)
