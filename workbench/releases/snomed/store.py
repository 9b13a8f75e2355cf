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

from workbench.releases import storage
from workbench.releases.closure import FILES as CLOSURE_FILES
from workbench.releases.closure import Closure
from workbench.releases.storage import mapped

SCT = "http://snomed.info/sct"
FORMAT = 1
_ARRAYS = (
    "rel_src",
    "rel_dst",
    "rel_type",
    "rel_group",
    "rel_dst_id",
    "rel_char",
    "rel_by_dst",
)
_TABLES = (
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


FILES = (
    *(f"{name}.arrow" for name in _TABLES),
    *(f"{name}.npy" for name in _ARRAYS),
    *CLOSURE_FILES,
)


def is_store(path: Path) -> bool:
    """True when ``path`` holds a complete store of this format."""
    return storage.is_store(path, FORMAT)


class Store:
    """The opened store: tables and arrays, mapped, plus row look-ups by SCTID."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.meta, self.tables = storage.open_store(self.path, FILES, _TABLES)
        self.arrays: dict[str, np.ndarray] = {
            name: mapped(self.path / f"{name}.npy") for name in _ARRAYS
        }
        self._np: dict[str, np.ndarray] = {}
        self.ids: npt.NDArray[np.int64] = self.column_np("concepts", "id")
        self.n = len(self.ids)

    def column_np(self, table: str, column: str) -> np.ndarray:
        """A table column as a numpy array (zero-copy for numbers; remembered)."""
        key = f"{table}.{column}"
        found = self._np.get(key)
        if found is None:
            found = self.tables[table].column(column).to_numpy()
            self._np[key] = found
        return found

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its folder (Dask ships code systems to workers, which reopen it)."""
        return {"path": str(self.path)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]

    # --- concepts ---------------------------------------------------------------------

    def row(self, code: str | int) -> int:
        """The row of a concept SCTID, or -1."""
        try:
            value = int(code)
        except (TypeError, ValueError):
            return -1
        at = int(np.searchsorted(self.ids, value))
        return at if at < self.n and int(self.ids[at]) == value else -1

    def rows(self, codes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Rows of many SCTIDs at once (-1 where unknown)."""
        at = np.searchsorted(self.ids, codes)
        at = np.minimum(at, max(self.n - 1, 0))
        found = self.ids[at] == codes if self.n else np.zeros(len(codes), bool)
        return np.where(found, at, -1)

    @cached_property
    def active(self) -> npt.NDArray[np.bool_]:
        """The active flag of every concept row."""
        return self.tables["concepts"].column("active").to_numpy(zero_copy_only=False)

    @cached_property
    def defined(self) -> npt.NDArray[np.bool_]:
        """The sufficiently-defined flag of every concept row."""
        return self.tables["concepts"].column("defined").to_numpy(zero_copy_only=False)

    @cached_property
    def codes(self) -> pa.Array:
        """Every SCTID as a string array (for frames and expansions)."""
        return self.tables["concepts"].column("id").cast(pa.string()).combine_chunks()

    def value(self, column: str, row: int) -> Any:
        """One concept column's value at a row."""
        return self.tables["concepts"].column(column)[row].as_py()

    def column(self, column: str, rows: npt.NDArray[np.integer]) -> list[Any]:
        """A concept column's values at many rows."""
        return self.tables["concepts"].column(column).take(pa.array(rows)).to_pylist()

    # --- closure ----------------------------------------------------------------------

    @cached_property
    def closure(self) -> Closure:
        """Parents, children, ancestors and descendants (mapped CSR arrays)."""
        return Closure.open(self.path)

    # --- descriptions -----------------------------------------------------------------

    @property
    def _desc_concept(self) -> npt.NDArray[np.int32]:
        return self.column_np("descriptions", "concept")

    def descriptions(self, row: int) -> pa.Table:
        """The descriptions of one concept row (with a ``row`` column: their position)."""
        lo, hi = np.searchsorted(self._desc_concept, [row, row + 1])
        table = self.tables["descriptions"].slice(int(lo), int(hi - lo))
        return table.append_column("row", pa.array(np.arange(lo, hi, dtype=np.int64)))

    @property
    def _acc_desc(self) -> npt.NDArray[np.int32]:
        return self.column_np("acceptability", "description")

    def acceptability(self, lo: int, hi: int) -> pa.Table:
        """Language refset rows of the description rows ``lo..hi-1``."""
        a, b = np.searchsorted(self._acc_desc, [lo, hi])
        return self.tables["acceptability"].slice(int(a), int(b - a))

    # --- relationships ----------------------------------------------------------------

    def relationships(self, row: int) -> dict[str, np.ndarray]:
        """The active relationships whose source is ``row``."""
        src = self.arrays["rel_src"]
        lo, hi = np.searchsorted(src, [row, row + 1])
        return {name: self.arrays[name][lo:hi] for name in _ARRAYS if name != "rel_by_dst"}

    def concrete(self, row: int) -> pa.Table:
        """The active concrete values whose source is ``row``."""
        table = self.tables["concrete"]
        source = self.column_np("concrete", "source")
        lo, hi = np.searchsorted(source, [row, row + 1])
        return table.slice(int(lo), int(hi - lo))

    # --- reference sets -----------------------------------------------------------------

    @property
    def _member_refsets(self) -> npt.NDArray[np.int64]:
        return self.column_np("members", "refsetId")

    def members(self, refset: int) -> npt.NDArray[np.int64]:
        """The active referenced component ids of a refset (sorted)."""
        lo, hi = np.searchsorted(self._member_refsets, [refset, refset + 1])
        return (
            self.tables["members"]
            .column("referencedComponentId")
            .slice(int(lo), int(hi - lo))
            .to_numpy()
        )

    def refsets(self) -> list[int]:
        """The ids of the refsets that have members."""
        return [int(r) for r in self.meta.get("refsets", [])]

    def maps(self, refset: int) -> pa.Table:
        """The rows of one map refset (source, target, group, priority, rule, advice,
        correlation, active), by source, group and priority."""
        col = self.column_np("maps", "refsetId")
        lo, hi = np.searchsorted(col, [refset, refset + 1])
        return self.tables["maps"].slice(int(lo), int(hi - lo))

    def associations(self, source: int | None = None) -> pa.Table:
        """Historical association rows (source, target, refsetId, active), all or one source's."""
        table = self.tables["associations"]
        if source is None:
            return table
        col = self.column_np("associations", "source")
        lo, hi = np.searchsorted(col, [source, source + 1])
        return table.slice(int(lo), int(hi - lo))
