"""SNOMED CT Expression Constraint Language (ECL 2.x, brief syntax), parsed with lark.

The grammar follows the rules of SNOMED International's ECL ABNF
(https://confluence.ihtsdotools.org/display/DOCECL, rule names kept in lower case):
expressionConstraint, refined / compound (conjunction, disjunction, exclusion) / dotted /
subExpressionConstraint; the constraint operators ``<``, ``<<``, ``<!``, ``<<!``, ``>``,
``>>``, ``>!``, ``>>!`` and ECL 2.2's top ``!!>`` and bottom ``!!<``; memberOf ``^``; the
wildcard ``*``; refinements with attribute sets, attribute groups, cardinality, the reverse
flag ``R``, expression / numeric / string / boolean comparisons; description (``term``,
``language``, ``type``, ``typeId``, ``dialect``, ``dialectId``) and concept (``active``,
``definitionStatus``, ``moduleId``, ``effectiveTime``) filters; history supplements
``{{ +HISTORY[-MIN|-MOD|-MAX] }}``.
Terms between pipes and comments are ignored.

``parse`` returns a small tree of frozen dataclasses; a malformed constraint raises
ExpressionSyntaxError saying at which line and column parsing stopped and what was expected.

>>> parse("<< 404684003 |Clinical finding| : 363698007 = << 39057004")
Refined(expr=Sub(op='<<', member=False, focus=Concept(id=404684003), filters=()), \
refinement=Attribute(card=None, reverse=False, name=Sub(op=None, member=False, \
focus=Concept(id=363698007), filters=()), op='=', value=Sub(op='<<', member=False, \
focus=Concept(id=39057004), filters=()), kind='expr'))
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput, VisitError

from workbench.errors import ExpressionSyntaxError

GRAMMAR = r"""
start: expression_constraint

?expression_constraint: refined | compound | dotted | sub
refined: sub ":" refinement
?compound: conjunction | disjunction | exclusion
conjunction: sub (AND sub)+
disjunction: sub (OR sub)+
exclusion: sub MINUS sub
dotted: sub ("." sub)+
sub: CONSTRAINT_OP? MEMBER_OF? focus (filter_constraint | history_supplement)*
?focus: concept_reference | WILDCARD -> wildcard | "(" expression_constraint ")"
concept_reference: SCTID TERM?

?refinement: sub_refinement | refinement_and | refinement_or
refinement_and: sub_refinement (AND sub_refinement)+
refinement_or: sub_refinement (OR sub_refinement)+
?sub_refinement: attribute_set | attribute_group | "(" refinement ")"
?attribute_set: sub_attribute_set | attribute_and | attribute_or
attribute_and: sub_attribute_set (AND sub_attribute_set)+
attribute_or: sub_attribute_set (OR sub_attribute_set)+
?sub_attribute_set: attribute | "(" attribute_set ")"
attribute_group: cardinality? "{" attribute_set "}"
attribute: cardinality? REVERSE? sub comparison
cardinality: "[" INT ".." (INT | MANY) "]"
?comparison: EXPR_OP sub -> expr_comparison
    | NUM_OP "#" NUMBER -> num_comparison
    | EXPR_OP STRING -> str_comparison
    | EXPR_OP BOOLEAN -> bool_comparison

filter_constraint: "{{" FILTER_DOMAIN? filter ("," filter)* "}}"
history_supplement: "{{" "+" HISTORY HISTORY_PROFILE? "}}"
?filter: term_filter | language_filter | type_filter | type_id_filter | dialect_filter
    | active_filter | definition_status_filter | module_filter | effective_time_filter
term_filter: "term"i EXPR_OP (typed_term | "(" typed_term+ ")")
typed_term: (SEARCH_KIND ":")? STRING
language_filter: "language"i EXPR_OP (LANG | "(" LANG+ ")")
type_filter: "type"i EXPR_OP (TYPE_TOKEN | "(" TYPE_TOKEN+ ")")
type_id_filter: "typeId"i EXPR_OP (concept_reference | "(" concept_reference+ ")")
dialect_filter: DIALECT_KW EXPR_OP (dialect | "(" dialect+ ")") acceptability?
dialect: concept_reference | ALIAS
acceptability: "(" (ACCEPT_TOKEN+ | concept_reference+) ")"
active_filter: "active"i EXPR_OP (BOOLEAN | INT)
definition_status_filter: "definitionStatus"i EXPR_OP (DEF_TOKEN | concept_reference)
module_filter: "moduleId"i EXPR_OP (concept_reference | "(" concept_reference+ ")")
effective_time_filter: "effectiveTime"i NUM_OP (STRING | "(" STRING+ ")")

CONSTRAINT_OP: "<<!" | "<<" | "<!" | "<" | ">>!" | ">>" | ">!" | ">" | "!!>" | "!!<"
HISTORY: /(?i:history)/
HISTORY_PROFILE: /-(?i:min|mod|max)(?![A-Za-z0-9_])/
MEMBER_OF: "^"
WILDCARD: "*"
MANY: "*"
AND: /(?i:and)(?![A-Za-z0-9_])/ | ","
OR: /(?i:or)(?![A-Za-z0-9_])/
MINUS: /(?i:minus)(?![A-Za-z0-9_])/
REVERSE: /R(?![A-Za-z0-9_])/
EXPR_OP: "!=" | "="
NUM_OP: "!=" | "<=" | ">=" | "=" | "<" | ">"
SCTID: /[1-9][0-9]{5,17}/
TERM: /\|[^|]*\|/
INT: /[0-9]+/
NUMBER: /[+-]?[0-9]+(\.[0-9]+)?/
STRING: /"(\\.|[^"\\])*"/
BOOLEAN: /(?i:true|false)(?![A-Za-z0-9_])/
FILTER_DOMAIN: /[CD](?![A-Za-z0-9_])/
SEARCH_KIND: /(?i:match|wild)/
LANG: /[A-Za-z]{2}(?![A-Za-z0-9_-])/
TYPE_TOKEN: /(?i:syn|fsn|def)(?![A-Za-z0-9_])/
DEF_TOKEN: /(?i:primitive|defined)(?![A-Za-z0-9_])/
DIALECT_KW: /(?i:dialectId|dialect)(?![A-Za-z0-9_])/
ALIAS: /[A-Za-z][A-Za-z0-9-]*/
ACCEPT_TOKEN: /(?i:accept|prefer)(?![A-Za-z0-9_])/
COMMENT: /\/\*(.|\n)*?\*\//

%import common.WS
%ignore WS
%ignore COMMENT
"""


# --- the tree ------------------------------------------------------------------------


@dataclass(frozen=True)
class Concept:
    """A concept reference (its term, if any, is ignored)."""

    id: int


@dataclass(frozen=True)
class Wildcard:
    """``*``: any concept."""


@dataclass(frozen=True)
class Filter:
    """A ``{{ … }}`` filter: ``kind`` (term, language, type, typeId, dialect, active,
    definitionStatus, moduleId), operator and values (search terms are ``(kind, text)``)."""

    kind: str
    op: str
    values: tuple[Any, ...]
    acceptability: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Sub:
    """A sub-expression: ``[op] [^] focus``, then its ``{{ … }}`` filter blocks."""

    op: str | None
    member: bool
    focus: Any
    filters: tuple[tuple[Filter, ...], ...] = ()


@dataclass(frozen=True)
class Compound:
    """``AND``, ``OR`` (any number of operands) or ``MINUS`` (two)."""

    kind: str
    parts: tuple[Any, ...]


@dataclass(frozen=True)
class Dotted:
    """``expr . attr . attr``: the values of those attributes of the concepts of ``expr``."""

    expr: Any
    attributes: tuple[Any, ...]


@dataclass(frozen=True)
class Cardinality:
    """``[min..max]``; max None means many."""

    min: int
    max: int | None


@dataclass(frozen=True)
class Attribute:
    """One attribute constraint; ``kind`` is expr, num, str or bool."""

    card: Cardinality | None
    reverse: bool
    name: Any
    op: str
    value: Any
    kind: str


@dataclass(frozen=True)
class Group:
    """An attribute group ``[card] { attribute set }``."""

    card: Cardinality | None
    body: Any


@dataclass(frozen=True)
class Logical:
    """A conjunction or disjunction of refinements or attribute sets."""

    kind: str
    parts: tuple[Any, ...]


@dataclass(frozen=True)
class Refined:
    """``expr : refinement``."""

    expr: Any
    refinement: Any


def concept_ids(node: Any) -> set[int]:
    """Every concept id a parsed constraint names (focus concepts, attributes, values)."""
    if isinstance(node, Concept):
        return {node.id}
    found: set[int] = set()
    if isinstance(node, tuple):
        for item in node:
            found |= concept_ids(item)
    elif hasattr(node, "__dataclass_fields__"):
        for name in node.__dataclass_fields__:
            found |= concept_ids(getattr(node, name))
    return found


# --- parsing -------------------------------------------------------------------------


def _text(token: Any) -> str:
    return str(token)


class _Build(Transformer):
    def start(self, items: list[Any]) -> Any:
        return items[0]

    def concept_reference(self, items: list[Token]) -> Concept:
        return Concept(int(items[0]))

    def wildcard(self, _items: list[Any]) -> Wildcard:
        return Wildcard()

    def sub(self, items: list[Any]) -> Sub:
        op: str | None = None
        member = False
        filters: list[tuple[Filter, ...]] = []
        focus: Any = None
        for item in items:
            if isinstance(item, Token) and item.type == "CONSTRAINT_OP":
                op = str(item)
            elif isinstance(item, Token) and item.type == "MEMBER_OF":
                member = True
            elif isinstance(item, list):
                filters.append(tuple(item))
            else:
                focus = item
        return Sub(op, member, focus, tuple(filters))

    def _compound(self, kind: str, items: list[Any]) -> Compound:
        return Compound(kind, tuple(i for i in items if not isinstance(i, Token)))

    def conjunction(self, items: list[Any]) -> Compound:
        return self._compound("and", items)

    def disjunction(self, items: list[Any]) -> Compound:
        return self._compound("or", items)

    def exclusion(self, items: list[Any]) -> Compound:
        return self._compound("minus", items)

    def dotted(self, items: list[Any]) -> Dotted:
        return Dotted(items[0], tuple(items[1:]))

    def refined(self, items: list[Any]) -> Refined:
        return Refined(items[0], items[1])

    def _logical(self, kind: str, items: list[Any]) -> Logical:
        return Logical(kind, tuple(i for i in items if not isinstance(i, Token)))

    def refinement_and(self, items: list[Any]) -> Logical:
        return self._logical("and", items)

    def attribute_and(self, items: list[Any]) -> Logical:
        return self._logical("and", items)

    def refinement_or(self, items: list[Any]) -> Logical:
        return self._logical("or", items)

    def attribute_or(self, items: list[Any]) -> Logical:
        return self._logical("or", items)

    def cardinality(self, items: list[Token]) -> Cardinality:
        low = int(items[0])
        high = None if str(items[1]) == "*" else int(items[1])
        if high is not None and high < low:
            raise ValueError(f"the cardinality [{low}..{high}] has its maximum below its minimum")
        return Cardinality(low, high)

    def attribute_group(self, items: list[Any]) -> Group:
        card = items[0] if isinstance(items[0], Cardinality) else None
        return Group(card, items[-1])

    def attribute(self, items: list[Any]) -> Attribute:
        card = items[0] if isinstance(items[0], Cardinality) else None
        rest = items[1:] if card is not None else items
        reverse = isinstance(rest[0], Token) and rest[0].type == "REVERSE"
        if reverse:
            rest = rest[1:]
        name, (op, value, kind) = rest
        return Attribute(card, reverse, name, op, value, kind)

    def expr_comparison(self, items: list[Any]) -> tuple[str, Any, str]:
        return str(items[0]), items[1], "expr"

    def num_comparison(self, items: list[Any]) -> tuple[str, Any, str]:
        return str(items[0]), float(items[1]), "num"

    def str_comparison(self, items: list[Any]) -> tuple[str, Any, str]:
        return str(items[0]), _unquote(str(items[1])), "str"

    def bool_comparison(self, items: list[Any]) -> tuple[str, Any, str]:
        return str(items[0]), str(items[1]).lower() == "true", "bool"

    def history_supplement(self, items: list[Token]) -> list[Filter]:
        profile = str(items[1])[1:].lower() if len(items) > 1 else "max"
        return [Filter("history", "=", (profile,))]

    def filter_constraint(self, items: list[Any]) -> list[Filter]:
        return [i for i in items if isinstance(i, Filter)]

    def typed_term(self, items: list[Token]) -> tuple[str, str]:
        kind = str(items[0]).lower() if len(items) == 2 else "match"
        return kind, _unquote(str(items[-1]))

    def _filter(self, kind: str, items: list[Any]) -> Filter:
        op = str(items[0])
        values = tuple(
            v.id if isinstance(v, Concept) else (str(v) if isinstance(v, Token) else v)
            for v in items[1:]
        )
        return Filter(kind, op, values)

    def term_filter(self, items: list[Any]) -> Filter:
        return self._filter("term", items)

    def language_filter(self, items: list[Any]) -> Filter:
        return self._filter("language", items)

    def type_filter(self, items: list[Any]) -> Filter:
        return self._filter("type", items)

    def type_id_filter(self, items: list[Any]) -> Filter:
        return self._filter("typeId", items)

    def dialect(self, items: list[Any]) -> Any:
        item = items[0]
        return item.id if isinstance(item, Concept) else str(item).lower()

    def acceptability(self, items: list[Any]) -> tuple[Any, ...]:
        return tuple(i.id if isinstance(i, Concept) else str(i).lower() for i in items)

    def dialect_filter(self, items: list[Any]) -> Filter:
        kind = "dialectId" if str(items[0]).lower() == "dialectid" else "dialect"
        accept: tuple[Any, ...] = ()
        if isinstance(items[-1], tuple):
            accept = items[-1]
            items = items[:-1]
        built = self._filter(kind, items[1:])
        return Filter(built.kind, built.op, built.values, accept)

    def active_filter(self, items: list[Any]) -> Filter:
        value = str(items[1]).lower() in ("true", "1")
        return Filter("active", str(items[0]), (value,))

    def definition_status_filter(self, items: list[Any]) -> Filter:
        return self._filter("definitionStatus", items)

    def module_filter(self, items: list[Any]) -> Filter:
        return self._filter("moduleId", items)

    def effective_time_filter(self, items: list[Any]) -> Filter:
        """``effectiveTime >= "20200131"`` (several dates in parentheses: any of them)."""
        dates = []
        for item in items[1:]:
            text = _unquote(str(item))
            if not (len(text) == 8 and text.isdigit()):
                raise ExpressionSyntaxError(
                    f'The ECL effectiveTime filter wants dates as "yyyymmdd", not {text!r}'
                )
            dates.append(int(text))
        return Filter("effectiveTime", str(items[0]), tuple(dates))


def _unquote(text: str) -> str:
    body = text[1:-1]
    return body.replace('\\"', '"').replace("\\\\", "\\")


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="earley", lexer="dynamic", ambiguity="resolve")


def describe_error(kind: str, text: str, exc: UnexpectedInput) -> str:
    """A one-line message saying where parsing stopped (shared with the expression parser)."""
    line = getattr(exc, "line", -1)
    column = getattr(exc, "column", -1)
    pos = getattr(exc, "pos_in_stream", None)
    names = getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ()
    expected = sorted({_NAMES.get(n, n) for n in names if not n.startswith("__")})
    token = getattr(exc, "token", None)
    at_end = token is not None and getattr(token, "type", "") == "$END"
    if at_end or line is None or line < 0 or pos is None or pos >= len(text):
        where = "the end of the text (it stops too early)"
    else:
        where = f"line {line}, column {column} (at {text[pos : pos + 20]!r})"
    hint = f"; expected {', '.join(expected[:12])}" if expected else ""
    return f"The {kind} {text!r} does not parse at {where}{hint}"


_NAMES = {
    "LPAR": "'('",
    "RPAR": "')'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LSQB": "'['",
    "COLON": "':'",
    "HASH": "'#'",
    "EQUAL": "'='",
    "PLUS": "'+'",
    "COMMA": "','",
    "SCTID": "a concept id",
    "TERM": "a |term|",
    "CONSTRAINT_OP": "a constraint operator (< << > >> …)",
    "MEMBER_OF": "'^'",
    "WILDCARD": "'*'",
    "STRING": "a quoted string",
    "BOOLEAN": "true or false",
    "AND": "AND",
    "OR": "OR",
    "MINUS": "MINUS",
}


@lru_cache(maxsize=4096)
def parse(text: str) -> Any:
    """Parse an ECL expression constraint into its tree.

    Raises ExpressionSyntaxError (an ``invalid`` 400) saying where the parse fails.
    """
    if not text or not text.strip():
        raise ExpressionSyntaxError("The ECL expression constraint is empty")
    try:
        tree = _parser().parse(text)
        return _Build().transform(tree)
    except UnexpectedInput as exc:
        raise ExpressionSyntaxError(
            describe_error("ECL expression constraint", text, exc),
            position=getattr(exc, "pos_in_stream", None),
        ) from None
    except VisitError as exc:
        raise ExpressionSyntaxError(
            f"The ECL expression constraint {text!r} is not valid: {exc.orig_exc}"
        ) from None
