"""Reading the LOINC release layout (a folder or a zip) into Arrow tables.

LOINC's files are UTF-8 CSV (a byte-order mark allowed), comma-separated, every field in
double quotes (``""`` inside), values that may span lines. Each file's header must hold the
columns this reader uses (LOINC adds columns between versions: more are fine), every row as
many fields as the header, and code columns codes of their kind (``12345-6``, ``LP…``,
``LA…``, ``LL…``); anything else raises ReleaseFormatError naming the file and the line.

>>> kind_of("Loinc_2.80/LoincTable/Loinc.csv"), kind_of("AccessoryFiles/PartFile/Part.csv")
('loinc', 'part')
>>> kind_of("AccessoryFiles/LinguisticVariants/zhCN5LinguisticVariant.csv")
'variant'
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from workbench.errors import ReleaseFormatError
from workbench.releases import archive
from workbench.releases.archive import ReleaseFile, label, list_files

AXES = ("COMPONENT", "PROPERTY", "TIME_ASPCT", "SYSTEM", "SCALE_TYP", "METHOD_TYP")

#: Where each kind of file is (the end of its path) and the columns this reader needs.
LAYOUT: dict[str, tuple[str, tuple[str, ...]]] = {
    "loinc": (
        "LoincTable/Loinc.csv",
        ("LOINC_NUM", *AXES, "CLASS", "STATUS", "CLASSTYPE", "SHORTNAME", "LONG_COMMON_NAME"),
    ),
    "mapto": ("LoincTable/MapTo.csv", ("LOINC", "MAP_TO")),
    "part": (
        "AccessoryFiles/PartFile/Part.csv",
        ("PartNumber", "PartTypeName", "PartName", "PartDisplayName", "Status"),
    ),
    "partlink": (
        "AccessoryFiles/PartFile/LoincPartLink_Primary.csv",
        ("LoincNumber", "PartNumber", "PartName", "PartTypeName", "Property"),
    ),
    "answerlist": (
        "AccessoryFiles/AnswerFile/AnswerList.csv",
        ("AnswerListId", "AnswerListName", "AnswerStringId", "SequenceNumber", "DisplayText"),
    ),
    "answerlink": (
        "AccessoryFiles/AnswerFile/LoincAnswerListLink.csv",
        ("LoincNumber", "AnswerListId", "AnswerListLinkType"),
    ),
    "hierarchy": (
        "AccessoryFiles/ComponentHierarchyBySystem/ComponentHierarchyBySystem.csv",
        ("PATH_TO_ROOT", "SEQUENCE", "IMMEDIATE_PARENT", "CODE", "CODE_TEXT"),
    ),
    "consumer": ("AccessoryFiles/ConsumerName/ConsumerName.csv", ("LoincNumber", "ConsumerName")),
    "languages": (
        "AccessoryFiles/LinguisticVariants/LinguisticVariants.csv",
        ("ID", "ISO_LANGUAGE", "ISO_COUNTRY", "LANGUAGE_NAME"),
    ),
    "variant": (
        "AccessoryFiles/LinguisticVariants/*LinguisticVariant.csv",
        ("LOINC_NUM", *AXES, "CLASS", "SHORTNAME", "LONG_COMMON_NAME"),
    ),
}

_VARIANT = re.compile(
    r"(?:^|/)AccessoryFiles/LinguisticVariants/([a-z]{2})([A-Z]{2})(\d+)LinguisticVariant\.csv$"
)

TERM = r"[0-9]{1,8}-[0-9]"
#: Code columns and the codes they hold (empty cells are allowed where a column is optional).
CODES: dict[str, dict[str, str]] = {
    "loinc": {"LOINC_NUM": TERM},
    "mapto": {"LOINC": TERM, "MAP_TO": TERM},
    "part": {"PartNumber": r"LP[0-9]+-[0-9]"},
    "partlink": {"LoincNumber": TERM, "PartNumber": r"LP[0-9]+-[0-9]"},
    "answerlist": {"AnswerListId": r"LL[0-9]+-[0-9]", "AnswerStringId": r"(LA[0-9]+-[0-9])?"},
    "answerlink": {"LoincNumber": TERM, "AnswerListId": r"LL[0-9]+-[0-9]"},
    "hierarchy": {"CODE": rf"(LP[0-9]+-[0-9]|{TERM})", "IMMEDIATE_PARENT": r"(LP[0-9]+-[0-9])?"},
    "consumer": {"LoincNumber": TERM},
    "languages": {"ID": r"[0-9]+"},
    "variant": {"LOINC_NUM": TERM},
}


def kind_of(name: str) -> str | None:
    """The kind of LOINC file a path names (None for any other file)."""
    path = name.replace("\\", "/")
    if _VARIANT.search(path):
        return "variant"
    for kind, (suffix, _) in LAYOUT.items():
        if "*" not in suffix and (path == suffix or path.endswith("/" + suffix)):
            return kind
    return None


@dataclass(frozen=True)
class Variant:
    """A linguistic variant file's language, from its name (``deDE15…``): ``de-DE``, 15."""

    language: str
    country: str
    id: int

    @property
    def tag(self) -> str:
        """The BCP-47 tag (``de-DE``)."""
        return f"{self.language}-{self.country}"


def variant_of(file: ReleaseFile) -> Variant:
    """The language of a linguistic variant file, from its name."""
    found = _VARIANT.search(file.name.replace("\\", "/"))
    assert found is not None  # kind_of matched it
    return Variant(found.group(1), found.group(2), int(found.group(3)))


def find_files(path: str | Path) -> list[ReleaseFile]:
    """The LOINC files of a release folder or zip.

    Raises ReleaseFormatError when the path is missing, the zip is damaged, or there is no
    ``LoincTable/Loinc.csv`` (then it is not a LOINC release).
    """
    found = [
        ReleaseFile(kind, name, archive)
        for name, archive in list_files(path, "a LOINC release")
        if (kind := kind_of(name)) is not None
    ]
    loinc = [f for f in found if f.kind == "loinc"]
    if not loinc:
        raise ReleaseFormatError(
            "not a LOINC release: no LoincTable/Loinc.csv was found", file=str(path)
        )
    if len(loinc) > 1:
        raise ReleaseFormatError(
            f"more than one LoincTable/Loinc.csv ({', '.join(label(f) for f in loinc)})",
            file=str(path),
        )
    return found


def read(file: ReleaseFile) -> pa.Table:
    """Read one LOINC CSV file into an Arrow table of strings (empty cells are empty strings),
    checking its header, the shape of every row and its code columns. The file is streamed:
    the table is kept, never the file's bytes."""
    where = label(file)
    try:
        first = archive.first_line(file).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReleaseFormatError("the header is not UTF-8", file=where, line=1) from exc
    header = next(csv.reader([first]), None)
    if not header:
        raise ReleaseFormatError("the file is empty (no header)", file=where, line=1)
    needed = LAYOUT[file.kind][1]
    missing = [c for c in needed if c not in header]
    if missing or len(set(header)) != len(header):
        why = f"lacks {', '.join(missing)}" if missing else "repeats a column"
        raise ReleaseFormatError(
            f"wrong header for {LAYOUT[file.kind][0].rsplit('/', 1)[-1]}: it {why} "
            f"(expected the columns {', '.join(needed)})",
            file=where,
            line=1,
        )
    try:
        with file.open() as stream:
            table = pacsv.read_csv(
                stream,
                read_options=pacsv.ReadOptions(use_threads=True, block_size=archive.BLOCK_SIZE),
                parse_options=pacsv.ParseOptions(newlines_in_values=True),
                convert_options=pacsv.ConvertOptions(
                    column_types={name: pa.string() for name in header},
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
    except pa.ArrowInvalid as exc:
        at, reason = _locate(file, len(header))
        raise ReleaseFormatError(f"broken row: {reason or exc}", file=where, line=at) from exc
    for column, pattern in CODES[file.kind].items():
        ok = pc.match_substring_regex(table.column(column), f"^{pattern}$")
        if not pc.all(ok).as_py():
            index = int(pc.index(ok, False).as_py())
            value = table.column(column)[index].as_py()
            raise ReleaseFormatError(
                f"broken row: {column} {value!r} is not a code of that kind",
                file=where,
                line=line_of(file, index),
            )
    return table


def _records(file: ReleaseFile) -> Iterator[tuple[int, list[str]]]:
    """``(first line, fields)`` of every record after the header (csv.Error, with the
    record's first line in its ``line`` attribute, when one is malformed; only on the error
    path: it is slow). The file is read again, as a stream."""
    with file.open() as stream:
        lines = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.reader(lines, strict=True)
        next(reader, None)
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                exc.line = start  # type: ignore[attr-defined]
                raise
            yield start, fields


def _locate(file: ReleaseFile, width: int) -> tuple[int | None, str | None]:
    """The first line that breaks the file's shape or is not UTF-8 (only on the error path)."""
    for number, line in archive.lines(file):
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return number, "the row is not UTF-8"
    try:
        for start, fields in _records(file):
            if len(fields) != width:
                return start, f"expected {width} fields, found {len(fields)}"
    except csv.Error as exc:
        return getattr(exc, "line", None), f"malformed CSV ({exc})"
    return None, None


def line_of(file: ReleaseFile, index: int) -> int | None:
    """The line where the data row ``index`` (0-based) starts."""
    for at, (start, _fields) in enumerate(_records(file)):
        if at == index:
            return start
    return None
