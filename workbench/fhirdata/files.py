"""Files of FHIR data: which files a source names, what type a file's name declares, and
reading one file (NDJSON, or a JSON document holding a resource or a Bundle).

A path that does not exist, or a file named explicitly whose kind is not known, is the
caller's mistake: :class:`~workbench.errors.LoadError` at once, before anything is read.
Problems inside files are records. Gzip is recognised by its first bytes, whatever the name.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import orjson

from workbench import jsonio
from workbench.errors import LoadError
from workbench.fhirdata.intake import Intake, SourceLog
from workbench.fhirdata.ndjson import read_ndjson
from workbench.fhirdata.resource_types import is_resource_type

NDJSON_SUFFIXES = (".ndjson", ".jsonl")
JSON_SUFFIXES = (".json",)
_GZIP_MAGIC = b"\x1f\x8b"
_NAME_PARTS = re.compile(r"[._\-\s]+")
_READ_ERRORS = (OSError, EOFError, zlib.error)  # gzip.BadGzipFile is an OSError


def kind_of(path: Path) -> str | None:
    """``"ndjson"``, ``"json"`` or ``None`` by the file's name (``.gz`` after it or not).

    >>> kind_of(Path("Observation.000.ndjson.gz")), kind_of(Path("a.json")), kind_of(Path("a.csv"))
    ('ndjson', 'json', None)
    """
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(NDJSON_SUFFIXES):
        return "ndjson"
    return "json" if name.endswith(JSON_SUFFIXES) else None


def declared_type(path: Path) -> str | None:
    """The resource type a bulk-data file's name declares: the one part of the name (split
    at dots, dashes and underscores) that is an R4 resource type, else ``None``.

    >>> [declared_type(Path(n)) for n in ("Observation.ndjson", "1.Patient.ndjson", "x.ndjson")]
    ['Observation', 'Patient', None]
    """
    name = path.name
    for suffix in (".gz", ".ndjson", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    found = {part for part in _NAME_PARTS.split(name) if is_resource_type(part)}
    return found.pop() if len(found) == 1 else None


def files_of(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The data files of ``paths``: a folder's ``*.ndjson``, ``*.jsonl``, ``*.json`` (and
    gzipped) files, recursively and sorted, without hidden ones; a file as it is. Raises
    LoadError for a missing path or a file of another kind."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file() and kind_of(p) and not p.name.startswith(".")
                )
            )
        elif path.is_file():
            if kind_of(path) is None:
                raise LoadError(
                    f"{path}: not a FHIR data file (.ndjson, .jsonl or .json, or gzipped)"
                )
            found.append(path)
        else:
            raise LoadError(f"{path}: no such file or folder")
    return found


def open_file(path: Path) -> BinaryIO:
    """A data file opened for reading, gunzipped when it is gzip (by its first bytes)."""
    with path.open("rb") as start:
        gzipped = start.read(2) == _GZIP_MAGIC
    return gzip.open(path, "rb") if gzipped else path.open("rb")  # type: ignore[return-value]


def read_file(intake: Intake, path: Path) -> None:
    """Read one data file into ``intake``; a file that breaks off (a truncated gzip, a
    read error) keeps what was read before and gives a record."""
    log = intake.log(str(path))
    try:
        with open_file(path) as stream:
            if kind_of(path) == "ndjson":
                log.declared = declared_type(path)
                read_ndjson(intake, stream, log)
            else:
                _read_json(intake, stream, log)
    except _READ_ERRORS as exc:
        log.error(None, f"could not be read to the end ({type(exc).__name__}: {exc})")
    log.close()


def _read_json(intake: Intake, stream: BinaryIO, log: SourceLog) -> None:
    """A JSON document: one resource or a Bundle, read whole (at most ``max_json_bytes``),
    decimals kept digit for digit. A file holding one JSON object per line is read as
    NDJSON."""
    limit = intake.limits.max_json_bytes
    data = stream.read(limit + 1)
    if len(data) > limit:
        log.error(None, f"larger than {limit:,} bytes (max_json_bytes): not read")
        return
    data = data.removeprefix(b"\xef\xbb\xbf")
    if not data.strip():
        return
    try:
        value = jsonio.loads_body(data, exact_decimals=True)
    except jsonio.BodyError as exc:
        if _looks_like_ndjson(data):
            read_ndjson(intake, io.BytesIO(data), log)
        else:
            text = str(exc)
            log.error(None, text if text.startswith("arrays") else f"not valid JSON ({text})")
        return
    intake.add_value(value, log, None)


def _looks_like_ndjson(data: bytes) -> bool:
    first, newline, _ = data.strip().partition(b"\n")
    try:
        return bool(newline) and isinstance(orjson.loads(first), dict)
    except orjson.JSONDecodeError:
        return False
