"""Which column of a DataFrame (Spark, Dask) holds FHIR resources as JSON text: the rule a
view and a binding check share."""

from __future__ import annotations

from collections.abc import Sequence

from workbench.errors import InvalidRequestError

#: The names a JSON text column goes by, in order of preference.
NAMES = ("resource", "json", "value")


def json_column(
    columns: Sequence[str],
    strings: Sequence[str],
    *,
    purpose: str = "FHIR data",
    error: type[InvalidRequestError] = InvalidRequestError,
) -> str:
    """The column that holds the resources' JSON text: the one string column, else one
    called resource, json or value (``strings`` are the string columns); ``error`` (naming
    ``purpose`` and the columns) when there is none.

    >>> json_column(["id", "resource"], ["id", "resource"])
    'resource'
    """
    if len(strings) == 1:
        return strings[0]
    for name in NAMES:
        if name in strings:
            return name
    raise error(
        f"a DataFrame for {purpose} holds the resources as JSON text in one string "
        f"column (or one called resource, json or value); this one has {list(columns)}"
    )
