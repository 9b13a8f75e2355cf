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


def system_of(data: Any, system: str | None, system_column: str | None) -> str | None:
    """What a column call's rows are of, said without guessing: ``system`` is the system
    URI of every row, ``system_column`` names a column of systems (the name is returned:
    the backends read a system that is a column as that column). Raises
    InvalidRequestError for both given, for a ``system`` that is a column of ``data`` or no
    URI at all (name it with ``system_column=``), or a ``system_column`` of a Series, and
    ColumnNotFoundError for a ``system_column`` that is not there.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"code": ["a"], "sys": ["http://x"]})
    >>> system_of(frame, None, "sys"), system_of(frame, "http://x", None)
    ('sys', 'http://x')
    >>> try:
    ...     system_of(frame, "sys", None)
    ... except InvalidRequestError as error:
    ...     print(error.text.split(": ")[1])
    name a column of systems with system_column='sys'
    """
    columns = None if getattr(data, "ndim", 2) == 1 else getattr(data, "columns", None)
    columns = None if columns is None else list(columns)
    if system is not None and system_column is not None:
        raise InvalidRequestError(
            "Give system= (the system URI of every row) or system_column= (a column of "
            "systems), not both"
        )
    if system_column is not None:
        if columns is None:
            raise InvalidRequestError(
                "system_column= names a column of a DataFrame, and this is one column: give "
                "its system URI with system="
            )
        return require_column(columns, system_column, "system")
    if system is not None and columns is not None and system in columns:
        raise InvalidRequestError(
            f"system= takes the system URI of every row, and {system!r} is a column of the "
            f"data: name a column of systems with system_column={system!r}"
        )
    if system is not None and ":" not in system and "/" not in system:
        raise InvalidRequestError(
            f"system= takes the system URI of every row, and {system!r} is no URI (to name "
            "a column of systems, use system_column=)"
        )
    return system
