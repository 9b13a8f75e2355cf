"""Tables read in streamed batches for the command line: CSV, TSV, Parquet (a file or a
folder), NDJSON and Excel, the chosen columns always as strings (``12``, never ``12.0``).

A column of JSON objects (NDJSON, a Parquet struct or list column) is read as objects, and a
column argument may be a dotted path into one (``code.coding``), both by the rule of
``workbench.bulk.paths``: a row whose value is an object (a Coding, a CodeableConcept) is
the string OBJECT followed by its JSON text (keys sorted: equal objects are one string), which
``objects`` reads back. CSV, TSV and Excel cells are text, never read as JSON."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from zipfile import BadZipFile

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.dataset as ds

from workbench.bulk import paths
from workbench.cli.ahead import ahead
from workbench.extras import require

#: Rows per batch of the formats read row by row in Python (NDJSON, Excel).
BATCH_ROWS = 256_000
#: Rows per batch of the formats Arrow reads (CSV, TSV, Parquet): more, as what a batch costs
#: besides its rows (the hash of the codes seen so far, rebuilt by each look-up) is paid once
#: per batch; a batch of 1,000,000 short codes is tens of MB.
ARROW_BATCH_ROWS = 1_000_000
#: pandas' string dtype on Arrow memory, missing values NaN (``str`` in pandas 3)
TEXT = pd.StringDtype("pyarrow", na_value=float("nan"))
FORMATS = {
    ".csv": "CSV",
    ".tsv": "TSV",
    ".parquet": "Parquet",
    ".ndjson": "NDJSON",
    ".jsonl": "NDJSON",
    ".xlsx": "Excel",
}


#: What starts a row that holds a JSON object (its JSON text follows): a character no FHIR
#: string holds, so no code read as text starts with it.
OBJECT = "\x00"
#: The NDJSON records whose keys are the file's columns (a FHIR resource leaves out the
#: elements it lacks: the first record alone would miss them).
SAMPLE_RECORDS = 1_000

#: What a reader raises for a file that is not of its format, truncated or badly encoded
#: (a zip that is not one, or lacks a part, for Excel).
UNREADABLE = (pa.ArrowException, OSError, ValueError, UnicodeDecodeError, KeyError, BadZipFile)


class InputError(Exception):
    """A file that cannot be read as asked: one line for the user, exit code 2."""


@dataclass(frozen=True)
class Table:
    """A file to read: its path, its format name, its column names and those that may
    hold JSON objects (``nested``: every NDJSON column, Parquet struct and list columns)."""

    path: Path
    kind: str
    columns: list[str]
    nested: frozenset[str] = frozenset()

    def require(self, *names: str | None, dotted: bool = True) -> None:
        """Raise InputError naming the first of ``names`` that is neither a column nor
        (``dotted``) a path into a column that may hold objects."""
        for name in names:
            if name is None or (self.path_of(name) if dotted else name in self.columns):
                continue
            raise InputError(
                f"{self.path}: no column {name!r}; the columns are "
                + ", ".join(repr(c) for c in self.columns)
            )

    def path_of(self, name: str) -> paths.Path | None:
        """``name`` as a column or a path into one (None: neither); InputError for a path
        into a column of text."""
        found = paths.split(self.columns, name)
        if found is not None and found.steps and found.column not in self.nested:
            held = (
                "which holds no objects (it is no struct or list column)"
                if self.kind == "Parquet"
                else f"whose cells are text (a {self.kind} cell is never read as JSON)"
            )
            raise InputError(
                f"{self.path}: the path {name!r} goes into the column {found.column!r}, {held}"
            )
        return found


def open_table(path: str | Path) -> Table:
    """Look at ``path``: its format (from its extension, or a folder of Parquet files) and
    its columns. Raises InputError for a missing, empty or unreadable file."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    kind = "Parquet" if path.is_dir() else FORMATS.get(path.suffix.lower())
    if kind is None:
        raise InputError(
            f"{path}: unknown format; use one of " + ", ".join(sorted(FORMATS)) + " or a folder"
        )
    if path.is_file() and path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty")
    try:
        columns, nested = _columns(path, kind)
    except UNREADABLE as exc:
        raise InputError(f"{path}: not a readable {kind} file ({_first_line(exc)})") from None
    if not columns:
        raise InputError(f"{path}: the file has no columns")
    return Table(path, kind, columns, nested)


#: The formats read row by row in Python (the others are read by Arrow).
ROW_FORMATS = ("NDJSON", "Excel")


def batches(table: Table, columns: list[str]) -> Iterator[pd.DataFrame]:
    """The ``columns`` of ``table`` in frames (of the rows ``arrow_batches`` gives), as
    strings (None for a missing value), a JSON object as its dict (``objects``). Raises
    InputError for a truncated or badly encoded file."""
    for batch in arrow_batches(table, columns):
        if table.kind in ROW_FORMATS or any(marks_objects(table, c) for c in batch.columns):
            yield pd.DataFrame(
                {name: objects(batch.column(name)) for name in columns}, dtype=object
            )
        else:
            yield frame(batch)


def arrow_batches(table: Table, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """The ``columns`` of ``table`` (column names, or paths into columns of objects: see
    ``Table.path_of``) in Arrow batches of at most ARROW_BATCH_ROWS rows (of BATCH_ROWS for
    the formats read in Python), as Arrow strings, a row that holds an object as OBJECT and
    its JSON text. Raises InputError for a truncated or badly encoded file."""
    wanted = [table.path_of(name) or paths.Path(name, name, ()) for name in columns]
    if table.kind in ROW_FORMATS:
        for rows in _rows(table, wanted):
            arrays = [
                pa.array(list(values), type=pa.string()) for values in zip(*rows, strict=True)
            ]
            yield pa.record_batch(arrays, names=columns)
        return
    read = list(dict.fromkeys(path.column for path in wanted))
    with _readable(table):
        scanner = _dataset(table.path, table.kind, read).scanner(
            columns=read, batch_size=ARROW_BATCH_ROWS
        )
        # read and cast on a thread of their own, one batch ahead of the caller's look-up
        yield from ahead(_as_strings(batch, wanted) for batch in scanner.to_batches())


def _rows(table: Table, wanted: list[paths.Path]) -> Iterator[list[list[str | None]]]:
    """An NDJSON or Excel file's columns (``wanted``) in lists of at most BATCH_ROWS rows."""
    with _readable(table):
        if table.kind == "NDJSON":
            yield from _ndjson(table.path, wanted)
        else:
            yield from _excel(table.path, [path.column for path in wanted])


def objects(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A column of ``arrow_batches`` as Python values: a row that holds an object as its
    dict, the others as their strings (None for a missing value)."""
    values = np.asarray(column.to_pylist(), dtype=object)
    marked = pc.fill_null(pc.starts_with(column, OBJECT), False)
    if pc.any(marked).as_py():
        where = np.flatnonzero(np.asarray(marked))
        values[where] = [orjson.loads(text[1:]) for text in values[where]]
    return values


def marks_objects(table: Table, column: pa.Array | pa.ChunkedArray) -> bool:
    """Whether a column of ``arrow_batches`` has a row that holds an object (never for a
    file that holds none: the values of CSV, TSV, Excel and flat Parquet are not looked at)."""
    if not table.nested:
        return False
    return bool(pc.any(pc.fill_null(pc.starts_with(column, OBJECT), False)).as_py())


@contextmanager
def _readable(table: Table) -> Iterator[None]:
    """Raise InputError for what the readers raise on a truncated or badly encoded file."""
    try:
        yield
    except UNREADABLE as exc:
        raise InputError(
            f"{table.path}: not a readable {table.kind} file ({_first_line(exc)})"
        ) from None


def frame(batch: pa.RecordBatch | pa.Table) -> pd.DataFrame:
    """Arrow string columns as a frame of pandas' Arrow-backed strings (NaN for a missing
    value), the buffers kept as they are: no Python object per row."""
    return pd.DataFrame(
        {name: pd.Series(pd.array(batch.column(name), dtype=TEXT)) for name in batch.schema.names}
    )


def count_rows(table: Table) -> int | None:
    """The number of rows when it is known without reading the data (Parquet)."""
    if table.kind != "Parquet":
        return None
    return int(ds.dataset(table.path, format="parquet").count_rows())


def _columns(path: Path, kind: str) -> tuple[list[str], frozenset[str]]:
    """The columns of a file, and those that may hold objects: the keys of the first
    SAMPLE_RECORDS records of NDJSON (in order of first appearance), a Parquet file's struct,
    list and map columns."""
    if kind == "NDJSON":
        keys: dict[str, None] = {}
        with path.open("rb") as file:
            for number, line in enumerate(file, start=1):
                if line.strip():
                    keys.update(dict.fromkeys(_record(line, number)))
                if number >= SAMPLE_RECORDS:
                    break
        return list(keys), frozenset(keys)
    if kind == "Excel":
        with _sheet_rows(path) as rows:
            return [str(c) for c in next(rows, ()) if c is not None], frozenset()
    schema = _dataset(path, kind, []).schema
    nested = frozenset(f.name for f in schema if pa.types.is_nested(f.type))
    return list(schema.names), nested


def _dataset(path: Path, kind: str, columns: list[str]) -> ds.Dataset:
    if kind == "Parquet":
        return ds.dataset(path, format="parquet")
    file_format = ds.CsvFileFormat(
        parse_options=pacsv.ParseOptions(delimiter="\t" if kind == "TSV" else ","),
        convert_options=pacsv.ConvertOptions(
            column_types={name: pa.string() for name in columns}, strings_can_be_null=True
        ),
    )
    return ds.dataset(path, format=file_format)


def _as_strings(batch: pa.RecordBatch, wanted: list[paths.Path]) -> pa.RecordBatch:
    """The ``wanted`` columns of a batch as Arrow strings (numbers written as their text;
    a struct or list column walked row by row, an object as OBJECT and its JSON text)."""
    arrays = []
    for path in wanted:
        column = batch.column(path.column)
        if pa.types.is_nested(column.type):
            column = pa.array([_cell(v, path) for v in column.to_pylist()], type=pa.string())
        arrays.append(column if column.type == pa.string() else column.cast(pa.string()))
    return pa.record_batch(arrays, names=[path.name for path in wanted])


def _record(line: bytes, number: int) -> dict[str, object]:
    """One NDJSON line's object; ValueError naming the line for anything else."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"line {number}: {exc}") from None
    if not isinstance(record, dict):
        raise ValueError(f"line {number}: not a JSON object")
    return record


def _ndjson(path: Path, wanted: list[paths.Path]) -> Iterator[list[list[str | None]]]:
    rows: list[list[str | None]] = []
    with path.open("rb") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            record = _record(line, number)
            row = []
            for want in wanted:  # a string code taken as it is: most rows of most files
                value = record.get(want.column)
                row.append(value if type(value) is str and not want.steps else _cell(value, want))
            rows.append(row)
            if len(rows) >= BATCH_ROWS:
                yield rows
                rows = []
    if rows:
        yield rows


@contextmanager
def _sheet_rows(path: Path) -> Iterator[Iterator[tuple[object, ...]]]:
    """The rows of a workbook's first sheet as value tuples, streamed (openpyxl's read-only
    mode keeps one row in memory, not the sheet)."""
    require("openpyxl", "quality", f"reading Excel files such as {path}")
    from openpyxl import load_workbook

    book = load_workbook(path, read_only=True, data_only=True)
    try:
        yield book.worksheets[0].iter_rows(values_only=True)
    finally:
        book.close()


def _excel(path: Path, columns: list[str]) -> Iterator[list[list[str | None]]]:
    with _sheet_rows(path) as rows:
        header = [str(c) if c is not None else None for c in next(rows, ())]
        where = [header.index(name) for name in columns]
        chunk: list[list[str | None]] = []
        for row in rows:
            chunk.append([_text(row[i]) if i < len(row) else None for i in where])
            if len(chunk) >= BATCH_ROWS:
                yield chunk
                chunk = []
        if chunk:
            yield chunk


def _cell(value: object, path: paths.Path) -> str | None:
    """A row's value at the end of ``path`` as ``arrow_batches`` gives it: an object as
    OBJECT and its JSON text (keys sorted), anything else as a code's text."""
    if path.steps or isinstance(value, dict | list):
        value = paths.row_value(value, path.steps, path.name)
        if isinstance(value, dict):
            return OBJECT + orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return _text(value)


def _text(value: object) -> str | None:
    """A cell or JSON value as a code's text: a whole number without ``.0``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
