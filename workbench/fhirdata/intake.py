"""Where read values go: resources into the store, Bundles opened, problems recorded per
source.

:class:`SourceLog` keeps one source's records with three rules: a source none of whose
lines is JSON gives one record, not one per line (and its reading stops after
:data:`NOT_JSON_LINES` such lines); lines of another type than the file name declares give
one warning for the file; past :data:`MAX_RECORDS` records a source's further problems are
counted in one last record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from workbench import jsonio
from workbench.fhirdata.checks import resource_type_of
from workbench.fhirdata.records import WARNING, ReadError
from workbench.fhirdata.store import ChunkStore
from workbench.loading import counted

MiB = 1 << 20
#: Lines read from the start of a source, none of them JSON, before it counts as not JSON.
NOT_JSON_LINES = 100
#: Records kept per source; the rest are counted.
MAX_RECORDS = 1000


@dataclass(frozen=True)
class Limits:
    """How :func:`~workbench.fhirdata.read_fhir` reads: chunk size, memory, size limits."""

    batch_bytes: int = 4 * MiB
    memory_bytes: int = 256 * MiB
    max_line_bytes: int = 16 * MiB
    max_json_bytes: int = 256 * MiB
    max_bundle_depth: int = 4


class SourceLog:
    """The records of one source (a file, or the resources passed in)."""

    def __init__(self, records: list[ReadError], source: str) -> None:
        self.records = records
        self.source = source
        self.parsed = False
        self.held: list[ReadError] = []
        self.kept = 0
        self.dropped = 0
        self.declared: str | None = None
        self.others: Counter[str] = Counter()
        self.first_other: int | None = None

    @property
    def not_json(self) -> bool:
        """Whether the first :data:`NOT_JSON_LINES` lines all failed to parse."""
        return not self.parsed and len(self.held) >= NOT_JSON_LINES

    def error(self, line: int | None, reason: str, *, syntax: bool = False) -> None:
        """Record a problem; ``syntax``: the value was not JSON at all."""
        record = ReadError(self.source, line, reason)
        if syntax and not self.parsed:
            self.held.append(record)
        else:
            self._keep(record)

    def _keep(self, record: ReadError) -> None:
        if self.kept < MAX_RECORDS:
            self.records.append(record)
            self.kept += 1
        else:
            self.dropped += 1

    def parsed_one(self) -> None:
        """A line parsed as JSON: the source is JSON, its held records are kept."""
        if not self.parsed:
            self.parsed = True
            for record in self.held:
                self._keep(record)
            self.held.clear()

    def other_type(self, line: int, resource_type: str, count: int = 1) -> None:
        """``count`` lines from ``line`` on are ``resource_type``, not the declared type."""
        self.others[resource_type] += count
        if self.first_other is None:
            self.first_other = line

    def close(self) -> None:
        """Write the records held back or summed up."""
        if len(self.held) == 1:
            self._keep(self.held[0])
        elif self.held:
            first = self.held[0]
            self._keep(
                ReadError(
                    self.source,
                    None,
                    f"not JSON: none of its first {counted(len(self.held), 'line')} parsed "
                    f"(line {first.line}: {first.reason}); the file was not read further",
                )
            )
        if self.others:
            kinds = ", ".join(f"{kind} {n:,}" for kind, n in sorted(self.others.items()))
            total = counted(sum(self.others.values()), "line")
            reason = (
                f"{total} of another type than {self.declared}, the type the file's name "
                f"declares ({kinds}): kept under their own types"
            )
            self._keep(ReadError(self.source, self.first_other, reason, WARNING))
        if self.dropped:
            more = counted(self.dropped, "more problem")
            self.records.append(ReadError(self.source, None, f"{more} not listed"))


#: What a scan hands each resource to: its type, the parsed value, and the line it was read
#: from (None for a resource of a JSON file, a Bundle or a dict).
Sink = Callable[[str, Any, "bytes | None"], None]


class Intake:
    """The store and the records of one reading. With a ``sink`` (a scan), every line is
    parsed here and each resource handed to the sink as it is read, nothing stored."""

    def __init__(self, limits: Limits, spill_dir: Any = None, sink: Sink | None = None) -> None:
        self.limits = limits
        self.store = ChunkStore(
            batch_bytes=limits.batch_bytes, memory_bytes=limits.memory_bytes, spill_dir=spill_dir
        )
        self.records: list[ReadError] = []
        self.sink = sink

    def add_line(self, resource_type: str, line: bytes, value: Any) -> None:
        """One resource read from a line: to the sink, else into the store as read."""
        if self.sink is not None:
            self.sink(resource_type, value, line)
        else:
            self.store.add_line(resource_type, line)

    def log(self, source: str) -> SourceLog:
        """A new source's log."""
        return SourceLog(self.records, source)

    def add_value(
        self, value: Any, log: SourceLog, line: int | None, path: str = "", depth: int = 0
    ) -> None:
        """One parsed JSON value (at ``path`` in its Bundle, if in one): a resource is kept,
        a Bundle's entries are read, anything else is recorded."""
        where = f"{path}: " if path else ""
        resource_type, reason = resource_type_of(value)
        if resource_type is None:
            log.error(line, f"{where}{reason}")
        elif resource_type == "Bundle":
            self._add_bundle(value, log, line, path or "Bundle", depth + 1)
        elif self.sink is not None:
            self.sink(resource_type, value, None)
        else:
            try:
                data = jsonio.dumps(value)
            except (TypeError, orjson.JSONEncodeError) as exc:
                log.error(line, f"{where}not writable as JSON ({exc})")
                return
            self.store.add_line(resource_type, data)

    def _add_bundle(
        self, bundle: dict[str, Any], log: SourceLog, line: int | None, path: str, depth: int
    ) -> None:
        if depth > self.limits.max_bundle_depth:
            limit = self.limits.max_bundle_depth
            log.error(line, f"{path}: a Bundle inside {limit} Bundles: not read (the limit)")
            return
        entries = bundle.get("entry") or []
        if not isinstance(entries, list):
            log.error(line, f"{path}.entry: not an array")
            return
        for index, entry in enumerate(entries):
            place = f"{path}.entry[{index}]"
            if not isinstance(entry, dict):
                log.error(line, f"{place}: not an object")
            elif entry.get("resource") is not None:  # no resource: a delete, a response
                self.add_value(entry["resource"], log, line, f"{place}.resource", depth)
