"""Checking NDJSON: whole chunks in C (pyarrow's JSON reader), single lines with orjson.

A chunk is a run of whole, newline-terminated lines. :func:`chunk_types` reads only each
line's ``resourceType`` with pyarrow, which also checks that every line is one JSON object.
pyarrow is more lenient than JSON in three ways that matter here, so the chunk is also
checked for them in a few passes over its bytes: UTF-8 (it reads strings it skips without
looking), ``NaN`` and ``Infinity`` (it takes them for numbers) and nesting (it reads any
depth; deeper than :data:`MAX_DEPTH` is refused, as the server refuses it). Anything
unusual sends the chunk line by line through :func:`parse_line`, the rule that decides.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
import re2

from workbench import jsonio
from workbench.fhirdata.resource_types import is_resource_type

#: Arrays and objects may nest this deep in a line or a JSON file (as in a request body).
MAX_DEPTH = jsonio.MAX_DEPTH

_PARSE = pajson.ParseOptions(
    explicit_schema=pa.schema([("resourceType", pa.string())]),
    unexpected_field_behavior="ignore",
)
_BLOCK = 1 << 20
# NaN, Inf, Infinity where a value starts (pyarrow reads them; JSON has no such numbers)
_NOT_A_NUMBER = re2.compile(rb"[:,\[]\s*-?(?:NaN|Inf)")
_DROP = bytes(b for b in range(256) if b not in b'"[]{}')
_NOT_OPENING = bytes(b for b in range(256) if b not in b"[{\n")


def most_openings(text: bytes) -> int:
    """The most ``[`` and ``{`` on one line of ``text`` (in strings too): a bound on how
    deep its arrays and objects nest, found in two quick passes.

    >>> most_openings(b'{"a": [1]}\\n{"b": "{"}\\n')
    2
    """
    return max(map(len, text.translate(None, _NOT_OPENING).split(b"\n")))


def too_deep(text: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether arrays and objects nest more than ``limit`` levels in some line of ``text``
    (valid JSON lines). Strings and the innermost pairs are stripped from a copy of the
    brackets and quotes, a pass at a time: a pass removes at most two levels, so text gone
    within ``limit // 2`` passes is shallow enough; anything else is measured exactly.

    >>> too_deep(b'{"a": [[["]]]"]]]}' + b"\\n", 4), too_deep(b"[" * 6 + b"]" * 6, 4)
    (False, True)
    """
    if b"\\" in text:  # escaped backslashes and quotes are string content
        text = text.replace(b"\\\\", b"").replace(b'\\"', b"")
    rest = reduced = text.translate(None, _DROP)
    for _ in range(limit // 2):
        if not rest:
            return False
        shorter = rest.replace(b'""', b"").replace(b"[]", b"").replace(b"{}", b"")
        if len(shorter) == len(rest):
            break
        rest = shorter
    return bool(rest) and jsonio.nesting(reduced) > limit


def plain_json(chunk: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether pyarrow's reading of ``chunk`` can be trusted: UTF-8, no NaN or Infinity,
    no line nested deeper than ``limit``.

    >>> plain_json(b'{"v": 1}\\n'), plain_json(b'{"v": NaN}\\n'), plain_json(b'{"v": "\\xff"}\\n')
    (True, False, False)
    """
    if not chunk.isascii():
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError:
            return False
    if (b"NaN" in chunk or b"Inf" in chunk) and _NOT_A_NUMBER.search(chunk) is not None:
        return False
    return most_openings(chunk) <= limit or not too_deep(chunk, limit)


def _typed(chunk: bytes, block: int) -> pa.Table:
    options = pajson.ReadOptions(block_size=block)
    return pajson.read_json(pa.BufferReader(chunk), read_options=options, parse_options=_PARSE)


def chunk_types(chunk: bytes, lines: int | None = None) -> str | list[str] | None:
    """The resource types of the lines of ``chunk``, read in C: one type name when every
    line has it, a list (one per line) when they differ, ``None`` when the chunk must be
    read line by line (a line that is not a JSON object, is blank, has no or an unknown
    ``resourceType``, is a Bundle, or something pyarrow takes that JSON does not).
    ``lines``: the number of lines, when known.

    >>> chunk_types(b'{"resourceType": "Patient"}\\n{"resourceType": "Patient", "id": "a"}\\n')
    'Patient'
    >>> chunk_types(b'{"resourceType": "Patient"}\\n{"resourceType": "Flag"}\\n')
    ['Patient', 'Flag']
    >>> chunk_types(b'{"resourceType": "Patient"}\\n\\n') is None
    True
    """
    try:
        table = _typed(chunk, _BLOCK)
    except pa.ArrowInvalid as exc:
        if "straddl" not in str(exc):  # a line longer than a block: read in one block
            return None
        try:
            table = _typed(chunk, len(chunk) + 1)
        except pa.ArrowInvalid:
            return None
    column = table.column(0)
    lines = chunk.count(b"\n") if lines is None else lines
    if table.num_rows != lines or column.null_count or not plain_json(chunk):
        return None
    names = pc.unique(column).to_pylist()
    if any(name == "Bundle" or not is_resource_type(name) for name in names):
        return None
    return names[0] if len(names) == 1 else column.to_pylist()


def parse_line(
    line: bytes, limit: int = MAX_DEPTH, brackets: int | None = None
) -> tuple[Any, str | None]:
    """``(value, None)`` for a line of JSON, ``(None, reason)`` for anything else.
    ``brackets``: the line's ``[`` and ``{`` when the caller counted them (a chunk's lines
    are counted at once: :func:`bracket_counts`).

    >>> parse_line(b'{"resourceType": "Flag"}')
    ({'resourceType': 'Flag'}, None)
    >>> parse_line(b'{"resourceType": ')[1]
    'not valid JSON (unexpected end of data: line 1 column 18 (char 17))'
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc})"
    if brackets is None:
        brackets = line.count(b"[") + line.count(b"{")
    if brackets > limit and too_deep(line, limit):
        return None, f"arrays and objects nest more than {limit} levels deep"
    return value, None


def bracket_counts(chunk: bytes) -> np.ndarray:
    """How many ``[`` and ``{`` each newline-terminated line of ``chunk`` holds, counted
    for the whole chunk in one pass (a line's own count would be two passes over it).

    >>> bracket_counts(b'{"a": [1]}\\n{}\\n').tolist()
    [2, 1]
    """
    data = np.frombuffer(chunk, dtype=np.uint8)
    ends = np.flatnonzero(data == 10)
    brackets = np.flatnonzero((data == 91) | (data == 123))  # (few: positions, not a sum)
    return np.diff(np.searchsorted(brackets, ends), prepend=0)


def resource_type_of(value: Any) -> tuple[str | None, str | None]:
    """``(type, None)`` for a FHIR R4 resource, ``(None, reason)`` for anything else.

    >>> resource_type_of({"resourceType": "Observation"})
    ('Observation', None)
    >>> resource_type_of([1, 2])
    (None, 'a JSON array, not an object (a FHIR resource is an object)')
    >>> resource_type_of({"resourceType": "Observations"})
    (None, "resourceType 'Observations' is not a FHIR R4 resource type")
    """
    if not isinstance(value, dict):
        kind = _JSON_KINDS.get(type(value), type(value).__name__)
        return None, f"a JSON {kind}, not an object (a FHIR resource is an object)"
    name = value.get("resourceType")
    if name is None:
        return None, "an object without resourceType (not a FHIR resource)"
    if not is_resource_type(name):
        return None, f"resourceType {name!r} is not a FHIR R4 resource type"
    return name, None


_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}
_JSON_KINDS[type(None)] = "null"
