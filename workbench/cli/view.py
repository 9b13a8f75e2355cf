"""``workbench view``: a SQL on FHIR ViewDefinition run over FHIR data files, its rows
written batch by batch as the view makes them (CSV, Parquet or NDJSON), and one line on
stderr saying what was written, read, refused and skipped."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson
import polars as pl

from workbench.cli.reading import InputError
from workbench.fhirdata import ReadError, read_fhir
from workbench.views import prepare_view
from workbench.views.runner import Skipped

#: The forms ``-o`` writes, by the file's extension (without ``-o``: CSV on stdout).
OUTPUTS = (".csv", ".parquet", ".ndjson")


def check_output(path: Path | None) -> None:
    """Refuse, before anything is read, an output the command cannot write: an unknown
    extension, a folder, a file in a folder that does not exist."""
    if path is None:
        return
    if path.suffix.lower() not in OUTPUTS:
        raise InputError(f"-o {path}: write one of " + ", ".join(OUTPUTS))
    if path.is_dir():
        raise InputError(f"-o {path}: is a folder (name a file)")
    if not path.parent.is_dir():
        raise InputError(f"-o {path}: the folder {path.parent} does not exist")


def check_inputs(definition: Path, data: tuple[Path, ...]) -> Any:
    """The view file's JSON, and every data path there, checked before any content is
    loaded (a mistake costs no wait)."""
    if not data:
        raise InputError("give the data after the view: files or folders of FHIR resources")
    for path in data:
        if not path.exists():
            raise InputError(f"{path}: no such file or folder")
    if not definition.is_file():
        raise InputError(f"{definition}: no such file (the view is a ViewDefinition's JSON)")
    try:
        return orjson.loads(definition.read_bytes())
    except orjson.JSONDecodeError as error:
        raise InputError(f"{definition}: not JSON ({error})") from None


@dataclass
class Outcome:
    """What a run did: the rows written, the resources read (all, and of the view's type),
    the reader's problems and the resources the view skipped."""

    resource: str
    target: str
    read: int = 0
    own: int = 0
    problems: list[ReadError] = field(default_factory=list)
    rows: int = 0
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Whether every resource was read and none skipped (exit code 0, else 1)."""
        return not self.problems and not self.skipped

    def line(self) -> str:
        """The summary: rows written, resources read, read problems, resources skipped."""
        return "; ".join(
            [
                _count(self.rows, "row", "rows") + f" written to {self.target}",
                _count(self.read, "resource", "resources") + f" read ({self.own} {self.resource})",
                _first(self.problems, "read problem", "read problems", _where),
                _first(self.skipped, f"{self.resource} skipped", f"{self.resource} skipped", _why),
            ]
        )


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _first(items: list[Any], one: str, many: str, first: Callable[[Any], str]) -> str:
    """``no read problems``, ``1 read problem: <first>``, ``3 read problems, the first:
    <first>``."""
    if not items:
        return f"no {many}"
    if len(items) == 1:
        return f"1 {one}: {first(items[0])}"
    return f"{len(items)} {many}, the first: {first(items[0])}"


def _where(error: ReadError) -> str:
    place = error.source if error.line is None else f"{error.source}:{error.line}"
    return f"{place}: {error.reason}"


def _why(skipped: Skipped) -> str:
    return skipped.reason


def run(wb: Any, definition: Any, data: list[Path], output: Path | None) -> Outcome:
    """Check and compile the view (``ViewDefinitionError`` names the column), then read the
    data with ``read_fhir`` (all paths together) and write the rows to ``output`` (by its
    extension; None: CSV on stdout) batch by batch, as the view makes them. A file is
    written under a temporary name and renamed when done, so a failed run leaves no half
    file behind (and an older file of that name as it was). The reader's warnings (such as
    a resource in a file named for another type: it is read) are not problems."""
    prepared = prepare_view(definition, terminology=wb)
    empty = prepared.empty
    outcome = Outcome(prepared.resource, "stdout" if output is None else str(output))
    with read_fhir(data) as found, _writer(output, empty) as write:
        outcome.read, outcome.own = len(found), found.counts.get(prepared.resource, 0)
        outcome.problems = [e for e in found.errors if e.severity != "warning"]
        for frame, skipped in prepared.batches(found):
            write(frame.cast(empty.schema, strict=False))
            outcome.rows += frame.height
            outcome.skipped += skipped
    return outcome


@contextlib.contextmanager
def _writer(output: Path | None, empty: pl.DataFrame) -> Iterator[Any]:
    """A function that writes one batch of rows, in the form the output's extension names
    (CSV to stdout without one); the file appears, whole, when the block ends well."""
    if output is None:
        yield _Csv(sys.stdout.buffer, empty).write
        return
    kind = output.suffix.lower()
    handle, name = tempfile.mkstemp(prefix=f".{output.name}.", dir=output.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            form = _Parquet if kind == ".parquet" else _Ndjson if kind == ".ndjson" else _Csv
            writer = form(stream, empty)
            yield writer.write
            writer.close()
        os.replace(name, output)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


class _Csv:
    """CSV with a header row (written at once, so a view with no rows still has it); a
    list or struct cell as JSON text, booleans ``true``/``false``, nulls empty."""

    def __init__(self, stream: IO[bytes], empty: pl.DataFrame) -> None:
        self.stream = stream
        self.nested = [n for n, t in empty.schema.items() if isinstance(t, pl.List | pl.Struct)]
        self.write(empty, header=True)

    def write(self, frame: pl.DataFrame, *, header: bool = False) -> None:
        """Append the batch's rows."""
        if self.nested:
            frame = frame.with_columns(_json_text(frame[name]) for name in self.nested)
        buffer = io.BytesIO()
        frame.write_csv(buffer, include_header=header)
        self.stream.write(buffer.getvalue())
        self.stream.flush()

    def close(self) -> None:
        """Nothing to finish."""


def _json_text(column: pl.Series) -> pl.Series:
    """A list or struct column as JSON text (null stays null)."""
    texts = [None if v is None else orjson.dumps(v).decode() for v in column.to_list()]
    return pl.Series(column.name, texts, dtype=pl.String)


class _Ndjson:
    """One JSON object per row, every column in the view's order, a null as ``null``; lists
    and structs as JSON arrays and objects."""

    def __init__(self, stream: IO[bytes], empty: pl.DataFrame) -> None:
        self.stream = stream

    def write(self, frame: pl.DataFrame) -> None:
        """Append the batch's rows."""
        if frame.height:
            buffer = io.BytesIO()
            frame.write_ndjson(buffer)
            self.stream.write(buffer.getvalue())

    def close(self) -> None:
        """Nothing to finish."""


class _Parquet:
    """Parquet with the view's column types (lists and structs nested), one row group per
    batch; a view with no rows still has its schema."""

    def __init__(self, stream: IO[bytes], empty: pl.DataFrame) -> None:
        import pyarrow.parquet as pq

        self.schema = empty.to_arrow().schema
        self.parquet = pq.ParquetWriter(stream, self.schema)

    def write(self, frame: pl.DataFrame) -> None:
        """Append the batch's rows."""
        if frame.height:
            self.parquet.write_table(frame.to_arrow().cast(self.schema))

    def close(self) -> None:
        """Write the footer."""
        self.parquet.close()
