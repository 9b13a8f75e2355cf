"""Tables read in streamed batches for the command line: CSV, TSV, Parquet (a file or a
folder), NDJSON and Excel, the chosen columns always as strings (``12``, never ``12.0``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from zipfile import BadZipFile

import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds

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


#: What a reader raises for a file that is not of its format, truncated or badly encoded
#: (a zip that is not one, or lacks a part, for Excel).
UNREADABLE = (pa.ArrowException, OSError, ValueError, UnicodeDecodeError, KeyError, BadZipFile)


class InputError(Exception):
    """A file that cannot be read as asked: one line for the user, exit code 2."""


@dataclass(frozen=True)
class Table:
    """A file to read: its path, its format name and its column names."""

    path: Path
    kind: str
    columns: list[str]

    def require(self, *names: str | None) -> None:
        """Raise InputError naming the first of ``names`` that is not a column."""
        for name in names:
            if name is not None and name not in self.columns:
                raise InputError(
                    f"{self.path}: no column {name!r}; the columns are "
                    + ", ".join(repr(c) for c in self.columns)
                )


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
        columns = _columns(path, kind)
    except UNREADABLE as exc:
        raise InputError(f"{path}: not a readable {kind} file ({_first_line(exc)})") from None
    if not columns:
        raise InputError(f"{path}: the file has no columns")
    return Table(path, kind, columns)


#: The formats read row by row in Python (the others are read by Arrow).
ROW_FORMATS = ("NDJSON", "Excel")


def batches(table: Table, columns: list[str]) -> Iterator[pd.DataFrame]:
    """The ``columns`` of ``table`` in frames (of the rows ``arrow_batches`` gives), as
    strings (None for a missing value). Raises InputError for a truncated or badly encoded file."""
    if table.kind in ROW_FORMATS:
        for rows in _rows(table, columns):
            yield pd.DataFrame(rows, columns=columns, dtype=object)
    else:
        for batch in arrow_batches(table, columns):
            yield frame(batch)


def arrow_batches(table: Table, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """The ``columns`` of ``table`` in Arrow batches of at most ARROW_BATCH_ROWS rows (of
    BATCH_ROWS for the formats read in Python), as Arrow strings. Raises InputError for a
    truncated or badly encoded file."""
    if table.kind in ROW_FORMATS:
        for rows in _rows(table, columns):
            arrays = [
                pa.array(list(values), type=pa.string()) for values in zip(*rows, strict=True)
            ]
            yield pa.record_batch(arrays, names=columns)
        return
    with _readable(table):
        scanner = _dataset(table.path, table.kind, columns).scanner(
            columns=columns, batch_size=ARROW_BATCH_ROWS
        )
        # read and cast on a thread of their own, one batch ahead of the caller's look-up
        yield from ahead(_as_strings(batch, columns) for batch in scanner.to_batches())


def _rows(table: Table, columns: list[str]) -> Iterator[list[list[str | None]]]:
    """An NDJSON or Excel file's ``columns`` in lists of at most BATCH_ROWS rows."""
    with _readable(table):
        yield from (_ndjson if table.kind == "NDJSON" else _excel)(table.path, columns)


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


def _columns(path: Path, kind: str) -> list[str]:
    if kind == "NDJSON":
        with path.open("rb") as file:
            return list(orjson.loads(file.readline()))
    if kind == "Excel":
        with _sheet_rows(path) as rows:
            return [str(c) for c in next(rows, ()) if c is not None]
    return list(_dataset(path, kind, []).schema.names)


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


def _as_strings(batch: pa.RecordBatch, columns: list[str]) -> pa.RecordBatch:
    """The ``columns`` of a batch as Arrow strings (numbers written as their text)."""
    arrays = []
    for name in columns:
        column = batch.column(name)
        arrays.append(column if column.type == pa.string() else column.cast(pa.string()))
    return pa.record_batch(arrays, names=columns)


def _ndjson(path: Path, columns: list[str]) -> Iterator[list[list[str | None]]]:
    rows: list[list[str | None]] = []
    with path.open("rb") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise ValueError(f"line {number}: {exc}") from None
            if not isinstance(record, dict):
                raise ValueError(f"line {number}: not a JSON object")
            rows.append([_text(record.get(name)) for name in columns])
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
