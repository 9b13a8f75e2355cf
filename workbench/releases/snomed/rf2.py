"""Reading an RF2 Snapshot release (a folder or a zip) into Arrow tables.

RF2 files are UTF-8, tab-separated, with a header row and no quoting. Only ``Snapshot`` files
are read (``Full`` and ``Delta`` files are ignored). Every file's header is checked against the
columns RF2 defines for its kind; a malformed row raises ReleaseFormatError naming the file and
the line.

>>> kind_of("SnomedCT/Snapshot/Terminology/sct2_Concept_Snapshot_INT_20250131.txt")
'concept'
>>> kind_of("der2_cRefset_AssociationSnapshot_INT_20250131.txt")
'association'
>>> kind_of("sct2_Concept_Full_INT_20250131.txt") is None
True
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

from workbench.errors import ReleaseFormatError
from workbench.releases import archive
from workbench.releases.archive import ReleaseFile, label, list_files

BASE = ["id", "effectiveTime", "active", "moduleId"]
REFSET = [*BASE, "refsetId", "referencedComponentId"]

#: The columns of each kind of file, as RF2 names them.
HEADERS: dict[str, list[str]] = {
    "concept": [*BASE, "definitionStatusId"],
    "description": [
        *BASE,
        "conceptId",
        "languageCode",
        "typeId",
        "term",
        "caseSignificanceId",
    ],
    "relationship": [
        *BASE,
        "sourceId",
        "destinationId",
        "relationshipGroup",
        "typeId",
        "characteristicTypeId",
        "modifierId",
    ],
    "concrete": [
        *BASE,
        "sourceId",
        "value",
        "relationshipGroup",
        "typeId",
        "characteristicTypeId",
        "modifierId",
    ],
    "textdefinition": [
        *BASE,
        "conceptId",
        "languageCode",
        "typeId",
        "term",
        "caseSignificanceId",
    ],
    "language": [*REFSET, "acceptabilityId"],
    "association": [*REFSET, "targetComponentId"],
    "dependency": [*REFSET, "sourceEffectiveTime", "targetEffectiveTime"],
    "mrcm_domain": [
        *REFSET,
        "domainId",
        "grouped",
        "attributeCardinality",
        "attributeInGroupCardinality",
        "ruleStrengthId",
        "contentTypeId",
    ],
    "mrcm_range": [*REFSET, "rangeConstraint", "attributeRule", "ruleStrengthId", "contentTypeId"],
}

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("concept", re.compile(r"^x?sct2_Concept_[^_]*Snapshot")),
    ("description", re.compile(r"^x?sct2_Description_[^_]*Snapshot")),
    ("textdefinition", re.compile(r"^x?sct2_TextDefinition_[^_]*Snapshot")),
    ("concrete", re.compile(r"^x?sct2_RelationshipConcreteValues_[^_]*Snapshot")),
    ("relationship", re.compile(r"^x?sct2_Relationship_[^_]*Snapshot")),
    ("language", re.compile(r"^x?der2_cRefset_Language[^_]*Snapshot")),
    ("association", re.compile(r"^x?der2_cRefset_Association[^_]*Snapshot")),
    ("dependency", re.compile(r"^x?der2_ssRefset_ModuleDependency[^_]*Snapshot")),
    ("mrcm_domain", re.compile(r"^x?der2_[a-z]*Refset_MRCMAttributeDomain[^_]*Snapshot")),
    ("mrcm_range", re.compile(r"^x?der2_[a-z]*Refset_MRCMAttributeRange[^_]*Snapshot")),
    ("refset", re.compile(r"^x?der2_[a-zA-Z]*Refset_[^_]*Snapshot")),
]

_INT = pa.int64()
_TYPES: dict[str, pa.DataType] = {
    "effectiveTime": pa.int32(),
    "active": pa.int8(),
    "relationshipGroup": pa.int16(),
    "sourceEffectiveTime": pa.int32(),
    "targetEffectiveTime": pa.int32(),
    "grouped": pa.int8(),
}
_STRINGS = {
    "id_uuid",
    "languageCode",
    "term",
    "value",
    "attributeCardinality",
    "attributeInGroupCardinality",
    "rangeConstraint",
    "attributeRule",
}


def kind_of(name: str) -> str | None:
    """Return the kind of RF2 Snapshot file a path names, or None for any other file."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    if not base.endswith(".txt"):
        return None
    for kind, pattern in _PATTERNS:
        if pattern.match(base):
            return kind
    return None


def find_files(path: str | Path) -> list[ReleaseFile]:
    """List the RF2 Snapshot files of a release folder or zip.

    Raises ReleaseFormatError when the path is missing, the zip is truncated or corrupt, or
    there is no concept file (then it is not an RF2 release).
    """
    root = Path(path)
    found: list[ReleaseFile] = []
    for name, zipped in list_files(root, "an RF2 release"):
        kind = kind_of(name)
        if kind is not None and name.endswith(".txt"):
            found.append(ReleaseFile(kind, name, zipped))
    if not any(f.kind == "concept" for f in found):
        raise ReleaseFormatError(
            "not an RF2 Snapshot release: no sct2_Concept_…Snapshot… file was found",
            file=str(root),
        )
    return found


def read(file: ReleaseFile) -> pa.Table:
    """Read one RF2 file into an Arrow table, checking its header and every row.

    Identifier columns become int64 (``id`` of refsets stays a UUID string), effective times
    int32, ``active`` int8; terms and other texts stay strings.
    """
    header_line = archive.first_line(file)
    try:
        header = header_line.decode("utf-8").split("\t")
    except UnicodeDecodeError as exc:
        raise ReleaseFormatError("the header is not UTF-8", file=label(file), line=1) from exc
    expected = HEADERS.get(file.kind)
    if expected is not None and header != expected:
        raise ReleaseFormatError(
            f"wrong header for a {file.kind} file: expected {' '.join(expected)!r}, "
            f"found {' '.join(header)!r}",
            file=label(file),
            line=1,
        )
    if expected is None and header[: len(REFSET)] != REFSET and header[:1] != ["id"]:
        raise ReleaseFormatError(
            f"wrong header for an RF2 file: expected it to start with {' '.join(REFSET)!r}",
            file=label(file),
            line=1,
        )
    types = {name: _type_of(name, file.kind) for name in header}
    if expected is None:
        # another refset: only its common columns are typed; the rest (map targets, rules,
        # descriptors…) stay text, whatever their names
        types = {name: (kind if name in REFSET else pa.string()) for name, kind in types.items()}
    bad: list[int] = []

    def on_invalid(row: Any) -> str:
        bad.append(row.number if row.number is not None else -1)
        return "error"

    try:
        with file.open() as stream:  # streamed: the table is kept, not the file's bytes
            return pacsv.read_csv(
                stream,
                read_options=pacsv.ReadOptions(use_threads=True, block_size=archive.BLOCK_SIZE),
                parse_options=pacsv.ParseOptions(
                    delimiter="\t",
                    quote_char=False,
                    escape_char=False,
                    invalid_row_handler=on_invalid,
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types=types,
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        line, why = _locate(file, header, types)
        if line is None and bad:
            line = bad[0]
        raise ReleaseFormatError(
            f"broken row: {why or exc}", file=label(file), line=line if line else None
        ) from exc


def _type_of(name: str, kind: str) -> pa.DataType:
    if name in _TYPES:
        return _TYPES[name]
    if name in _STRINGS or (name == "id" and kind not in _SCTID_KEYED):
        return pa.string()
    if name.endswith("Id") or name == "id":
        return _INT
    return pa.string()


_SCTID_KEYED = {"concept", "description", "textdefinition", "relationship", "concrete"}


def _locate(
    file: ReleaseFile, header: list[str], types: dict[str, pa.DataType]
) -> tuple[int | None, str | None]:
    """Find the first line that breaks the file's shape or types (only on the error path;
    the file is read again, line by line)."""
    checks = [(i, types[name]) for i, name in enumerate(header)]
    for number, raw in archive.lines(file):
        if number == 1 or not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return number, "the row is not UTF-8"
        cells = text.split("\t")
        if len(cells) != len(header):
            return number, f"expected {len(header)} tab-separated columns, found {len(cells)}"
        for i, kind in checks:
            if pa.types.is_integer(kind) and not cells[i].lstrip("-").isdigit():
                return number, f"column {header[i]} should be a number, not {cells[i]!r}"
    return None, None


def iter_kind(files: list[ReleaseFile], kind: str) -> Iterator[ReleaseFile]:
    """The files of one kind."""
    return (f for f in files if f.kind == kind)
