"""Data hygiene on import: control characters and duplicate ids with conflicting content.

- **Control characters.** A text field holding a C0 control character other than tab, line
  feed and carriage return (NUL, BEL, ESC…) or DEL is an error naming the file, the line, the
  column and the character (``check_text``): such a term cannot be a display, and a NUL cuts
  it short in many consumers. The line is the physical line of the file where the first one
  is.
- **Duplicate ids.** Rows that share an id (``unique``) are kept once when they are equal in
  every column; rows with the same id and different content (a description with two terms)
  are an error naming both rows: file, line and the row itself. There is no rule that could
  say which one is right, and a Snapshot holds one row per component.

>>> import pyarrow as pa
>>> control(pa.table({"term": ["fine", "bad\\x00term"]}), ["term"])
(1, 'term', 'U+0000 (NUL)')
>>> control(pa.table({"term": ["tabs\\tand\\nbreaks are fine"]}), ["term"]) is None
True
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench.errors import ReleaseFormatError
from workbench.releases.archive import ReleaseFile, label

#: C0 controls but tab, line feed and carriage return; and DEL (RE2 syntax, for Arrow).
CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
_CONTROL = re.compile(CONTROL.encode())
_NAMES = {0: "NUL", 7: "BEL", 8: "BS", 0x0B: "VT", 0x0C: "FF", 0x1B: "ESC", 0x7F: "DEL"}


def _name(char: str) -> str:
    code = ord(char)
    return f"U+{code:04X} ({_NAMES.get(code) or unicodedata.name(char, 'control')})"


def text_columns(table: pa.Table) -> list[str]:
    """The string columns of a table."""
    return [
        f.name
        for f in table.schema
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]


def control(table: pa.Table, columns: list[str]) -> tuple[int, str, str] | None:
    """(row, column, character) of the first control character in those columns, or None."""
    first: tuple[int, str, str] | None = None
    for column in columns:
        hits = pc.match_substring_regex(table.column(column), CONTROL)
        if not pc.any(hits).as_py():
            continue
        row = int(pc.index(hits, True).as_py())
        if first is None or row < first[0]:
            value = str(table.column(column)[row].as_py())
            char = next(c for c in value if _CONTROL.match(c.encode()))
            first = (row, column, _name(char))
    return first


def _lines(file: ReleaseFile) -> Iterator[tuple[int, bytes]]:
    """The file's lines (1-based), streamed (only on the error path)."""
    with file.open() as stream:
        for number, line in enumerate(stream, start=1):
            yield number, line.rstrip(b"\r\n")


def check_text(
    table: pa.Table,
    file: ReleaseFile,
    columns: list[str] | None = None,
    line_of: Callable[[int], int] | None = None,
) -> None:
    """ReleaseFormatError naming the file, line, column and character when a text column
    (``columns``, else every string column) of the table read from ``file`` holds a
    control character. The line is ``line_of(row)``, else the first of the file that holds
    one (found by reading it again, only then)."""
    found = control(table, text_columns(table) if columns is None else columns)
    if found is None:
        return
    row, column, char = found
    if line_of is not None:
        line: int | None = line_of(row)
    else:
        line = next((n for n, text in _lines(file) if _CONTROL.search(text)), None)
    raise ReleaseFormatError(
        f"a control character, {char}, in the column {column}: terms and other texts may "
        "not hold control characters",
        file=label(file),
        line=line,
    )


def unique(table: pa.Table, key: str, what: str, files: list[ReleaseFile]) -> pa.Table:
    """The table with rows sharing an id (column ``key``) kept once when they are equal.

    Raises ReleaseFormatError naming both rows (file and line, found among ``files``) when
    two rows share an id and differ."""
    ids = table.column(key).to_numpy()
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    twins = np.flatnonzero(ordered[1:] == ordered[:-1])
    if not len(twins):
        return table
    drop = np.zeros(len(ids), dtype=bool)
    for at in twins:
        a, b = int(order[at]), int(order[at + 1])
        if table.slice(a, 1).to_pylist() != table.slice(b, 1).to_pylist():
            _conflict(str(ordered[at]), what, files)
        drop[b] = True
    return table.filter(pa.array(~drop))


def _conflict(value: str, what: str, files: list[ReleaseFile]) -> None:
    """Raise the error naming the rows whose first field is ``value``."""
    needle = value.encode()
    rows = [
        (label(file), number, text.decode("utf-8", "replace"))
        for file in files
        for number, text in _lines(file)
        if text.split(b"\t", 1)[0] == needle
    ]
    shown = " and ".join(f"{where}, line {n}: {text!r}" for where, n, text in rows[:2])
    where, line = (rows[1][0], rows[1][1]) if len(rows) > 1 else (None, None)
    raise ReleaseFormatError(
        f"{what} {value} appears twice with different content ({shown}); a Snapshot holds "
        "one row per id",
        file=where,
        line=line,
    )
