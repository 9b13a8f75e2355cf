"""The elements a view reads, and the Arrow schema that reads only those.

Compiling a view's paths records each element a step touches in a tree of ``Need`` nodes
(one per element, keyed by its JSON name). The tree becomes the explicit schema with which
``pyarrow.json`` parses the resources: the elements a view does not touch are skipped by the
parser in C and never become values. A complex value a column returns whole (a Coding, a
CodeableConcept) needs all of its elements, to a bounded depth and without extensions.

A ``repeat`` reaches a depth its data decides; its tree stops at a depth and marks the next
level with a *sentinel* (an Arrow null type): data deeper than that makes the parser fail on
the sentinel, and the view is read again with a deeper tree.

>>> need = Need("Patient")
>>> _ = need.child("name", "HumanName", True).child("family", "string", False)
>>> arrow_schema(need)
resourceType: string
id: string
name: list<item: struct<family: string>>
  child 0, item: struct<family: string>
      child 0, family: string
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pyarrow as pa

from workbench.structure.types import model

#: How deep a whole complex value is read (a CodeableConcept: coding, then its elements).
WHOLE_DEPTH = 3
_PRIMITIVE = {
    "boolean": pa.bool_(),
    "integer": pa.int64(),
    "positiveInt": pa.int64(),
    "unsignedInt": pa.int64(),
    "integer64": pa.int64(),
}
_SKIPPED_IN_WHOLE = {"extension", "modifierExtension", "contained"}


class Need:
    """An element a view reads: its FHIR ``type``, whether it ``repeats``, the elements read
    below it (``fields``, by JSON name), and whether it is read ``whole``."""

    def __init__(self, type_name: str, repeats: bool = False) -> None:
        self.type = type_name
        self.repeats = repeats
        #: Where this node hangs: the parent node and the JSON name under it.
        self.parent: Need | None = None
        self.key = ""
        self.fields: dict[str, Need] = {}
        self.whole = False
        self.sentinel = False

    def child(self, json: str, type_name: str, repeats: bool) -> Need:
        """The node of the element ``json`` below this one (made on first use)."""
        found = self.fields.get(json)
        if found is None:
            found = self.fields[json] = Need(type_name, repeats)
            found.parent, found.key = self, json
        return found

    def alias(self, other: Need) -> None:
        """Hang ``other`` where this node hangs (both stay reachable by the same name)."""
        assert self.parent is not None, "only an element's node is replaced"
        self.parent.fields[self.key] = other

    def __repr__(self) -> str:
        return f"Need({self.type!r}, {sorted(self.fields)})"


def arrow_type(need: Need, depth: int = 0) -> pa.DataType:
    """The Arrow type that reads ``need`` (a list of it when the element repeats)."""
    if need.sentinel:
        return pa.null()
    inner = _value_type(need, depth)
    return pa.list_(inner) if need.repeats else inner


def _value_type(need: Need, depth: int) -> pa.DataType:
    if need.type in _PRIMITIVE:
        return _PRIMITIVE[need.type]
    if model().is_primitive(need.type) or not model().has_type(need.type):
        return pa.string()
    fields = dict(need.fields)
    if need.whole:
        for name, child in _whole_fields(need.type, depth).items():
            fields.setdefault(name, child)
    if not fields:  # an element read only for its presence: its id tells nothing, but exists
        fields["id"] = Need("string")
    return pa.struct(
        [(name, arrow_type(child, depth + 1)) for name, child in sorted(fields.items())]
    )


def _whole_fields(type_name: str, depth: int) -> dict[str, Need]:
    """Every element of a complex type read whole, to WHOLE_DEPTH levels."""
    found: dict[str, Need] = {}
    if depth >= WHOLE_DEPTH:
        return found
    for name in model().names(type_name):
        child = model().child(type_name, name)
        if child is None or name in _SKIPPED_IN_WHOLE:
            continue
        for option in child.choices or (child,):
            node = Need(option.type, option.repeats)
            node.whole = not model().is_primitive(option.type)
            found[option.json] = node
    return found


def decimal_keys(root: Need) -> frozenset[str]:
    """The JSON names of the decimal elements the view reads: their numbers are read as the
    text that was written (``1.50`` stays ``1.50``), see ``quote_decimals``."""
    found: set[str] = set()
    seen: set[int] = set()
    stack = [root]
    while stack:
        need = stack.pop()
        if id(need) in seen:
            continue
        seen.add(id(need))
        for name, child in need.fields.items():
            if child.type == "decimal":
                found.add(name)
            stack.append(child)
    return frozenset(found)


def quote_decimals(keys: frozenset[str]) -> Callable[[bytes], bytes]:
    """A function that writes the numbers of the elements ``keys`` name as JSON strings, so
    the parser reads a decimal as its text (pyarrow reads a number only as a number, and a
    binary float loses ``1.50``'s precision). In FHIR JSON every number under such a name
    is that decimal; a string value, and the name inside a string, are left as they are.

    >>> quote_decimals(frozenset({"value"}))(b'{"value": 1.50, "unit": "mg", "code": "value"}')
    b'{"value": "1.50", "unit": "mg", "code": "value"}'
    """
    names = [f'"{key}"'.encode() for key in sorted(keys)]

    def quoted(data: bytes) -> bytes:
        for name in names:
            if name in data:
                data = _quoted(data, name)
        return data

    return quoted


_NUMBER = re.compile(rb"\s*:\s*(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)")


def _quoted(data: bytes, name: bytes) -> bytes:
    """``data`` with the number after each ``name:`` quoted (split at the name: one match
    per occurrence, at its start)."""
    parts = data.split(name)
    out = [parts[0]]
    for part in parts[1:]:
        found = _NUMBER.match(part)
        if found is None:
            out.append(part)
        else:
            start, end = found.span(1)
            out.append(b"".join((part[:start], b'"', part[start:end], b'"', part[end:])))
    return name.join(out)


def arrow_schema(root: Need) -> pa.Schema:
    """The explicit schema of a resource read for a view: ``resourceType``, ``id`` and every
    element the view needs."""
    struct = _value_type(root, 0)
    fields = {"resourceType": pa.field("resourceType", pa.string())}
    fields["id"] = pa.field("id", pa.string())
    for field in struct:
        fields.setdefault(field.name, field)
    return pa.schema(list(fields.values()))
