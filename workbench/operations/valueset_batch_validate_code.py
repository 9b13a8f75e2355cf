"""``ValueSet/$batch-validate-code`` (type level, POST): many ``ValueSet/$validate-code``
calls in one, each entry answered by that operation (see ``operations.batch``)."""

from __future__ import annotations

from workbench.operations import valueset_validate_code as single
from workbench.operations.batch import MAX_ENTRIES, batch_operation

__all__ = ["MAX_ENTRIES", "OPERATION", "SHARED"]

#: The top inputs an entry takes when it names no value set itself (the first two name it).
SHARED = ("url", "valueSet", "valueSetVersion")

OPERATION = batch_operation(
    "OperationDefinition-ValueSet-batch-validate-code.json", single.OPERATION, SHARED
)
DEFINITION = OPERATION.definition
