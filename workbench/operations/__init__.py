"""FHIR operations: one module per operation, the Parameters codec, the definitions.

``OPERATIONS`` is every operation the server offers; routes are generated from their
definitions, so adding an operation means adding a module and listing it here.
"""

from __future__ import annotations

from workbench.operations import (
    cache_control,
    capability_versions,
    codesystem_batch_validate_code,
    codesystem_lookup,
    codesystem_subsumes,
    codesystem_validate_code,
    conceptmap_closure,
    conceptmap_translate,
    valueset_batch_validate_code,
    valueset_compare,
    valueset_expand,
    valueset_validate_code,
)
from workbench.operations.base import Operation

OPERATIONS: tuple[Operation, ...] = (
    valueset_validate_code.OPERATION,
    valueset_expand.OPERATION,
    codesystem_lookup.OPERATION,
    codesystem_validate_code.OPERATION,
    codesystem_subsumes.OPERATION,
    conceptmap_translate.OPERATION,
    valueset_batch_validate_code.OPERATION,
    codesystem_batch_validate_code.OPERATION,
    capability_versions.OPERATION,
    cache_control.OPERATION,
    valueset_compare.OPERATION,
    conceptmap_closure.OPERATION,
)

__all__ = ["OPERATIONS", "Operation"]
