"""The transitive closure of a polyhierarchy, computed with numpy, stored as CSR arrays.

Concepts are rows ``0..n-1``. ``edges`` are ``(child, parent)`` row pairs. The closure is two
CSR structures: ancestors per concept and descendants per concept, each slice sorted, so that
"is A below B" is one binary search and "everything below B" is one slice.

>>> import numpy as np
>>> c = Closure.build(4, np.array([1, 2, 3, 3]), np.array([0, 0, 1, 2]))
>>> c.ancestors(3).tolist(), c.descendants(0).tolist(), c.is_below(3, 0), c.is_below(0, 3)
([0, 1, 2], [1, 2, 3], True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.int32]
NAMES = ("parents", "children", "up", "down")
#: The files of a saved closure.
FILES = tuple(f"{name}{part}.npy" for name in NAMES for part in ("", "_off"))
Offsets = npt.NDArray[np.int64]


def sorted_unique(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The distinct values, sorted (a plain sort: faster than ``np.unique`` here)."""
    ordered = np.sort(values, kind="stable" if len(values) < 64 else "quicksort")
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def unique_counts(
    values: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The distinct values, sorted, and how often each occurs."""
    ordered = np.sort(values)
    if not len(ordered):
        return ordered, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return ordered[starts], np.diff(np.append(starts, len(ordered)))


@dataclass(frozen=True)
class CSR:
    """Rows grouped by a key row: ``values[offsets[k]:offsets[k+1]]`` (each slice sorted)."""

    offsets: Offsets
    values: Rows

    def __getitem__(self, row: int) -> Rows:
        return self.values[self.offsets[row] : self.offsets[row + 1]]

    @classmethod
    def from_pairs(cls, n: int, keys: npt.NDArray[np.int64], values: npt.NDArray[np.int64]) -> CSR:
        """Group ``values`` by ``keys`` (both row numbers below ``n``), sorted, duplicates gone."""
        combined = sorted_unique(keys.astype(np.int64) * n + values.astype(np.int64))
        keys_sorted = combined // n
        counts = np.bincount(keys_sorted, minlength=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return cls(offsets, (combined % n).astype(np.int32))


@dataclass(frozen=True)
class Closure:
    """Parents, children, ancestors and descendants of every concept row."""

    parents: CSR
    children: CSR
    up: CSR
    down: CSR

    @classmethod
    def build(
        cls, n: int, child: npt.NDArray[np.integer], parent: npt.NDArray[np.integer]
    ) -> Closure:
        """Compute the closure of the ``child -> parent`` edges over ``n`` concept rows.

        Concepts are taken level by level (a concept's level is one more than its deepest
        parent's), so each level's ancestors are its parents plus their known ancestors,
        gathered with vectorised slicing. A cycle (which a valid release never has) stops
        the levelling and its concepts keep their direct parents only.
        """
        child = child.astype(np.int64)
        parent = parent.astype(np.int64)
        keep = child != parent
        child, parent = child[keep], parent[keep]
        child64, parent64 = child.astype(np.int64), parent.astype(np.int64)
        parents = CSR.from_pairs(n, child64, parent64)
        children = CSR.from_pairs(n, parent64, child64)
        level = np.zeros(n, dtype=np.int64)
        for _ in range(n + 1):
            proposed = level.copy()
            np.maximum.at(proposed, child, level[parent] + 1)
            if np.array_equal(proposed, level):
                break
            level = proposed
            if level.max(initial=0) > 10_000:
                break
        anc_off = np.zeros(n, dtype=np.int64)
        anc_len = np.zeros(n, dtype=np.int64)
        buffer = np.empty(max(16, 4 * len(child)), dtype=np.int32)
        used = 0
        edge_level = level[child]
        order = np.argsort(edge_level, kind="stable")
        e_child, e_parent, e_level = child[order], parent[order], edge_level[order]
        bounds = np.searchsorted(e_level, np.arange(1, int(level.max(initial=0)) + 2))
        start = 0
        for stop in bounds:
            if stop == start:
                continue
            c, p = e_child[start:stop], e_parent[start:stop]
            start = stop
            lengths = anc_len[p]
            total = int(lengths.sum())
            rep_child = np.repeat(c, lengths)
            first = np.repeat(anc_off[p], lengths)
            within = np.arange(total, dtype=np.int64) - np.repeat(
                np.cumsum(lengths) - lengths, lengths
            )
            gathered = buffer[first + within].astype(np.int64)
            keys = sorted_unique(np.concatenate([c * n + p, rep_child * n + gathered]))
            owners = keys // n
            values = (keys % n).astype(np.int32)
            if used + len(values) > len(buffer):
                grown = np.empty(max(2 * len(buffer), used + len(values)), dtype=np.int32)
                grown[:used] = buffer[:used]
                buffer = grown
            buffer[used : used + len(values)] = values
            starts = np.flatnonzero(np.concatenate(([True], owners[1:] != owners[:-1])))
            uniq, first_at = owners[starts], starts
            counts = np.diff(np.append(starts, len(owners)))
            anc_off[uniq] = used + first_at
            anc_len[uniq] = counts
            used += len(values)
        rows = np.repeat(np.arange(n, dtype=np.int64), anc_len)
        idx = np.repeat(anc_off, anc_len) + (
            np.arange(len(rows), dtype=np.int64) - np.repeat(np.cumsum(anc_len) - anc_len, anc_len)
        )
        ancestors = buffer[idx].astype(np.int64)
        up = CSR.from_pairs(n, rows, ancestors)
        down = CSR.from_pairs(n, ancestors, rows)
        return cls(parents, children, up, down)

    def arrays(self) -> dict[str, np.ndarray]:
        """The closure as named arrays to save (``parents``, ``parents_off``, … ``down_off``)."""
        found: dict[str, np.ndarray] = {}
        for name in NAMES:
            csr: CSR = getattr(self, name)
            found[f"{name}_off"] = csr.offsets
            found[name] = csr.values
        return found

    def save(self, folder: Path) -> None:
        """Write the closure's arrays as ``.npy`` files into ``folder`` (``FILES``)."""
        for key, array in self.arrays().items():
            np.save(folder / f"{key}.npy", np.ascontiguousarray(array))

    @classmethod
    def open(cls, folder: Path) -> Closure:
        """The closure saved as ``.npy`` files (``arrays``) in ``folder``, memory-mapped."""

        def mapped(name: str) -> np.ndarray:  # a plain view: np.memmap indexes slowly
            return np.load(folder / f"{name}.npy", mmap_mode="r").view(np.ndarray)

        return cls(*(CSR(mapped(f"{n}_off"), mapped(n)) for n in NAMES))

    def ancestors(self, row: int) -> Rows:
        """Every ancestor row of ``row`` (sorted, without the row itself)."""
        return self.up[row]

    def descendants(self, row: int) -> Rows:
        """Every descendant row of ``row`` (sorted, without the row itself)."""
        return self.down[row]

    def is_below(self, row: int, ancestor: int) -> bool:
        """True when ``ancestor`` is a proper ancestor of ``row``."""
        slice_ = self.up[row]
        at = int(np.searchsorted(slice_, ancestor))
        return at < len(slice_) and int(slice_[at]) == ancestor
