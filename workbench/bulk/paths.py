"""Dotted paths into a column of FHIR JSON objects: one rule for Python and the command line.

A column argument names a column, or a path into one: ``code.coding`` is the ``coding`` of
the objects in the column ``code`` (``split``: a name that is a column is that column;
otherwise the longest dotted prefix that is a column starts the path). Walking a row
(``row_value``):

* each step takes the key of an object; a missing key, None or an empty list gives nothing;
* an array is crossed: every element is walked on (``component.code`` is the ``code`` of
  every component), as in FHIRPath;
* a step into a string, a number or a boolean is an error naming the path (the path asks for
  an object where the data has a value).

What a row holds at the end of its path is what the column validators take:

* nothing: None (a missing code, as an empty cell);
* one value reached without crossing an array: that value (a code, a Coding, a
  CodeableConcept);
* one or more objects reached through an array: one CodeableConcept of all their codings
  (a CodeableConcept's codings, a Coding itself), so the row is valid when one of them is;
* values that are not objects reached through an array (a list of numbers or codes): an
  error, as the row has no one code.

>>> row_value({"coding": [{"code": "a"}, {"code": "b"}]}, ("coding",), "code.coding")
{'coding': [{'code': 'a'}, {'code': 'b'}]}
>>> row_value({"code": {"text": "x"}}, ("code", "coding"), "code.coding") is None
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import InvalidRequestError

#: What a row may hold that a path crosses as an array (pyarrow gives numpy arrays in pandas).
ARRAYS = (list, tuple, np.ndarray)


@dataclass(frozen=True)
class Path:
    """A column argument read against the columns: the ``column`` it starts at and the
    ``steps`` into its objects (none: the column itself); ``name`` as given."""

    name: str
    column: str
    steps: tuple[str, ...]


def split(columns: Sequence[Any], name: str) -> Path | None:
    """``name`` read against ``columns``: the column itself when it is one, else the longest
    dotted prefix that is a column and the steps after it; None when no prefix is one.

    >>> split(["code", "code.text"], "code.text")
    Path(name='code.text', column='code.text', steps=())
    >>> split(["code"], "code.coding.system")
    Path(name='code.coding.system', column='code', steps=('coding', 'system'))
    >>> split(["code"], "status") is None
    True
    """
    names = set(columns)
    if name in names:
        return Path(name, name, ())
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        column = ".".join(parts[:end])
        if column in names:
            return Path(name, column, tuple(parts[end:]))
    return None


def needs_walking(values: Iterable[Any]) -> bool:
    """Whether a column holds objects or arrays (decided by its first value that is not
    missing, as ``encoding.is_structured`` decides): such a column is read row by row."""
    for value in values:
        if isinstance(value, (*ARRAYS, Mapping)):
            return True
        if value is not None and not (isinstance(value, float) and value != value):
            return False
    return False


def row_value(value: Any, steps: tuple[str, ...], name: str) -> Any:
    """What one row holds at the end of ``steps`` (the rule of the module's docstring);
    ``name`` names the path in an error."""
    found, crossed = _walk(value, steps, name)
    if not crossed:
        return found[0] if found else None
    if not found:
        return None
    if not all(isinstance(f, Mapping) for f in found):
        other = next(f for f in found if not isinstance(f, Mapping))
        raise InvalidRequestError(
            f"The path {name!r} gives a list of {_kind(other)}s in a row, not Codings or "
            "CodeableConcepts: name a path to Codings (such as 'code.coding') or to codes "
            "that are one per row"
        )
    codings: list[Any] = []
    for concept in found:
        inner = concept.get("coding") if "coding" in concept else [concept]
        if isinstance(inner, ARRAYS):
            codings.extend(c for c in inner if c is not None)
    return {"coding": codings}


def column_values(values: Iterable[Any], steps: tuple[str, ...], name: str) -> list[Any]:
    """``row_value`` of every row."""
    return [row_value(value, steps, name) for value in values]


def _walk(value: Any, steps: tuple[str, ...], name: str) -> tuple[list[Any], bool]:
    """The values at the end of ``steps`` (arrays crossed, nothing for a missing key) and
    whether an array was crossed."""
    current, crossed = [value], False
    for depth, step in enumerate(steps):
        following: list[Any] = []
        for item in _elements(current):
            if _absent(item):
                continue
            if not isinstance(item, Mapping):
                before = name[: len(name) - len(".".join(steps[depth:])) - 1]
                raise InvalidRequestError(
                    f"The path {name!r} goes into a {_kind(item)} at {step!r}: {before!r} "
                    f"holds {_short(item)}, and each step of a path is a JSON object's key"
                )
            following.append(item.get(step))
        crossed = crossed or any(isinstance(item, ARRAYS) for item in current)
        current = following
    crossed = crossed or any(isinstance(item, ARRAYS) for item in current)
    return [item for item in _elements(current) if not _absent(item)], crossed


def _elements(values: list[Any]) -> Iterable[Any]:
    """The values, with the elements of each array in its place."""
    for value in values:
        if isinstance(value, ARRAYS):
            yield from value
        else:
            yield value


def _absent(value: Any) -> bool:
    """None or NaN (a missing cell of pandas)."""
    return value is None or (isinstance(value, float) and value != value)


def _kind(value: Any) -> str:
    """A JSON value's kind, for messages."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool | np.bool_):
        return "boolean"
    if isinstance(value, int | float | np.number):
        return "number"
    return type(value).__name__


def _short(value: Any) -> str:
    """A value as a message quotes it (at most 40 characters)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def walked_frame(data: Any, name: str | None) -> Any:
    """pandas ``data`` whose code column (``name``) is read by the rule: a DataFrame with a
    column ``name`` holding each row's value at the end of the path (a frame that has the
    column, of codes or objects, is returned as it is), a Series of arrays walked the same
    way; anything else as it is (a name that is no column stays for the caller's error)."""
    import pandas as pd

    if isinstance(data, pd.Series):
        if data.dtype == object and needs_walking(data):
            return pd.Series(column_values(data, (), str(data.name)), data.index, object)
        return data
    if not isinstance(data, pd.DataFrame) or name is None:
        return data
    path = split(list(data.columns), name)
    if path is None:
        return data
    values = data[path.column]
    if not path.steps and not (values.dtype == object and needs_walking(values)):
        return data
    rows = pd.Series(column_values(values, path.steps, name), data.index, object)
    return data.assign(**{name: rows})
