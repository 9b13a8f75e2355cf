"""``CodeSystem/$batch-validate-code`` (type level, POST): many ``CodeSystem/$validate-code``
calls in one, each entry answered by that operation (see ``operations.batch``): a code is
validated against its code system (the entry's ``url`` or its Coding's ``system`` and
``version``), entries of several systems and versions each in their own."""

from __future__ import annotations

from workbench.operations import codesystem_validate_code as single
from workbench.operations.batch import MAX_ENTRIES, batch_operation

__all__ = ["MAX_ENTRIES", "OPERATION", "SHARED"]

#: The top inputs an entry takes when it names no code system itself (the first two name it).
SHARED = ("url", "codeSystem", "version")

OPERATION = batch_operation(
    "OperationDefinition-CodeSystem-batch-validate-code.json", single.OPERATION, SHARED
)
DEFINITION = OPERATION.definition
