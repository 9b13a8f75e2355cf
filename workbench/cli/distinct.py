"""The rows of streamed Arrow batches counted per distinct key (the code, with the system
and display when the command reads them), with no Python per row: each key is decided
once, whatever the number of rows that hold it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
    of its values (``columns``: what the engine decides on) and its number of rows.

    A single column read dictionary-encoded (Parquet) is counted through its dictionary:
    the dictionary's entries are looked up once per dictionary (a Parquet row group), its
    rows are counted by their indices with numpy."""

    columns: list[str]
    known: pa.Array = field(default_factory=lambda: pa.array([], type=pa.string()))
    values: list[pa.Table] = field(default_factory=list)
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: the last dictionary seen, and the position of each of its entries among the known
    #: keys (-1: not seen; one more slot, last, for a missing value)
    dictionary: pa.Array | None = None
    at: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.known)

    def add(self, batch: pa.RecordBatch) -> None:
        """Count the rows of ``batch`` per key, remembering the keys not seen before."""
        column = batch.column(self.columns[0])
        if len(self.columns) == 1 and pa.types.is_dictionary(column.type):
            rows = self._encoded(column)
        else:
            rows = self._plain(batch)
        added = np.bincount(rows, minlength=len(self.known))
        added[: len(self.counts)] += self.counts
        self.counts = added

    def _plain(self, batch: pa.RecordBatch) -> np.ndarray:
        """Each row's key position, the keys made from the values."""
        keys = keys_of(batch, self.columns)
        found = pc.index_in(keys, value_set=self.known)
        rows = np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), np.int64)
        new = np.flatnonzero(rows < 0)
        if len(new):
            taken = keys.take(pa.array(new))
            unique = pc.unique(taken)
            where = np.asarray(pc.index_in(taken, value_set=unique).to_numpy(), np.int64)
            _, first = np.unique(where, return_index=True)  # where numbers them in order
            table = pa.Table.from_batches([batch]).select(self.columns)
            self._learn(unique, table.take(pa.array(new[first])))
            rows[new] = where + len(self.known) - len(unique)
        return rows

    def _encoded(self, column: pa.DictionaryArray) -> np.ndarray:
        """Each row's key position, through the column's dictionary."""
        dictionary = _array(column.dictionary)
        if self.dictionary is None or not self.dictionary.equals(dictionary):
            found = pc.index_in(dictionary, value_set=self.known)
            missing = pc.index_in(pa.array([None], type=pa.string()), value_set=self.known)
            self.at = np.append(_filled(found), _filled(missing))
            self.dictionary = dictionary
        ids = _filled(pc.fill_null(column.indices, len(dictionary)))
        rows = self.at.take(ids)
        new = np.flatnonzero(rows < 0)
        if len(new):
            used, first = np.unique(ids[new], return_index=True)
            used = used[np.argsort(first, kind="stable")]  # in order of first appearance
            keys = dictionary.take(pa.array(used, mask=used == len(dictionary)))
            start = len(self.known)
            self._learn(keys, pa.table({self.columns[0]: keys}))
            self.at[used] = np.arange(start, start + len(used))
            self.dictionary = dictionary  # (``_learn`` forgets it)
            rows = self.at.take(ids)
        return rows

    def _learn(self, keys: pa.Array, values: pa.Table) -> None:
        """Add new keys (and one row of values for each) after the known ones."""
        self.values.append(values)
        self.known = pa.concat_arrays([self.known, keys.cast(self.known.type)])
        self.dictionary = None

    def take(self) -> tuple[pa.Table, np.ndarray]:
        """The keys' values (one row each, in order of first appearance) and their row
        counts; then forget them."""
        empty = pa.table({name: pa.array([], type=pa.string()) for name in self.columns})
        values = pa.concat_tables(self.values) if self.values else empty
        counts = self.counts
        self.known = pa.array([], type=pa.string())
        self.values, self.counts, self.dictionary = [], np.zeros(0, dtype=np.int64), None
        return values, counts


def _filled(found: pa.Array) -> np.ndarray:
    """Positions as int64 numpy, -1 for a null."""
    return np.asarray(pc.fill_null(found, -1).to_numpy(zero_copy_only=False), dtype=np.int64)


def _array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A column as one Arrow array of strings."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    return column if column.type == pa.string() else column.cast(pa.string())
