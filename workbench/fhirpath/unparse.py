"""The canonical FHIRPath text of parsed nodes: ``parse(unparse(node)) == node``.

Operators are written with single spaces, parentheses only where precedence needs them,
names in backticks when they are keywords or not plain names, strings in single quotes with
FHIRPath's escapes, and a Coding literal's components quoted unless they are plain runs.
Useful for messages that name a sub-expression.

>>> from workbench.fhirpath.parser import parse
>>> unparse(parse("(a.b  +2)*-c.d"))
'(a.b + 2) * -c.d'
"""

from __future__ import annotations

import re
from decimal import Decimal

from workbench.fhirpath.nodes import (
    Binary,
    CodingLiteral,
    Function,
    Identifier,
    Index,
    Indexer,
    Literal,
    Member,
    Node,
    QuantityLiteral,
    This,
    Total,
    TypeOperation,
    TypeSpecifier,
    Unary,
    Variable,
)
from workbench.fhirpath.parser import CALENDAR_UNITS, KEYWORDS, LEVELS

#: How tightly each operator binds (higher: tighter), from the grammar's levels
_BINARY = {op: level for level, ops in enumerate(LEVELS, start=1) for op in ops}
_TYPE = _BINARY["is"]
_UNARY = len(LEVELS) + 1
_POSTFIX = _UNARY + 1
_TERM = _POSTFIX + 1

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RAW = re.compile(r"[^\s'|(),]+\Z")
_SYSTEM = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{0,31}:[^\s'|(),]*\Z")
_SAYS = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}


def quoted(text: str, quote: str = "'") -> str:
    """``text`` as a FHIRPath string (``'``) or delimited identifier (`` ` ``)."""
    out = [quote]
    for char in text:
        if char == quote:
            out.append("\\" + char)
        elif char in _SAYS:
            out.append(_SAYS[char])
        elif ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append(quote)
    return "".join(out)


def name(text: str) -> str:
    """A name as written: bare when it is a plain name and no keyword, else in backticks."""
    plain = _NAME.match(text) and text not in KEYWORDS
    plain = plain and text not in ("as", "contains", "in", "is")
    return text if plain else quoted(text, "`")


def _decimal(value: Decimal) -> str:
    text = format(value, "f")
    return text if "." in text else f"{text}.0"


def _literal(node: Literal) -> str:
    kind, value = node.kind, node.value
    if kind == "empty":
        return "{}"
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "string":
        return quoted(str(value))
    if kind == "integer":
        return str(value)
    if kind == "long":
        return f"{value}L"
    if kind == "decimal":
        return _decimal(Decimal(str(value)) if not isinstance(value, Decimal) else value)
    if kind == "time":
        return f"@T{value}"
    if kind in ("date", "datetime"):
        return f"@{value}"
    raise ValueError(f"a Literal of kind {kind!r} has no FHIRPath text")


def _component(text: str | None) -> str:
    if text is None:
        return ""
    return text if _RAW.match(text) else quoted(text)


def _coding(node: CodingLiteral) -> str:
    if not _SYSTEM.match(node.system):
        raise ValueError(
            f"a Coding literal's system is a URI with a scheme (http:, urn:), not {node.system!r}"
        )
    selected = None if node.user_selected is None else str(node.user_selected).lower()
    parts = [node.system, quoted(node.code) if not node.code else _component(node.code)]
    tail = [_component(node.version), _component(node.display), selected or ""]
    while tail and not tail[-1]:
        tail.pop()
    return "|".join(parts + tail)


def _quantity(node: QuantityLiteral) -> str:
    number = format(node.value, "f")
    if node.unit is None:
        return number
    unit = node.unit if node.unit in CALENDAR_UNITS else quoted(node.unit)
    return f"{number} {unit}"


def _type(node: TypeSpecifier) -> str:
    parts = [*(node.namespace.split(".") if node.namespace else []), node.name]
    return ".".join(name(part) for part in parts)


def _level(node: Node) -> int:
    if isinstance(node, Binary):
        return _BINARY[node.op]
    if isinstance(node, TypeOperation):
        return _TYPE
    if isinstance(node, Unary | CodingLiteral):  # a Coding literal's code would take ".x"
        return _UNARY
    if isinstance(node, Member | Indexer) or (isinstance(node, Function) and node.base):
        return _POSTFIX
    return _TERM


def _inside(node: Node, least: int) -> str:
    """``node`` as text, in parentheses when it binds less tightly than ``least``."""
    text = unparse(node)
    return f"({text})" if _level(node) < least else text


def _ends_in_coding(node: Node) -> bool:
    """Whether the text of ``node`` ends in a Coding literal (whose last component would
    take a "]" written after it)."""
    while isinstance(node, Binary | Unary):
        node = node.right if isinstance(node, Binary) else node.operand
    return isinstance(node, CodingLiteral)


def _arguments(node: Function) -> str:
    return ", ".join(unparse(arg) for arg in node.args)


def unparse(node: Node) -> str:
    """The canonical FHIRPath text of ``node``.

    >>> unparse(Binary("|", Identifier("a"), Literal("string", "it's")))
    "a | 'it\\\\'s'"
    """
    if isinstance(node, Binary):
        level = _BINARY[node.op]
        left, right = _inside(node.left, level), _inside(node.right, level + 1)
        return f"{left} {node.op} {right}"
    if isinstance(node, TypeOperation):
        return f"{_inside(node.operand, _TYPE)} {node.op} {_type(node.type)}"
    if isinstance(node, Unary):
        operand = _inside(node.operand, _UNARY)
        return f"{node.op}{' ' if operand[:1] in '+-' else ''}{operand}"
    if isinstance(node, Member):
        return f"{_inside(node.base, _POSTFIX)}.{name(node.name)}"
    if isinstance(node, Function):
        call = f"{name(node.name)}({_arguments(node)})"
        return call if node.base is None else f"{_inside(node.base, _POSTFIX)}.{call}"
    if isinstance(node, Indexer):
        index = unparse(node.index)
        index = f"({index})" if _ends_in_coding(node.index) else index
        return f"{_inside(node.base, _POSTFIX)}[{index}]"
    return _term(node)


def _term(node: Node) -> str:
    if isinstance(node, Identifier):
        return name(node.name)
    if isinstance(node, Literal):
        return _literal(node)
    if isinstance(node, QuantityLiteral):
        return _quantity(node)
    if isinstance(node, CodingLiteral):
        return _coding(node)
    if isinstance(node, Variable):
        return f"%{name(node.name)}"
    if isinstance(node, TypeSpecifier):
        return _type(node)
    if isinstance(node, This | Index | Total):
        return {This: "$this", Index: "$index", Total: "$total"}[type(node)]
    raise TypeError(f"not a FHIRPath node: {node!r}")
