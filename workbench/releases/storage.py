"""The columnar store every release kind imports into: Arrow and numpy files written once
into a cache folder that appears atomically, then memory-mapped when the store is reopened.

``ColumnarStore`` is the base of the kinds' stores. A subclass declares its files (``TABLES``,
``ARRAYS``, ``HIERARCHY``), its ``FORMAT`` (bump it when the files change: an older store is
then imported again, never misread) and how its codes are looked up (``NUMERIC``, ``CODE``);
the base gives the rest:

- the concept table ``concepts.arrow``, one row per concept, with its code column and the
  ``active`` column (one convention for every kind: True for an active concept);
- the row of a code (a binary search over sorted integer codes, else a mapping made on first
  use), the codes as strings, a concept column's values at rows;
- the rows of a long table that belong to one concept row (``LONG``: tables sorted by a key);
- the closure of the hierarchy (``closure``) when the store keeps one;
- an atomic build (``build``: a temporary folder renamed into place, ``meta.json`` last,
  recording the size and digests of every file written: ``integrity``) and pickling as the
  folder (Dask workers reopen it).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from workbench.releases import integrity
from workbench.releases.closure import FILES as CLOSURE_FILES
from workbench.releases.closure import Closure

__all__ = [
    "ColumnarStore",
    "build_atomically",
    "is_store",
    "mapped",
    "open_store",
    "read_table",
    "write_table",
]


def write_table(table: pa.Table, path: Path) -> None:
    """Write an Arrow IPC file, one record batch, so that every column maps to one
    zero-copy array when it is read back."""
    table = table.combine_chunks()
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def read_table(path: Path) -> pa.Table:
    """An Arrow IPC file, memory-mapped (pages come in as they are touched)."""
    source = pa.memory_map(str(path), "r")
    return pa.ipc.open_file(source).read_all()


def mapped(path: Path) -> np.ndarray:
    """A memory-mapped .npy file as a plain ndarray view (np.memmap's own indexing costs
    microseconds per call; the view shares the same mapped pages)."""
    return np.load(path, mmap_mode="r").view(np.ndarray)


def is_store(path: Path, store_format: int) -> bool:
    """True when ``path`` holds a complete store (its ``meta.json``) of that format."""
    meta = path / "meta.json"
    if not meta.is_file():
        return False
    try:
        return bool(json.loads(meta.read_text()).get("format") == store_format)
    except (OSError, ValueError):
        return False


def open_store(
    path: Path, files: tuple[str, ...], tables: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, pa.Table]]:
    """A store's ``meta.json`` and its Arrow tables (``{name}.arrow``), mapped.

    Raises FileNotFoundError when one of ``files`` is missing (a damaged store)."""
    meta: dict[str, Any] = json.loads((path / "meta.json").read_text())
    missing = [name for name in files if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(f"the store {path} lacks {', '.join(missing)}")
    return meta, {name: read_table(path / f"{name}.arrow") for name in tables}


def build_atomically(dest: Path, build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """Run ``build`` on a temporary folder beside ``dest`` and rename it into place once
    complete, with ``meta.json`` (what ``build`` returns, plus the import time and the record
    of every file written: ``integrity.record_files``) written last, all flushed to disk.

    When ``build`` raises, nothing is left at ``dest`` or beside it. When ``dest`` appeared
    meanwhile (another process imported the same release), that store is kept.
    """
    started = time.perf_counter()
    tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        meta = build(tmp)
        meta["files"] = integrity.record_files(tmp)
        meta["importSeconds"] = round(time.perf_counter() - started, 2)
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        integrity.sync_folder(tmp)
        try:
            os.replace(tmp, dest)
        except OSError:
            if not dest.exists():
                raise
            shutil.rmtree(tmp)  # another process made it meanwhile: that store is kept
        return meta
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


class ColumnarStore:
    """An opened store folder: its tables and arrays memory-mapped, rows found by code.

    Opening reads ``meta.json`` and maps the files; pages come into memory as they are
    touched. Raises FileNotFoundError, ValueError or an Arrow error for a damaged store.
    """

    #: The layout's version, kept in ``meta.json``: bump it when the files change.
    FORMAT: ClassVar[int] = 1
    #: The Arrow tables (``{name}.arrow``); ``concepts`` holds one row per concept.
    TABLES: ClassVar[tuple[str, ...]] = ("concepts",)
    #: The numpy arrays (``{name}.npy``), mapped into ``arrays``.
    ARRAYS: ClassVar[tuple[str, ...]] = ()
    #: True when the store keeps the closure of a hierarchy (``closure.FILES``).
    HIERARCHY: ClassVar[bool] = False
    #: The concept column holding the codes.
    CODE: ClassVar[str] = "code"
    #: True when the codes are integers in ascending row order (found by binary search);
    #: else they are strings, found through a mapping made on first use.
    NUMERIC: ClassVar[bool] = False
    #: The long tables whose rows are sorted by a concept row: table -> that key column.
    LONG: ClassVar[dict[str, str]] = {}

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.meta, self.tables = open_store(self.path, self.files(), self.TABLES)
        self.arrays: dict[str, np.ndarray] = {
            name: mapped(self.path / f"{name}.npy") for name in self.ARRAYS
        }
        concepts = self.tables["concepts"]
        for column in (self.CODE, "active"):
            if column not in concepts.schema.names:
                raise ValueError(f"the store {self.path} has no concept column '{column}'")
        self.n: int = concepts.num_rows
        self._np: dict[str, np.ndarray] = {}

    @classmethod
    def files(cls) -> tuple[str, ...]:
        """The files a complete store holds (besides ``meta.json``)."""
        closure = CLOSURE_FILES if cls.HIERARCHY else ()
        return (
            *(f"{name}.arrow" for name in cls.TABLES),
            *(f"{name}.npy" for name in cls.ARRAYS),
            *closure,
        )

    @classmethod
    def is_store(cls, path: Path) -> bool:
        """True when ``path`` holds a complete store of this format."""
        return is_store(path, cls.FORMAT)

    @classmethod
    def build(cls, dest: Path, write: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
        """Make the store at ``dest``: ``write(folder)`` writes the files into a temporary
        folder and returns the metadata, which gets this ``FORMAT``; the folder is renamed
        into place once complete (on an error nothing is left behind)."""

        def written(tmp: Path) -> dict[str, Any]:
            return {**write(tmp), "format": cls.FORMAT}

        return build_atomically(dest, written)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its folder (Dask ships code systems to workers, which reopen it)."""
        return {"path": str(self.path)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]

    # --- columns ------------------------------------------------------------------------

    def column_np(self, table: str, column: str) -> np.ndarray:
        """A table column as a numpy array (zero-copy for numbers; remembered)."""
        key = f"{table}.{column}"
        found = self._np.get(key)
        if found is None:
            found = self.tables[table].column(column).to_numpy()
            self._np[key] = found
        return found

    def value(self, column: str, row: int) -> Any:
        """One concept column's value at a row."""
        return self.tables["concepts"].column(column)[row].as_py()

    def column(self, column: str, rows: npt.NDArray[np.integer]) -> list[Any]:
        """A concept column's values at many rows."""
        return self.tables["concepts"].column(column).take(pa.array(rows)).to_pylist()

    @cached_property
    def active(self) -> npt.NDArray[np.bool_]:
        """The active flag of every concept row."""
        column = self.tables["concepts"].column("active")
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=bool)

    # --- codes and rows ---------------------------------------------------------------------

    @cached_property
    def ids(self) -> npt.NDArray[np.int64]:
        """The integer code of every row (ascending); only for ``NUMERIC`` stores."""
        if not self.NUMERIC:
            raise TypeError(f"{type(self).__name__} keeps string codes, not integer ids")
        found: npt.NDArray[np.int64] = self.column_np("concepts", self.CODE)
        return found

    @cached_property
    def codes(self) -> pa.Array:
        """Every code as a string, in row order."""
        column = self.tables["concepts"].column(self.CODE)
        if self.NUMERIC:
            column = column.cast(pa.string())
        return column.combine_chunks()

    @cached_property
    def index(self) -> dict[str, int]:
        """Row by code (string codes; made on first use)."""
        return dict(zip(self.codes.to_pylist(), range(self.n), strict=True))

    def number(self, code: Any) -> int | None:
        """The integer a code stands for in a ``NUMERIC`` store (None: not a code): digits
        only, at most 18 of them."""
        if not isinstance(code, str) or not code.isdigit() or len(code) > 18:
            return None
        return int(code)

    def row(self, code: Any) -> int:
        """The row of a code, or -1."""
        if not self.NUMERIC:
            return self.index.get(code, -1) if isinstance(code, str) else -1
        value = self.number(code)
        if value is None:
            return -1
        ids = self.ids
        at = int(np.searchsorted(ids, value))
        return at if at < self.n and int(ids[at]) == value else -1

    def rows(self, codes: npt.NDArray[np.int64] | Iterable[Any]) -> npt.NDArray[np.int64]:
        """Rows of many codes at once (-1 where unknown); integer codes of a ``NUMERIC``
        store are looked up vectorised."""
        if self.NUMERIC and isinstance(codes, np.ndarray) and codes.dtype.kind in "iu":
            ids = self.ids
            at = np.searchsorted(ids, codes)
            at = np.minimum(at, max(self.n - 1, 0))
            found = ids[at] == codes if self.n else np.zeros(len(codes), bool)
            return np.where(found, at, -1)
        return np.array([self.row(c) for c in codes], dtype=np.int64)

    # --- long tables and the hierarchy ------------------------------------------------------

    def slice_by(self, table: str, key: str, value: int) -> pa.Table:
        """The rows of ``table`` (sorted by its column ``key``) whose key is ``value``."""
        keys = self.column_np(table, key)
        lo, hi = np.searchsorted(keys, [value, value + 1])
        return self.tables[table].slice(int(lo), int(hi - lo))

    def rows_of(self, table: str, row: int) -> pa.Table:
        """The rows of a long table (``LONG``) that belong to one concept row."""
        return self.slice_by(table, self.LONG[table], row)

    @cached_property
    def closure(self) -> Closure:
        """Parents, children, ancestors and descendants of every row (mapped CSR arrays);
        only for stores that keep a hierarchy (``HIERARCHY``)."""
        if not self.HIERARCHY:
            raise TypeError(f"{type(self).__name__} keeps no hierarchy")
        return Closure.open(self.path)
