"""What a call's column arguments must name: one check, one error, on every backend.

A column argument left out where one is needed is an ``InvalidRequestError`` that lists
the columns; a column that is not in the data is a ``ColumnNotFoundError`` (an
``InvalidRequestError`` and a ``KeyError``), worded the same for pandas, polars, Dask and
Spark.

>>> require_column(["a", "b"], "a")
'a'
>>> try:
...     require_column(["a", "b"], "c", "display")
... except KeyError as error:  # a ColumnNotFoundError
...     print(error)
The display column 'c' is not in the data; its columns are ['a', 'b']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.errors import ColumnNotFoundError, InvalidRequestError


def require_column(columns: Sequence[Any], name: str | None, role: str = "code") -> str:
    """``name``, when it is one of ``columns``; else the error that says what to give."""
    shown = [str(c) for c in columns]
    if name is None:
        raise InvalidRequestError(f"Name the {role} column: {role}=... (the columns are {shown})")
    if name not in list(columns):
        raise ColumnNotFoundError(
            f"The {role} column {name!r} is not in the data; its columns are {shown}"
        )
    return name
