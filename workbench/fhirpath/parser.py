"""FHIRPath (N1, 2.0.0) read with lark into ``workbench.fhirpath.nodes``.

The grammar translates the official ``fhirpath.g4`` (http://hl7.org/fhirpath/N1/grammar.html)
into a lark LALR grammar (time linear in the text, no recursion while reading): one rule per
precedence level, from the tightest, invocation ``.`` and indexer ``[]``, then polarity,
``* / div mod``, ``+ - &``, ``is as``, ``|``, ``<= < > >=``, ``= ~ != !~``, ``in contains``,
``and``, ``or xor``, to ``implies``; every binary level is left-associative, as the g4 (which
marks none ``assoc=right``) has it. Besides the g4 it reads FHIRPath's long numbers (``3L``)
and Pathling's Coding literal (``http://loinc.org|'8867-4'``, see ``CODING`` below).

Keywords: as in the g4, only ``as``, ``contains``, ``in`` and ``is`` may be identifiers; any
other (``div``, ``and``, ``true``, ``day`` …) is written in backticks (``text.`div```), and a
bare one where a name is expected is refused with that hint. A keyword is one only as a whole
word (``a orb`` is not ``a or b``).

The arguments of ``ofType()``, ``is()``, ``as()`` and SQL on FHIR's ``getReferenceKey()``
are type names, read into ``TypeSpecifier`` (``TYPE_FUNCTIONS``).

>>> parse("name.where(use = 'official').family")
Member(base=Function(base=Identifier(name='name'), name='where', \
args=(Binary(op='=', left=Identifier(name='use'), right=Literal(kind='string', \
value='official')),)), name='family')
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from functools import lru_cache
from typing import Any, cast

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput
from lark.lark import PostLex

from workbench.errors import GrammarLimitError
from workbench.fhirpath import messages
from workbench.fhirpath.errors import FhirPathError
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
from workbench.releases import grammar

#: The calendar duration units a quantity may name without quotes (``4 days``).
CALENDAR_UNITS = tuple(
    f"{word}{plural}"
    for word in ("year", "month", "week", "day", "hour", "minute", "second", "millisecond")
    for plural in ("", "s")
)
#: The words of the grammar that match a name but may not be one (the g4's ``identifier``
#: allows only ``as``, ``contains``, ``in`` and ``is``): write them in backticks.
KEYWORDS = frozenset(
    ("and", "or", "xor", "implies", "div", "mod", "true", "false", *CALENDAR_UNITS)
)
#: The binary operators by precedence level, from the loosest to the tightest (``is`` and
#: ``as``, whose right side is a type name, have the level between ``|`` and ``+``).
LEVELS: tuple[tuple[str, ...], ...] = (
    ("implies",),
    ("or", "xor"),
    ("and",),
    ("in", "contains"),
    ("=", "~", "!=", "!~"),
    ("<=", "<", ">", ">="),
    ("|",),
    ("is", "as"),
    ("+", "-", "&"),
    ("*", "/", "div", "mod"),
)
#: The functions whose argument is a type name, read as a ``TypeSpecifier``.
TYPE_FUNCTIONS = frozenset(("ofType", "is", "as", "getReferenceKey"))

_QUOTED = r"'(?:\\.|[^'\\])*'"
_RAW = r"[^\s'|(),]+"
_COMPONENT = rf"(?:{_QUOTED}|{_RAW})"

# A Coding literal (Pathling's extension) is one token: a system that is a URI (a scheme of
# at most 32 characters and ``:``, so never FHIRPath, whose grammar has no ``:``), ``|``,
# the code, then up to three more components (version, display, userSelected); each is a run
# of characters other than whitespace, quotes, ``|``, ``(``, ``)`` and ``,``, or a quoted
# string. An empty component stands only before another ``|``. ``a|b`` and ``'a'|'b'`` stay
# unions, and a Coding literal is only read where a term may start.
CODING = (
    rf"[A-Za-z][A-Za-z0-9+.\-]{{0,31}}:[^\s'|(),]*\|{_COMPONENT}"
    rf"(?:\|(?:{_COMPONENT}|(?=\|{{1,2}}{_COMPONENT}))){{0,3}}"
)
_TIME = r"[0-9][0-9](?::[0-9][0-9](?::[0-9][0-9](?:\.[0-9]+)?)?)?"
_DATE = r"[0-9]{4}(?:-[0-9][0-9](?:-[0-9][0-9])?)?"
_ZONE = r"(?:Z|[+\-][0-9][0-9]:[0-9][0-9])"

GRAMMAR = rf"""
start: expression

?expression: implies
?implies: or_expr | implies implies_op or_expr -> binary
!implies_op: "implies"
?or_expr: and_expr | or_expr or_op and_expr -> binary
!or_op: "or" | "xor"
?and_expr: membership | and_expr and_op membership -> binary
!and_op: "and"
?membership: equality | membership membership_op equality -> binary
!membership_op: "in" | "contains"
?equality: inequality | equality equality_op inequality -> binary
!equality_op: "=" | "~" | "!=" | "!~"
?inequality: union | inequality inequality_op union -> binary
!inequality_op: "<=" | "<" | ">" | ">="
?union: type_expr | union union_op type_expr -> binary
!union_op: "|"
?type_expr: additive | type_expr type_op type_specifier -> type_operation
!type_op: "is" | "as"
?additive: multiplicative | additive additive_op multiplicative -> binary
!additive_op: "+" | "-" | "&"
?multiplicative: polarity | multiplicative multiplicative_op polarity -> binary
!multiplicative_op: "*" | "/" | "div" | "mod"
?polarity: postfix | polarity_op polarity -> unary
!polarity_op: "+" | "-"
?postfix: term
    | postfix "." identifier -> member
    | postfix "." identifier "(" [params] ")" -> method
    | postfix "[" expression "]" -> indexer
?term: identifier -> root
    | identifier "(" [params] ")" -> call
    | THIS -> this
    | INDEX -> index
    | TOTAL -> total
    | literal
    | "%" identifier -> variable
    | "%" STRING -> variable
    | "(" expression ")"
params: expression ("," expression)*
literal: "{{" "}}" -> empty
    | "true" -> true
    | "false" -> false
    | STRING -> string
    | NUMBER -> number
    | LONGNUMBER -> long
    | DATETIME -> date_time
    | NUMBER unit -> quantity
    | CODING -> coding
!unit: STRING | {" | ".join(f'"{u}"' for u in CALENDAR_UNITS)}
type_specifier: identifier ("." identifier)*
!identifier: IDENTIFIER | DELIMITEDIDENTIFIER | "as" | "contains" | "in" | "is"

THIS: "$this"
INDEX: "$index"
TOTAL: "$total"
IDENTIFIER: /[A-Za-z_][A-Za-z0-9_]*/
DELIMITEDIDENTIFIER: /`(?:\\.|[^`\\])*`/
STRING: /{_QUOTED}/
NUMBER: /[0-9]+(?:\.[0-9]+)?/
LONGNUMBER.2: /[0-9]+L/
DATETIME: /@(?:T{_TIME}|{_DATE}(?:T(?:{_TIME}{_ZONE}?)?)?)/
CODING.3: /{CODING}/
WS: /[ \t\r\n]+/
COMMENT: /\/\*(?:[^*]|\*(?!\/))*\*\//
LINE_COMMENT: /\/\/[^\r\n]*/
%ignore WS
%ignore COMMENT
%ignore LINE_COMMENT
"""

KIND = "FHIRPath expression"
#: FHIRPath's escapes in strings and delimited identifiers (and ``\uXXXX``)
_ESCAPES = {
    "'": "'",
    '"': '"',
    "`": "`",
    "\\": "\\",
    "/": "/",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)


class _Invalid(ValueError):
    """Text that lexes and parses but breaks a rule (raised while the nodes are built)."""

    def __init__(self, text: str, position: int | None) -> None:
        super().__init__(text)
        self.position = position


def unescape(token: Token) -> str:
    """The text of a quoted string or delimited identifier, its quotes off and its escapes
    (``\\' \\" \\` \\\\ \\/ \\f \\n \\r \\t \\uXXXX``) read."""
    body = str(token)[1:-1]
    if "\\" not in body:
        return body

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if len(code) == 5:
            return chr(int(code[1:], 16))
        if code in _ESCAPES:
            return _ESCAPES[code]
        offset = (token.start_pos or 0) + 1 + match.start()
        raise _Invalid(
            f"the escape \\{code} is not FHIRPath (\\' \\\" \\` \\\\ \\/ \\f \\n \\r \\t "
            "\\uXXXX; a backslash itself is \\\\)",
            offset,
        )

    return _ESCAPE.sub(one, body)


_COMPONENT_RE = re.compile(rf"{_QUOTED}|[^|]*")


def coding(token: Token) -> CodingLiteral:
    """The nodes of a Coding literal token (its components split, quoted ones unescaped)."""
    text = str(token)
    parts: list[str | None] = []
    at = 0
    while True:
        match = _COMPONENT_RE.match(text, at)
        assert match is not None  # the pattern matches the empty string
        part = match.group()
        if part.startswith("'"):
            quoted = Token("STRING", part, start_pos=(token.start_pos or 0) + at)
            parts.append(unescape(quoted))
        else:
            parts.append(part or None)
        at = match.end() + 1
        if at > len(text):
            break
    system, code, *rest = parts
    version, display, selected = [*rest, None, None, None][:3]
    user_selected = None
    if selected is not None:
        if selected not in ("true", "false"):
            raise _Invalid(
                f"the userSelected component of a Coding literal is true or false, not "
                f"{selected!r}",
                token.start_pos,
            )
        user_selected = selected == "true"
    assert system is not None and code is not None  # the token's pattern requires both
    return CodingLiteral(system, code, version, display, user_selected)


def _argument_type(node: Node, where: int | None) -> TypeSpecifier:
    """``Quantity`` or ``FHIR.Quantity`` written as an argument, read as a type name."""
    names: list[str] = []
    while isinstance(node, Member):
        names.append(node.name)
        node = node.base
    if not isinstance(node, Identifier):
        raise _Invalid("the argument is a type name (Quantity, FHIR.Quantity)", where)
    names.append(node.name)
    names.reverse()
    return TypeSpecifier(".".join(names[:-1]) or None, names[-1])


def _arguments(name: Token, params: list[Node] | None) -> tuple[Node, ...]:
    args = tuple(params or ())
    if str(name) in TYPE_FUNCTIONS and args:
        where = name.start_pos
        args = (_argument_type(args[0], where), *args[1:])
    return args


class _Build(Transformer):
    """Builds the nodes as the LALR parser reduces (bottom up: no recursion)."""

    def start(self, items: list[Any]) -> Node:
        return items[0]

    def binary(self, items: list[Any]) -> Binary:
        left, op, right = items
        return Binary(op, left, right)

    def _op(self, items: list[Token]) -> str:
        return str(items[0])

    implies_op = or_op = and_op = membership_op = equality_op = _op
    inequality_op = union_op = type_op = additive_op = multiplicative_op = polarity_op = _op

    def type_operation(self, items: list[Any]) -> TypeOperation:
        operand, op, spec = items
        return TypeOperation(op, operand, spec)

    def type_specifier(self, items: list[Token]) -> TypeSpecifier:
        names = [str(i) for i in items]
        return TypeSpecifier(".".join(names[:-1]) or None, names[-1])

    def unary(self, items: list[Any]) -> Unary:
        return Unary(items[0], items[1])

    def member(self, items: list[Any]) -> Member:
        return Member(items[0], str(items[1]))

    def method(self, items: list[Any]) -> Function:
        base, name, params = items
        return Function(base, str(name), _arguments(name, params))

    def indexer(self, items: list[Any]) -> Indexer:
        return Indexer(items[0], items[1])

    def root(self, items: list[Token]) -> Identifier:
        return Identifier(str(items[0]))

    def call(self, items: list[Any]) -> Function:
        name, params = items
        return Function(None, str(name), _arguments(name, params))

    def this(self, _items: list[Any]) -> This:
        return This()

    def index(self, _items: list[Any]) -> Index:
        return Index()

    def total(self, _items: list[Any]) -> Total:
        return Total()

    def variable(self, items: list[Token]) -> Variable:
        item = items[0]
        return Variable(unescape(item) if item.type == "STRING" else str(item))

    def params(self, items: list[Node]) -> list[Node]:
        return items

    def empty(self, _items: list[Any]) -> Literal:
        return Literal("empty", None)

    def true(self, _items: list[Any]) -> Literal:
        return Literal("boolean", True)

    def false(self, _items: list[Any]) -> Literal:
        return Literal("boolean", False)

    def string(self, items: list[Token]) -> Literal:
        return Literal("string", unescape(items[0]))

    def number(self, items: list[Token]) -> Literal:
        text = str(items[0])
        return Literal("decimal", Decimal(text)) if "." in text else Literal("integer", int(text))

    def long(self, items: list[Token]) -> Literal:
        return Literal("long", int(str(items[0])[:-1]))

    def date_time(self, items: list[Token]) -> Literal:
        text = str(items[0])
        if text.startswith("@T"):
            return Literal("time", text[2:])
        return Literal("datetime" if "T" in text else "date", text[1:])

    def quantity(self, items: list[Any]) -> QuantityLiteral:
        return QuantityLiteral(Decimal(str(items[0])), items[1])

    def unit(self, items: list[Token]) -> str:
        token = items[0]
        return unescape(token) if token.type == "STRING" else str(token)

    def coding(self, items: list[Token]) -> CodingLiteral:
        return coding(items[0])

    def identifier(self, items: list[Token]) -> Token:
        token = items[0]
        if token.type == "DELIMITEDIDENTIFIER":
            return Token.new_borrow_pos(token.type, unescape(token), token)
        if token.type == "IDENTIFIER" and str(token) in KEYWORDS:
            raise _Invalid(
                f"{str(token)!r} is a keyword; as a name write it in backticks (`{token}`)",
                token.start_pos,
            )
        return token


# --- reading, limits and errors -------------------------------------------------------------

#: What is counted while an expression is read (``workbench.releases.grammar``). IDENTIFIER
#: comes last: lark (1.3) chains a user callback after its keyword check with a condition
#: that closes over its loop variable, so only the last callback's terminal is counted when
#: it has that check (a keyword read as a name, ``true`` among them, is not counted).
_OPENING = ("LPAR", "LSQB")
_CLOSING = ("RPAR", "RSQB")
_TERMS = (
    "DELIMITEDIDENTIFIER",
    "STRING",
    "NUMBER",
    "LONGNUMBER",
    "DATETIME",
    "CODING",
    "THIS",
    "INDEX",
    "TOTAL",
    "IDENTIFIER",
)


class _Names(PostLex):
    """Lets every state of the contextual lexer read a name, so that a keyword is one only as
    a whole word, as in the g4 (``a orb`` is ``a`` then the name ``orb``, not ``a or b``)."""

    always_accept = ("IDENTIFIER",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return stream


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(
        GRAMMAR,
        parser="lalr",
        lexer="contextual",
        postlex=_Names(),
        transformer=_Build(),
        lexer_callbacks=grammar.callbacks(_OPENING, _CLOSING, _TERMS),
    )


def parse(text: str) -> Node:
    """Parse a FHIRPath expression into its nodes (cached on the text).

    Raises FhirPathError (400 ``invalid``) naming the column, the text there and what was
    expected when the text is not FHIRPath, and GrammarLimitError (400 ``too-long``) when
    it is over a limit of ``grammar.configured().fhirpath`` (its length, nesting depth or
    number of terms).

    >>> parse("a or b and c")
    Binary(op='or', left=Identifier(name='a'), right=Binary(op='and', \
left=Identifier(name='b'), right=Identifier(name='c')))
    >>> parse("http://loinc.org|'8867-4'")
    CodingLiteral(system='http://loinc.org', code='8867-4', version=None, display=None, \
user_selected=None)
    >>> parse("a +")
    Traceback (most recent call last):
    ...
    workbench.fhirpath.errors.FhirPathError: The FHIRPath expression 'a +' does not parse at \
column 4 (the end of the text); expected an expression
    """
    return _parse(text, grammar.configured().fhirpath)


@lru_cache(maxsize=4096)
def _parse(text: str, limits: grammar.Limits) -> Node:
    grammar.check_length(KIND, "fhirpath", text, limits)
    if not text.strip():
        raise FhirPathError(f"The {KIND} is empty", expression_text=text)
    with grammar.tracking(KIND, "fhirpath", limits) as tracker:
        try:
            node = cast(Node, _parser().parse(text))
        except UnexpectedInput as exc:
            tracker.check()  # a limit passed before the error is what is reported
            message, where = messages.describe(KIND, _parser(), text, exc)
            raise FhirPathError(message, expression_text=text, position=where) from None
        except _Invalid as exc:
            tracker.check()
            raise FhirPathError(
                f"The {KIND} {messages.shown(text)} is not valid at "
                f"{messages.where(text, exc.position)}: {exc}",
                expression_text=text,
                position=exc.position,
            ) from None
    tracker.check()
    deepest = depth(node)
    if deepest > limits.depth:
        raise GrammarLimitError(
            KIND,
            "fhirpath.depth",
            deepest,
            limits.depth,
            f"nests {deepest:,} levels deep (operators, path steps, arguments and indexes)",
        )
    return node


def children(node: Node) -> tuple[Node, ...]:
    """The nodes directly inside ``node``, left to right."""
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, Member):
        return (node.base,)
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, TypeOperation):
        return (node.operand, node.type)
    if isinstance(node, Function):
        return node.args if node.base is None else (node.base, *node.args)
    if isinstance(node, Indexer):
        return (node.base, node.index)
    return ()


def depth(node: Node) -> int:
    """How deep the nodes nest (a lone term is 1), counted without recursion."""
    deepest = 0
    todo = [(node, 1)]
    while todo:
        item, level = todo.pop()
        deepest = max(deepest, level)
        todo.extend((child, level + 1) for child in children(item))
    return deepest
