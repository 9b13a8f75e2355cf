"""FHIR data files read for one view, in one parse.

``read_fhir`` parses every line to learn its type (in C) and keeps each type apart; a view
then parses its type's lines again, for its elements. Read for a view, an NDJSON file is
parsed once: a chunk that passes ``read_fhir``'s own byte checks (UTF-8, no NaN, nesting,
line length, no Bundle to open, no blank line) goes to the view as it was read, and the view's
parse, which reads ``resourceType`` with the rest, keeps the lines of its type; a line the
view's parser refuses is found by halving and becomes a record naming its file and line.
Every other chunk, and every JSON file, is read by ``read_fhir``'s own code, with its records.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "Patient.ndjson").write_text('{"resourceType": "Patient", "id": "a"}\\n')
>>> source = ViewSource([folder], "Patient")
>>> list(source.ndjson_batches("Patient")), source.errors
([b'{"resourceType": "Patient", "id": "a"}\\n'], [])
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from workbench.fhirdata.checks import plain_json
from workbench.fhirdata.files import files_of, kind_of, open_file
from workbench.fhirdata.intake import Intake, Limits
from workbench.fhirdata.ndjson import line_chunks, longest_line, read_chunk
from workbench.fhirdata.read import read_fhir
from workbench.fhirdata.records import ReadError

#: The size of the chunks read from a file for a view (under ``max_line_bytes``, so a chunk
#: of that size needs no line measured).
CHUNK_BYTES = 15 << 20


class ViewSource:
    """The resources of ``resource_type`` in ``paths`` for a view (see the module's
    docstring): ``ndjson_batches`` as ``FhirData`` gives them, ``errors`` the records, and
    ``locate`` the file and line of a line of the batches."""

    def __init__(self, paths: list[Any], resource_type: str, limits: Limits | None = None):
        self.files = files_of(paths)
        self.resource_type = resource_type
        self.limits = limits or Limits()
        self.errors: list[ReadError] = []
        self._starts: list[int] = []  # the index (in the batches) of each located chunk
        self._places: list[tuple[str, int] | None] = []
        self._lines = 0

    def ndjson_batches(self, resource_type: str) -> Iterator[bytes]:
        """The chunks of NDJSON that hold the resources of the view's type (a chunk read
        as it was may hold other types too: the view keeps its own)."""
        assert resource_type == self.resource_type
        for path in self.files:
            if kind_of(path) == "ndjson":
                yield from self._ndjson(path)
            else:
                yield from self._read(read_fhir(path))

    def _ndjson(self, path: Path) -> Iterator[bytes]:
        intake = Intake(self.limits)
        log = intake.log(str(path))
        try:
            with open_file(path) as stream:
                for chunk, number in line_chunks(stream, CHUNK_BYTES, self.limits, log):
                    if self._plain(chunk):
                        yield self._located(chunk, (str(path), number))
                    else:
                        read_chunk(intake, chunk, log, number)
                        if log.not_json:
                            break
        except (OSError, EOFError) as exc:
            log.error(None, f"could not be read to the end ({type(exc).__name__}: {exc})")
        log.close()
        intake.store.finish()
        for chunk in intake.store.chunks(self.resource_type):
            yield self._located(chunk, None)
        self.errors += intake.records
        intake.store.close()

    def _plain(self, chunk: bytes) -> bool:
        """Whether the view's parse may read ``chunk`` as it is (``read_fhir``'s checks)."""
        limit = self.limits.max_line_bytes
        return (
            (len(chunk) <= limit or longest_line(chunk) <= limit)
            and b'"Bundle"' not in chunk
            and b"\n\n" not in chunk
            and not chunk.startswith(b"\n")
            and plain_json(chunk)
        )

    def _read(self, data: Any) -> Iterator[bytes]:
        with data:
            for chunk in data.ndjson_batches(self.resource_type):
                yield self._located(chunk, None)
            self.errors += data.errors

    def _located(self, chunk: bytes, place: tuple[str, int] | None) -> bytes:
        self._starts.append(self._lines)
        self._places.append(place)
        self._lines += chunk.count(b"\n")
        return chunk

    def locate(self, index: int) -> tuple[str, int] | None:
        """The file and line of the ``index``-th line of the batches, when it was passed on
        as read (None for a line ``read_fhir`` read: its type's lines are regrouped)."""
        found = bisect.bisect_right(self._starts, index) - 1
        place = self._places[found] if found >= 0 else None
        return None if place is None else (place[0], place[1] + index - self._starts[found])

    def close(self) -> None:
        """Nothing is held beyond the batches."""

    def __enter__(self) -> ViewSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
