"""The rows of streamed Arrow batches counted per distinct key (the code, with the system
and display when the command reads them), with no Python per row: each key is decided
once, whatever the number of rows that hold it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench.bulk.table import filled

#: How many distinct keys are kept before they are decided and forgotten: the memory of a
#: file whose codes are mostly distinct stays bounded (its keys are decided in parts).
KEPT_KEYS = 500_000


def keys_of(batch: pa.RecordBatch | pa.Table, columns: list[str]) -> pa.Array:
    """One key per row: the column itself for one column; for several, each value written
    with its length in bytes before it (``-`` for a missing one), so that two rows share a
    key exactly when they share every value."""
    arrays = [_array(batch.column(name)) for name in columns]
    if len(arrays) == 1:
        return arrays[0]
    parts = []
    for array in arrays:
        length = pc.cast(pc.binary_length(array), pa.string())
        parts.append(pc.fill_null(pc.binary_join_element_wise(length, array, ":"), "-"))
    return pc.binary_join_element_wise(*parts, "")


@dataclass
class Distinct:
    """The distinct keys seen so far, in the order they first appeared, each with one row
    of its values (``columns``: what the engine decides on) and its number of rows."""

    columns: list[str]
    known: pa.Array = field(default_factory=lambda: pa.array([], type=pa.string()))
    values: list[pa.Table] = field(default_factory=list)
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.known)

    def add(self, batch: pa.RecordBatch) -> None:
        """Count the rows of ``batch`` per key, remembering the keys not seen before."""
        keys = keys_of(batch, self.columns)
        found = pc.index_in(keys, value_set=self.known)
        if not found.null_count:  # every key known (most batches): the positions, no copy
            self._count(found.to_numpy())
            return
        rows = filled(found)
        new = np.flatnonzero(rows < 0)
        if len(new):
            # the new keys in order of first appearance, and each new row's among them (one
            # hash pass; a missing key is one of them, as index_in matches it)
            encoded = pc.dictionary_encode(keys.take(pa.array(new)), null_encoding="encode")
            unique = encoded.dictionary
            where = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64)
            self.values.append(self._values(batch, unique, new, where))
            rows[new] = where + len(self.known)
            self.known = pa.concat_arrays([self.known, unique.cast(self.known.type)])
        self._count(rows)

    def _values(
        self, batch: pa.RecordBatch, unique: pa.Array, new: np.ndarray, where: np.ndarray
    ) -> pa.Table:
        """One row of values for each new key: the key itself for one column, else the
        first row of ``batch`` that has it (``where`` numbers the keys in order)."""
        if len(self.columns) == 1:
            return pa.table({self.columns[0]: unique})
        _, first = np.unique(where, return_index=True)
        table = pa.Table.from_batches([batch]).select(self.columns)
        return table.take(pa.array(new[first]))

    def _count(self, rows: np.ndarray) -> None:
        """Add one row to the key at each of ``rows`` (positions among the known keys)."""
        added = np.bincount(rows, minlength=len(self.known))
        added[: len(self.counts)] += self.counts
        self.counts = added

    def take(self) -> tuple[pa.Table, np.ndarray]:
        """The keys' values (one row each, in order of first appearance) and their row
        counts; then forget them."""
        empty = pa.table({name: pa.array([], type=pa.string()) for name in self.columns})
        values = pa.concat_tables(self.values) if self.values else empty
        counts = self.counts
        self.known = pa.array([], type=pa.string())
        self.values, self.counts = [], np.zeros(0, dtype=np.int64)
        return values, counts


def _array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A column as one Arrow array of strings."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column if column.type == pa.string() else column.cast(pa.string())
