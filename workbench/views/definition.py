"""A ViewDefinition read and checked: the selection structure as typed objects.

What the SQL on FHIR v2 ``ValidateColumns`` step and the ViewDefinition's constraints require
is checked here, before any data is read: a known resource type, named columns with paths,
column names unique across the view, ``unionAll`` branches with the same column names, at
most one of ``forEach``, ``forEachOrNull`` and ``repeat`` per select, constants with one value
of a type FHIRPath can use. Each error names its place (``select[0].column[1]``).

>>> view = read_view({"resource": "Patient",
...                   "select": [{"column": [{"name": "id", "path": "getResourceKey()"}]}]})
>>> [c.name for c in view.select.all_columns()]
['id']
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from workbench.structure.types import model
from workbench.views.errors import ViewDefinitionError

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
#: The types a constant may have (ViewDefinition.constant.value[x]) and the JSON kind of each.
CONSTANT_TYPES = {
    "base64Binary": str, "boolean": bool, "canonical": str, "code": str, "date": str,
    "dateTime": str, "decimal": (int, float), "id": str, "instant": str, "integer": int,
    "integer64": int, "oid": str, "string": str, "positiveInt": int, "time": str,
    "unsignedInt": int, "uri": str, "url": str, "uuid": str,
}  # fmt: skip


@dataclass(frozen=True)
class Column:
    """``select.column``: a name, a FHIRPath ``path``, the declared ``type`` (or None) and
    whether it may hold several values (``collection``)."""

    name: str
    path: str
    type: str | None
    collection: bool
    place: str


@dataclass(frozen=True)
class Select:
    """A selection structure: its columns, nested selects, ``unionAll`` branches, and the
    iteration that sets its foci (``forEach``, ``forEachOrNull`` or ``repeat``, or none)."""

    columns: tuple[Column, ...]
    selects: tuple[Select, ...]
    union_all: tuple[Select, ...]
    for_each: str | None
    for_each_or_null: str | None
    repeat: tuple[str, ...]
    place: str

    @property
    def iterates(self) -> bool:
        """True when the select sets its own foci (and so its own ``%rowIndex``)."""
        return bool(self.for_each or self.for_each_or_null or self.repeat)

    def all_columns(self) -> list[Column]:
        """The columns this select emits, in the spec's order: its own, its selects', then
        the first ``unionAll`` branch's."""
        found = list(self.columns)
        for child in self.selects:
            found += child.all_columns()
        if self.union_all:
            found += self.union_all[0].all_columns()
        return found


@dataclass(frozen=True)
class Constant:
    """``constant``: a name, the FHIR type of its value (``valueCode`` -> ``code``), the value."""

    name: str
    type: str
    value: Any


@dataclass(frozen=True)
class View:
    """A checked ViewDefinition: the resource type, constants by name, the ``where`` paths
    (each with its place), and the root select (its selects are the view's ``select``)."""

    resource: str
    name: str | None
    constants: dict[str, Constant]
    where: tuple[tuple[str, str], ...]
    select: Select
    raw: dict[str, Any]


def read_view(raw: Any) -> View:
    """Check a ViewDefinition (a dict) and return it as a ``View``; raise ViewDefinitionError
    naming the place of the first problem."""
    if not isinstance(raw, dict):
        raise ViewDefinitionError(f"a ViewDefinition is a JSON object, not {type(raw).__name__}")
    kind = raw.get("resourceType", "ViewDefinition")
    if kind != "ViewDefinition":
        raise ViewDefinitionError(f"the resource is a {kind}, not a ViewDefinition")
    resource = raw.get("resource")
    if not isinstance(resource, str) or not resource:
        raise ViewDefinitionError("'resource' (the resource type the view reads) is missing")
    if resource not in model().resources:
        raise ViewDefinitionError(f"{resource!r} is not a FHIR R4 resource type", place="resource")
    selects = _list(raw, "select", "")
    if not selects:
        raise ViewDefinitionError("a view needs at least one 'select'", place="select")
    root = Select((), tuple(_select(s, f"select[{i}]") for i, s in enumerate(selects)),
                  (), None, None, (), "")  # fmt: skip
    _unique(root, [])
    where = tuple(_where(w, f"where[{i}]") for i, w in enumerate(_list(raw, "where", "")))
    constants = _constants(_list(raw, "constant", ""))
    name = raw.get("name")
    return View(resource, name if isinstance(name, str) else None, constants, where, root, raw)


def _list(raw: dict[str, Any], key: str, place: str) -> list[Any]:
    found = raw.get(key, [])
    if isinstance(found, dict):  # a single select written as an object (seen in the spec)
        found = [found]
    if not isinstance(found, list):
        raise ViewDefinitionError(f"'{key}' must be a list", place=_at(place, key))
    return found


def _at(place: str, key: str) -> str:
    return f"{place}.{key}" if place else key


def _select(raw: Any, place: str) -> Select:
    if not isinstance(raw, dict):
        raise ViewDefinitionError("a select is a JSON object", place=place)
    iterations = [k for k in ("forEach", "forEachOrNull", "repeat") if raw.get(k) is not None]
    if len(iterations) > 1:
        raise ViewDefinitionError(
            f"a select may have only one of forEach, forEachOrNull and repeat, not "
            f"{' and '.join(iterations)}",
            place=place,
        )
    for key in ("forEach", "forEachOrNull"):
        if key in raw and not (isinstance(raw[key], str) and raw[key].strip()):
            raise ViewDefinitionError(f"'{key}' must be a FHIRPath text", place=_at(place, key))
    repeat = raw.get("repeat") or []
    if not isinstance(repeat, list) or not all(isinstance(p, str) and p for p in repeat):
        raise ViewDefinitionError("'repeat' must be a list of FHIRPath texts", place=place)
    columns = tuple(
        _column(c, f"{place}.column[{i}]") for i, c in enumerate(_list(raw, "column", place))
    )
    selects = tuple(
        _select(s, f"{place}.select[{i}]") for i, s in enumerate(_list(raw, "select", place))
    )
    union = tuple(
        _select(s, f"{place}.unionAll[{i}]") for i, s in enumerate(_list(raw, "unionAll", place))
    )
    if not (columns or selects or union):
        raise ViewDefinitionError("a select needs a column, a select or a unionAll", place=place)
    return Select(columns, selects, union, raw.get("forEach"), raw.get("forEachOrNull"),
                  tuple(repeat), place)  # fmt: skip


def _column(raw: Any, place: str) -> Column:
    if not isinstance(raw, dict):
        raise ViewDefinitionError("a column is a JSON object", place=place)
    name, path = raw.get("name"), raw.get("path")
    if not isinstance(path, str) or not path.strip():
        raise ViewDefinitionError("the column has no 'path'", place=place)
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ViewDefinitionError(
            f"the column name {name!r} is not a name (a letter, then letters, digits or _)",
            place=place,
        )
    collection = raw.get("collection", False)
    if not isinstance(collection, bool):
        raise ViewDefinitionError("'collection' must be true or false", place=place)
    kind = raw.get("type")
    if kind is not None and not isinstance(kind, str):
        raise ViewDefinitionError("'type' must be a FHIR type name", place=place)
    return Column(name, path, kind, collection, f"column {name!r} ({place})")


def _unique(select: Select, before: list[str]) -> list[str]:
    """The spec's ValidateColumns: names unique across the view, unionAll branches alike."""
    names = list(before)
    for column in select.columns:
        _add(names, column.name, column.place)
    for child in select.selects:
        for name in _unique(child, names)[len(names) :]:
            _add(names, name, child.place)
    if select.union_all:
        first = _unique(select.union_all[0], names)[len(names) :]
        for branch in select.union_all[1:]:
            found = _unique(branch, names)[len(names) :]
            if found != first:
                raise ViewDefinitionError(
                    f"the unionAll branches give different columns: {first} and {found}",
                    place=branch.place,
                )
        for name in first:
            _add(names, name, select.union_all[0].place)
    return names


def _add(names: list[str], name: str, place: str) -> None:
    if name in names:
        raise ViewDefinitionError(f"the column {name!r} is already defined", place=place)
    names.append(name)


def _where(raw: Any, place: str) -> tuple[str, str]:
    path = raw.get("path") if isinstance(raw, dict) else None
    if not isinstance(path, str) or not path.strip():
        raise ViewDefinitionError("the where has no 'path'", place=place)
    return path, place


def _constants(raw: list[Any]) -> dict[str, Constant]:
    found: dict[str, Constant] = {}
    for i, item in enumerate(raw):
        place = f"constant[{i}]"
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ViewDefinitionError(f"the constant name {name!r} is not a name", place=place)
        values = [k for k in item if k.startswith("value")]
        if len(values) != 1:
            raise ViewDefinitionError(f"the constant {name!r} needs exactly one value[x]",
                                      place=place)  # fmt: skip
        found[name] = _constant(name, values[0], item[values[0]], place)
    return found


def _constant(name: str, key: str, value: Any, place: str) -> Constant:
    kind = key[5:6].lower() + key[6:]
    expected = CONSTANT_TYPES.get(kind)
    if expected is None:
        raise ViewDefinitionError(
            f"the constant {name!r} has a {key}: a constant is one of "
            f"{', '.join('value' + k[0].upper() + k[1:] for k in CONSTANT_TYPES)}",
            place=place,
        )
    wrong_bool = isinstance(value, bool) and expected is not bool
    if wrong_bool or not isinstance(value, expected):  # type: ignore[arg-type]
        raise ViewDefinitionError(
            f"the constant {name!r} ({key}) has the value {value!r}, which is not a {kind}",
            place=place,
        )
    return Constant(name, kind, value)


def iterate_selects(select: Select) -> Iterator[Select]:
    """Every select of a tree, the root first."""
    yield select
    for child in (*select.selects, *select.union_all):
        yield from iterate_selects(child)
