"""Reading NDJSON: a stream cut into chunks of whole lines, each checked in C when it can be
(:func:`~workbench.fhirdata.checks.chunk_types`) and line by line when it must.

A chunk whose lines are all of one type is kept as it was read, bytes and all. A line longer
than ``max_line_bytes`` is skipped as it streams past (never held whole). A Bundle on a line
is not kept itself: its entries' resources are, as a bulk-data reader expects.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from workbench import jsonio
from workbench.fhirdata.checks import bracket_counts, chunk_types, parse_line, resource_type_of
from workbench.fhirdata.intake import Intake, Limits, SourceLog

_BOM = b"\xef\xbb\xbf"


def read_ndjson(intake: Intake, stream: BinaryIO, log: SourceLog) -> None:
    """Read every line of ``stream`` into ``intake``, problems into ``log``."""
    for chunk, number in line_chunks(stream, intake.limits.batch_bytes, intake.limits, log):
        read_chunk(intake, chunk, log, number)
        if log.not_json:
            return


def line_chunks(
    stream: BinaryIO, size: int, limits: Limits, log: SourceLog
) -> Iterator[tuple[bytes, int]]:
    """``stream`` cut into chunks of whole, newline-terminated lines of about ``size`` bytes,
    each with the number of its first line (a byte-order mark dropped, a last line without
    a newline given one). A line longer than ``max_line_bytes`` is skipped as it streams
    past (never held whole), with a record in ``log``."""
    number = 1  # the number of the first line in `rest`
    rest = b""
    skipping = False
    first = True
    while block := stream.read(size):
        if first:
            block = block.removeprefix(_BOM)
            first = False
        if skipping:  # the rest of a line too long to keep
            end = block.find(b"\n")
            if end < 0:
                continue
            block, skipping, number = block[end + 1 :], False, number + 1
        data = rest + block if rest else block
        end = data.rfind(b"\n") + 1
        chunk, rest = data[:end], data[end:]
        if chunk:
            yield chunk, number
            number += chunk.count(b"\n")
        if len(rest) > limits.max_line_bytes:
            log.error(number, _too_long(limits.max_line_bytes))
            rest, skipping = b"", True
    if rest and not skipping:
        yield rest + b"\n", number


def _too_long(limit: int) -> str:
    return f"a line longer than {limit:,} bytes (max_line_bytes): skipped"


def longest_line(chunk: bytes) -> int:
    """The length of the longest line of ``chunk`` (counted in C)."""
    ends = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == ord("\n"))
    return int(np.diff(ends, prepend=-1).max()) - 1 if len(ends) else len(chunk)


def read_chunk(intake: Intake, chunk: bytes, log: SourceLog, first: int) -> int:
    """Read the newline-terminated lines of ``chunk``, the first of them line ``first``;
    return the number of the line after them."""
    if intake.sink is not None:  # a scan parses every line itself
        return _read_lines(intake, chunk, log, first)
    lines = chunk.count(b"\n")
    limit = intake.limits.max_line_bytes
    fits = len(chunk) <= limit or longest_line(chunk) <= limit
    types = chunk_types(chunk, lines) if fits else None
    if isinstance(types, str):
        intake.store.add_chunk(types, chunk, lines)
        log.parsed_one()
        if log.declared is not None and types != log.declared:
            log.other_type(first, types, lines)
    elif types is not None:
        _read_mixed(intake, chunk, types, log, first)
    else:
        _read_lines(intake, chunk, log, first)
    return first + lines


def _read_mixed(intake: Intake, chunk: bytes, types: list[str], log: SourceLog, first: int) -> None:
    """Lines checked in C, of several types: grouped by type, bytes as read."""
    log.parsed_one()
    groups: dict[str, list[bytes]] = {}
    for number, (line, name) in enumerate(zip(chunk.split(b"\n"), types, strict=False), first):
        groups.setdefault(name, []).append(line)
        if log.declared is not None and name != log.declared:
            log.other_type(number, name)
    for name, group in groups.items():
        intake.store.add_chunk(name, b"\n".join(group) + b"\n", len(group))


def _read_lines(intake: Intake, chunk: bytes, log: SourceLog, first: int) -> int:
    """Each line on its own: the rule for anything the C check did not take (and for a
    scan); return the number of the line after the chunk's."""
    counts = bracket_counts(chunk).tolist()
    for number, line, brackets in zip(
        range(first, first + len(counts)), chunk.split(b"\n"), counts, strict=False
    ):
        if not line or line.isspace():  # (not strip(): that copies every line)
            continue
        read_line(intake, line, log, number, brackets)
        if log.not_json:
            break
    return first + len(counts)


def read_line(
    intake: Intake, line: bytes, log: SourceLog, number: int, brackets: int | None = None
) -> None:
    """Read one JSON text (line ``number`` of its source; ``brackets``: its ``[`` and ``{``
    when counted already) into ``intake``: a resource, a Bundle's resources, or a record in
    ``log`` saying why it is neither (longer than ``max_line_bytes`` included)."""
    limit = intake.limits.max_line_bytes
    if len(line) > limit:
        log.error(number, _too_long(limit))
        return
    value, reason = parse_line(line, brackets=brackets)
    if reason is not None:
        log.error(number, reason, syntax=value is None and reason.startswith("not valid"))
        return
    log.parsed_one()
    resource_type, reason = resource_type_of(value)
    if resource_type is None:
        log.error(number, str(reason))
    elif resource_type == "Bundle":  # its entries, decimals kept digit for digit
        intake.add_value(jsonio.loads(line, exact_decimals=True), log, number)
    else:
        if log.declared is not None and resource_type != log.declared:
            log.other_type(number, resource_type)
        intake.add_line(resource_type, line, value)
