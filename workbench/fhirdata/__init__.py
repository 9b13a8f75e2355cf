"""FHIR data, read for views: NDJSON (bulk-data exports), JSON files, Bundles and dicts,
kept per resource type as NDJSON chunks (:func:`read_fhir`, :class:`FhirData`).

Modules: ``read`` (read_fhir: what a source names), ``files`` (folders, file kinds, the type
a file's name declares, JSON files), ``ndjson`` (NDJSON streams in chunks), ``checks`` (a
chunk checked in C, a line with orjson), ``intake`` (resources to the store, Bundles
opened, problems recorded per source), ``store`` (chunks per type, in memory and spilled),
``data`` (FhirData), ``records`` (ReadError), ``resource_types`` (the R4 resource types).
"""

from __future__ import annotations

from workbench.fhirdata.data import FhirData
from workbench.fhirdata.read import read_fhir, scan
from workbench.fhirdata.records import ReadError
from workbench.fhirdata.resource_types import R4_RESOURCE_TYPES, is_resource_type

__all__ = ["R4_RESOURCE_TYPES", "FhirData", "ReadError", "is_resource_type", "read_fhir", "scan"]
