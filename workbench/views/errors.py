"""The error an invalid SQL on FHIR ViewDefinition raises."""

from __future__ import annotations

from workbench.errors import InvalidRequestError


class ViewDefinitionError(InvalidRequestError, ValueError):
    """A ViewDefinition that cannot be run: not a ViewDefinition, a column with no name, a
    path that is not FHIRPath or names an element its type does not have, an unknown
    function, a ``collection: false`` column that meets several values, a constant of the
    wrong type, a terminology function over a value set that is not loaded. The text names
    the place (``column 'gender' (select[0].column[1])``) and the problem; ``place`` holds the
    place alone."""

    msg_id = "WB-VIEW-001"

    def __init__(self, text: str, *, place: str | None = None) -> None:
        super().__init__(f"{place}: {text}" if place else text)
        self.place = place
