"""The parsed form of a FHIRPath expression: small frozen dataclasses, one per construct.

The parser (``workbench.fhirpath.parser``) builds these; the view compiler
(``workbench.views``) turns them into vectorised column expressions. Nothing here evaluates.

>>> Member(Identifier("name"), "family")
Member(base=Identifier(name='name'), name='family')
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal as TypingLiteral

#: The kinds of literal FHIRPath writes, and the Coding literal of Pathling's extension.
LiteralKind = TypingLiteral[
    "empty",
    "boolean",
    "string",
    "integer",
    "long",
    "decimal",
    "date",
    "datetime",
    "time",
    "quantity",
    "coding",
]


@dataclass(frozen=True)
class Literal:
    """A literal: ``{}`` (kind ``empty``, value None), ``true``, ``'text'``, ``3``, ``3L``,
    ``1.50`` (a Decimal, its precision kept), ``@2020-01`` (the text after ``@``),
    ``@2020-01-01T10:00`` (``datetime``), ``@T10:00`` (``time``, the text after ``@T``)."""

    kind: LiteralKind
    value: str | bool | int | Decimal | None


@dataclass(frozen=True)
class QuantityLiteral:
    """``4.5 'mg'`` or ``3 days``: a number (Decimal) and a unit (UCUM code or calendar word)."""

    value: Decimal
    unit: str | None


@dataclass(frozen=True)
class CodingLiteral:
    """Pathling's Coding literal ``system|code[|version[|display[|userSelected]]]``; quoted
    components (``'...'``) are given unquoted and unescaped."""

    system: str
    code: str
    version: str | None = None
    display: str | None = None
    user_selected: bool | None = None


@dataclass(frozen=True)
class Identifier:
    """A name at the start of a path (``name`` in ``name.family``, or a type name such as
    ``Patient``); backticked names (`` `div` ``) are given without their backticks."""

    name: str


@dataclass(frozen=True)
class Member:
    """``base.name``: the children named ``name`` of each item of ``base``."""

    base: Node
    name: str


@dataclass(frozen=True)
class Function:
    """``base.name(args)``, or ``name(args)`` at the start of an expression (base None).
    The arguments stay unevaluated expressions: ``where``, ``exists``, ``select`` and
    ``repeat`` evaluate theirs once per item."""

    base: Node | None
    name: str
    args: tuple[Node, ...] = ()


@dataclass(frozen=True)
class Indexer:
    """``base[index]``."""

    base: Node
    index: Node


@dataclass(frozen=True)
class TypeSpecifier:
    """A type name after ``is``/``as`` or inside ``ofType()``: ``Quantity``,
    ``FHIR.Quantity``, ``System.String`` (namespace None when not written)."""

    namespace: str | None
    name: str


@dataclass(frozen=True)
class Binary:
    """``left op right``; ``op`` is written as FHIRPath writes it: ``*`` ``/`` ``div``
    ``mod`` ``+`` ``-`` ``&`` ``|`` ``<`` ``<=`` ``>`` ``>=`` ``=`` ``~`` ``!=`` ``!~``
    ``in`` ``contains`` ``and`` ``or`` ``xor`` ``implies``."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class TypeOperation:
    """``operand is Type`` or ``operand as Type``."""

    op: TypingLiteral["is", "as"]
    operand: Node
    type: TypeSpecifier


@dataclass(frozen=True)
class Unary:
    """``-operand`` or ``+operand``."""

    op: TypingLiteral["-", "+"]
    operand: Node


@dataclass(frozen=True)
class Variable:
    """``%name`` (``%resource``, ``%rowIndex``, a view's constant); a delimited name
    (``%`vs-x` ``) and a string one (``%'vs-x'``) are given without their quotes."""

    name: str


@dataclass(frozen=True)
class This:
    """``$this``."""


@dataclass(frozen=True)
class Index:
    """``$index``."""


@dataclass(frozen=True)
class Total:
    """``$total``."""


Node = (
    Literal
    | QuantityLiteral
    | CodingLiteral
    | Identifier
    | Member
    | Function
    | Indexer
    | TypeSpecifier
    | Binary
    | TypeOperation
    | Unary
    | Variable
    | This
    | Index
    | Total
)
