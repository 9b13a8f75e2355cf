"""The error a FHIRPath expression that cannot be read raises."""

from __future__ import annotations

from workbench.errors import InvalidRequestError


class FhirPathError(InvalidRequestError, ValueError):
    """A FHIRPath expression that is not FHIRPath: a syntax error (the text names the
    position and what was expected), or a construct over the grammar's limits. A
    ``ValueError`` too, so callers that know nothing of the workbench can catch it.

    ``expression`` is the text, ``position`` the 0-based offset of the fault (None when the
    fault is the whole text, e.g. its length)."""

    msg_id = "WB-FHIRPATH-001"

    def __init__(self, text: str, *, expression_text: str = "", position: int | None = None):
        super().__init__(text)
        self.expression_text = expression_text
        self.position = position
