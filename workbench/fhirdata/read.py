"""read_fhir: FHIR data from folders, files, lists of paths, dicts or Bundles."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from workbench import jsonio
from workbench.fhirdata.data import FhirData
from workbench.fhirdata.files import files_of, read_file
from workbench.fhirdata.intake import Intake, Limits, Sink
from workbench.fhirdata.records import ReadError

PYTHON_SOURCE = "<resources>"
_DEFAULTS = Limits()


def _paths(source: Any) -> list[Any] | None:
    """The paths ``source`` names, or None when it is resources."""
    if isinstance(source, str | os.PathLike):
        return [source]
    paths = isinstance(source, list | tuple) and source
    if paths and all(isinstance(item, str | os.PathLike) for item in source):
        return list(source)
    return None


def read_fhir(
    source: Any,
    *,
    batch_bytes: int = _DEFAULTS.batch_bytes,
    memory_bytes: int = _DEFAULTS.memory_bytes,
    max_line_bytes: int = _DEFAULTS.max_line_bytes,
    max_json_bytes: int = _DEFAULTS.max_json_bytes,
    max_bundle_depth: int = _DEFAULTS.max_bundle_depth,
    spill_dir: str | Path | None = None,
) -> FhirData:
    """Read FHIR R4 resources from ``source`` into a :class:`FhirData`.

    ``source`` is a folder (read recursively: ``*.ndjson``, ``*.jsonl``, ``*.json``, each
    possibly gzipped), a file, a list of paths, a resource or Bundle dict, or an iterable
    of them. NDJSON is read in chunks of about ``batch_bytes``, so memory stays bounded: the
    resources are kept per type as NDJSON, in memory up to ``memory_bytes`` and in a
    temporary folder (in ``spill_dir``, else the system's) beyond it. A JSON file holds one
    resource or a Bundle and is read whole, up to ``max_json_bytes``.

    Bundles, in a JSON file, on an NDJSON line, or passed in, are opened: their entries'
    resources are read (and Bundles in them, at most ``max_bundle_depth`` deep); the Bundle
    itself is not kept, as a bulk-data reader expects. Entries without a resource (a
    delete) are passed over.

    Problems in the data are records in ``.errors``, never exceptions, and everything else
    is read: a line that is not JSON, not an object, has no or an unknown ``resourceType``,
    nests deeper than 100 levels or is longer than ``max_line_bytes`` (skipped as it
    streams past). A file none of whose first lines is JSON gives one record. A line of
    another type than its file's name declares (``Observation.ndjson``,
    ``1.Observation.000.ndjson``) is kept under its own type, with one warning per file.
    Empty files and blank lines are no problem. A path that does not exist raises
    :class:`~workbench.errors.LoadError` at once.

    >>> data = read_fhir({"resourceType": "Bundle", "type": "collection", "entry": [
    ...     {"resource": {"resourceType": "Patient", "id": "p"}}, {"resource": {"id": "x"}}]})
    >>> data
    <FhirData 1 resource of 1 type (Patient 1); 1 error>
    >>> print(data.errors[0])
    <resources>, line 1: Bundle.entry[1].resource: an object without resourceType (not a FHIR resource)
    """  # noqa: E501
    limits = Limits(batch_bytes, memory_bytes, max_line_bytes, max_json_bytes, max_bundle_depth)
    intake = Intake(limits, spill_dir)
    sources = _read(source, intake)
    intake.store.finish()
    return FhirData(intake.store, intake.records, sources)


def scan(source: Any, sink: Sink, *, limits: Limits = _DEFAULTS) -> list[ReadError]:
    """Read ``source`` as :func:`read_fhir` reads it, handing each resource to ``sink``
    (its type, the parsed value, and the NDJSON line it was read from, or None) as it is
    read, keeping nothing: for a consumer that looks at every resource once. Every line is
    parsed with orjson (no check in C first: it would parse twice). Returns the problems,
    the records ``read_fhir`` would give.

    >>> found = []
    >>> scan([{"resourceType": "Patient", "id": "p"}], lambda kind, value, line: found.append(kind))
    []
    >>> found
    ['Patient']
    """
    intake = Intake(limits, sink=sink)
    _read(source, intake)
    return intake.records


def _read(source: Any, intake: Intake) -> int:
    """Read ``source`` into ``intake``; return how many sources (files) it had."""
    paths = _paths(source)
    if paths is not None:
        files = files_of(paths)
        for path in files:
            read_file(intake, path)
        return len(files)
    _read_values([source] if isinstance(source, Mapping) else source, intake)
    return 1


def _read_values(values: Iterable[Any], intake: Intake) -> None:
    """Resources (or Bundles) given as Python values, each checked as a line would be."""
    log = intake.log(PYTHON_SOURCE)
    for number, value in enumerate(values, 1):
        try:
            jsonio.check_depth(value)
        except jsonio.BodyError as exc:
            log.error(number, str(exc))
            continue
        intake.add_value(value, log, number)
    log.close()
