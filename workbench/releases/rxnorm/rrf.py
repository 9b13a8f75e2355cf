"""The files of an RxNorm full release (RRF: pipe-delimited, every row ending with a pipe),
as NLM distributes it: a folder or zip holding ``rrf/RXNCONSO.RRF``, ``rrf/RXNREL.RRF``,
``rrf/RXNSAT.RRF`` and ``rrf/RXNCUI.RRF``, with the release date in the name of its readme
(``Readme_full_01062025.txt``) or of the folder or zip (``RxNorm_full_01062025``).

Columns, in NLM's order (RxNorm Technical Documentation, section 12):

- RXNCONSO: RXCUI LAT TS LUI STT SUI ISPREF RXAUI SAUI SCUI SDUI SAB TTY CODE STR SRL SUPPRESS CVF
- RXNREL: RXCUI1 RXAUI1 STYPE1 REL RXCUI2 RXAUI2 STYPE2 RELA RUI SRUI SAB SL DIR RG SUPPRESS CVF
- RXNSAT: RXCUI LUI SUI RXAUI STYPE CODE ATUI SATUI ATN SAB ATV SUPPRESS CVF
- RXNCUI: CUI1 VER_START VER_END CARDINALITY CUI2
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from workbench.errors import ReleaseFormatError
from workbench.releases import archive

COLUMNS: dict[str, list[str]] = {
    "RXNCONSO": [
        "RXCUI",
        "LAT",
        "TS",
        "LUI",
        "STT",
        "SUI",
        "ISPREF",
        "RXAUI",
        "SAUI",
        "SCUI",
        "SDUI",
        "SAB",
        "TTY",
        "CODE",
        "STR",
        "SRL",
        "SUPPRESS",
        "CVF",
    ],
    "RXNREL": [
        "RXCUI1",
        "RXAUI1",
        "STYPE1",
        "REL",
        "RXCUI2",
        "RXAUI2",
        "STYPE2",
        "RELA",
        "RUI",
        "SRUI",
        "SAB",
        "SL",
        "DIR",
        "RG",
        "SUPPRESS",
        "CVF",
    ],
    "RXNSAT": [
        "RXCUI",
        "LUI",
        "SUI",
        "RXAUI",
        "STYPE",
        "CODE",
        "ATUI",
        "SATUI",
        "ATN",
        "SAB",
        "ATV",
        "SUPPRESS",
        "CVF",
    ],
    "RXNCUI": ["CUI1", "VER_START", "VER_END", "CARDINALITY", "CUI2"],
}
# the columns each file keeps (the others are read and dropped)
KEEP: dict[str, tuple[str, ...]] = {
    "RXNCONSO": ("RXCUI", "SAB", "TTY", "STR", "SUPPRESS"),
    "RXNREL": ("RXCUI1", "RXCUI2", "RELA", "SAB"),
    "RXNSAT": ("RXCUI", "ATN", "SAB", "ATV"),
    "RXNCUI": ("CUI1", "VER_END", "CUI2"),
}
_DATE = re.compile(r"(?:full|prescribe|weekly|monthly)_(\d{8})", re.IGNORECASE)


@dataclass(frozen=True)
class Release:
    """The four RRF files of a release, and its version (the release date, MMDDYYYY)."""

    files: dict[str, archive.ReleaseFile]
    version: str | None

    def all(self) -> list[archive.ReleaseFile]:
        """The files, in a fixed order (what the release cache hashes)."""
        return [self.files[name] for name in COLUMNS]


def find(path: str | Path) -> Release:
    """The RRF files of the release at ``path``; ReleaseFormatError when any is missing."""
    listed = archive.list_files(path, "an RxNorm release")
    found: dict[str, archive.ReleaseFile] = {}
    version = None
    for name, zipped in listed:
        base = name.replace("\\", "/").rsplit("/", 1)[-1]
        stem = base.upper().removesuffix(".RRF")
        if base.upper().endswith(".RRF") and stem in COLUMNS and stem not in found:
            found[stem] = archive.ReleaseFile(stem, name, zipped)
        elif base.lower().startswith("readme") and version is None:
            hit = _DATE.search(base)
            version = hit.group(1) if hit else None
    if "RXNCONSO" not in found:
        raise ReleaseFormatError("not an RxNorm release: no rrf/RXNCONSO.RRF in it", file=str(path))
    missing = [name for name in COLUMNS if name not in found]
    if missing:
        raise ReleaseFormatError(
            "an incomplete RxNorm release: " + ", ".join(f"{m}.RRF" for m in missing) + " missing",
            file=str(path),
        )
    if version is None:
        hit = _DATE.search(Path(path).name)
        version = hit.group(1) if hit else None
    return Release(found, version)


@contextmanager
def _stream(file: archive.ReleaseFile) -> Iterator[IO[bytes]]:
    """The file's bytes as a stream (a zip member is read as it is decompressed)."""
    with file.open() as stream:
        yield stream


def read(file: archive.ReleaseFile) -> Iterator[tuple[int, pa.RecordBatch]]:
    """The rows of an RRF file in batches of the kept columns, with the 1-based line number
    of each batch's first row. ReleaseFormatError names the file and line of a row with the
    wrong number of fields (or without its closing pipe)."""
    names = COLUMNS[file.kind]
    bad: list[tuple[int, int]] = []

    def invalid(row: pcsv.InvalidRow) -> str:
        bad.append((row.expected_columns, row.actual_columns))
        return "skip"

    schema_names = [*names, "_end"]
    options = pcsv.ReadOptions(column_names=schema_names, block_size=1 << 22, encoding="utf8")
    parse = pcsv.ParseOptions(
        delimiter="|", quote_char=False, escape_char=False, invalid_row_handler=invalid
    )
    convert = pcsv.ConvertOptions(
        column_types={n: pa.string() for n in schema_names},
        include_columns=[*KEEP[file.kind], "_end"],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    where = archive.label(file)
    line = 1
    try:
        with _stream(file) as raw:
            reader = pcsv.open_csv(raw, options, parse, convert)
            for batch in reader:
                if bad:
                    break
                ends = batch.column(batch.schema.get_field_index("_end"))
                if len(ends) and pc.any(pc.not_equal(ends, "")).as_py():
                    at = pc.index(pc.not_equal(ends, ""), True).as_py()
                    raise ReleaseFormatError(
                        f"a row that does not end with '|' after its {len(names)} fields",
                        file=where,
                        line=line + at,
                    )
                yield line, batch.drop_columns(["_end"])
                line += batch.num_rows
    except (pa.ArrowInvalid, UnicodeDecodeError, zipfile.BadZipFile, OSError, EOFError) as exc:
        if not bad:
            raise ReleaseFormatError(f"unreadable RRF file ({exc})", file=where) from exc
    if bad:
        at, count = _first_bad_line(file, len(names))
        raise ReleaseFormatError(
            f"a row with {count} fields, expected {len(names)} (each followed by '|')",
            file=where,
            line=at,
        )


def _first_bad_line(file: archive.ReleaseFile, width: int) -> tuple[int, int]:
    """The line number and field count of the first row that is not ``width`` fields and a
    closing pipe (only read when the fast reader found one)."""
    with _stream(file) as raw, io.TextIOWrapper(raw, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            text = line.rstrip("\r\n")
            fields = text.split("|")
            if len(fields) != width + 1 or fields[-1] != "":
                return number, len(fields) - (1 if fields[-1] == "" else 0)
    return 0, 0


def require_digits(column: pa.Array, what: str, file: archive.ReleaseFile, line: int) -> None:
    """ReleaseFormatError (file and line) at the first value of ``column`` that is not an
    RXCUI (digits)."""
    ok = pc.and_(pc.utf8_is_digit(column), pc.greater(pc.utf8_length(column), 0))
    if len(column) and not pc.all(ok).as_py():
        at = pc.index(ok, False).as_py()
        raise ReleaseFormatError(
            f"{what} '{column[at].as_py()}' is not an RXCUI (digits)",
            file=archive.label(file),
            line=line + at,
        )
