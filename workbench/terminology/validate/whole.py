"""A whole release code system column-wise: its plainly valid concepts read from the
provider's columns (``concept_columns``, else ``concepts_frame``), with no Python object
per concept, and many codes looked up at once with ``pyarrow.compute.index_in``.

The plainness of a concept is ``plain.plain_member``'s rule over columns: active, not
deprecated, not abstract unless abstract codes are allowed (a code system whose columns
hold the concepts as they are, ``CodeSystemProvider.plain_entries``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench.terminology.provider import CodeSystemProvider

WHOLE_COLUMNS = ("code", "display", "abstract", "inactive")  # read from the provider


@dataclass(frozen=True)
class WholeSystem:
    """The plainly valid concepts of one code system, column-wise.

    ``codes``: every concept's code (Arrow strings, distinct); ``displays``: their displays
    (Arrow strings, or an object array as the provider's frame gave them); ``plain``: which
    are plainly valid; ``version``: the code system's version.
    """

    codes: pa.Array
    displays: pa.Array | np.ndarray
    plain: np.ndarray
    version: str | None

    @classmethod
    def read(cls, cs: CodeSystemProvider, abstract: bool) -> WholeSystem | None:
        """The columns of ``cs`` (``abstract``: abstract concepts are allowed); None when it
        has neither columns nor a frame, or its codes are not all strings."""
        table = cs.concept_columns()
        if table is not None:
            codes, displays = _combined(table.column("code")), _combined(table.column("display"))
            is_abstract = _flags(table.column("abstract"))
            inactive = _flags(table.column("inactive"))
            status = (
                table.column("status").to_numpy(zero_copy_only=False)
                if "status" in table.column_names
                else None
            )
        else:
            frame = cs.concepts_frame()
            if frame is None or not set(frame.columns) >= set(WHOLE_COLUMNS):
                return None
            try:
                codes = pa.array(frame["code"].to_numpy(dtype=object), type=pa.large_string())
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                return None
            if codes.null_count:
                return None
            displays = frame["display"].to_numpy(dtype=object)
            is_abstract = frame["abstract"].to_numpy(dtype=bool)
            inactive = frame["inactive"].to_numpy(dtype=bool)
            status = frame["status"].to_numpy(dtype=object) if "status" in frame else None
        plain = ~inactive & (abstract | ~is_abstract)
        if status is not None:
            plain &= np.asarray(status != "deprecated", dtype=bool)
        return cls(codes, displays, plain, cs.version)

    def lookup(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Which of ``codes`` (an object array of str) are plainly valid concepts, with
        the display and the version of each (None elsewhere), and which are no concept
        of the code system at all (no member of a whole include)."""
        found = pc.index_in(pa.array(codes, type=self.codes.type), value_set=self.codes)
        rows = np.asarray(pc.fill_null(found, -1).to_numpy(), dtype=np.int64)
        hit = np.zeros(len(rows), dtype=bool)
        known = rows >= 0
        hit[known] = self.plain[rows[known]]
        displays = np.empty(len(rows), dtype=object)
        displays[hit] = self._shown(rows[hit])
        versions = np.empty(len(rows), dtype=object)
        versions[hit] = self.version
        return hit, displays, versions, ~known

    def plain_pairs(self) -> list[tuple[str, str | None]]:
        """Every plainly valid concept as (code, display), in the store's order."""
        rows = np.flatnonzero(self.plain)
        codes = self.codes.take(pa.array(rows, type=pa.int64())).to_pylist()
        return list(zip(codes, self._shown(rows).tolist(), strict=True))

    def _shown(self, rows: np.ndarray) -> np.ndarray:
        """The displays of known rows, as an object array."""
        if isinstance(self.displays, np.ndarray):
            return self.displays.take(rows)
        taken = self.displays.take(pa.array(rows, type=pa.int64()))
        return np.asarray(taken.to_numpy(zero_copy_only=False), dtype=object)


def _combined(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One Arrow array: chunks combined, one chunk as it is (a column of a release's
    memory-mapped store is then read where it lies, not copied whole on first use)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _flags(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A boolean column as numpy (nulls as False)."""
    filled = pc.fill_null(column, False)
    return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=bool)
