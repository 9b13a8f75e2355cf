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
from lark.exceptions import UnexpectedInput

from workbench.errors import ExpressionSyntaxError
from workbench.releases import grammar

GRAMMAR = r"""
start: expression_constraint

?expression_constraint: refined | conjunction | disjunction | exclusion | dotted | sub
refined: sub ":" refinement
conjunction: sub (AND sub)+
disjunction: sub (OR sub)+
exclusion: sub MINUS sub
dotted: sub ("." sub)+
sub: CONSTRAINT_OP? MEMBER_OF? focus (filter_constraint | history_supplement)*
?focus: concept_reference | STAR -> wildcard | "(" expression_constraint ")"
concept_reference: SCTID TERM?

?refinement: sub_refinement | refinement_chain
refinement_chain: sub_refinement ((AND | OR) sub_refinement)+
?sub_refinement: attribute | attribute_group | "(" refinement ")"
attribute_group: cardinality? "{" refinement "}"
attribute: cardinality? REVERSE? sub comparison
cardinality: "[" INT ".." (INT | STAR) "]"
?comparison: EQ sub -> expr_comparison
    | (EQ | ORD) "#" NUMBER -> num_comparison
    | EQ STRING -> str_comparison
    | EQ BOOLEAN -> bool_comparison

filter_constraint: "{{" FILTER_DOMAIN? filter ("," filter)* "}}"
history_supplement: "{{" "+" HISTORY HISTORY_PROFILE? "}}"
?filter: term_filter | language_filter | type_filter | type_id_filter | dialect_filter
    | active_filter | definition_status_filter | module_filter | effective_time_filter
term_filter: "term"i EQ (typed_term | "(" typed_term+ ")")
typed_term: (SEARCH_KIND ":")? STRING
language_filter: "language"i EQ (LANG | "(" LANG+ ")")
type_filter: "type"i EQ (TYPE_TOKEN | "(" TYPE_TOKEN+ ")")
type_id_filter: "typeId"i EQ (filter_concept | "(" filter_concept+ ")")
dialect_filter: DIALECT_KW EQ (dialect | "(" dialect+ ")") acceptability?
dialect: filter_concept | ALIAS
acceptability: "(" (ACCEPT_TOKEN+ | filter_concept+) ")"
active_filter: "active"i EQ (BOOLEAN | INT)
definition_status_filter: "definitionStatus"i EQ (DEF_TOKEN | filter_concept)
module_filter: "moduleId"i EQ (filter_concept | "(" filter_concept+ ")")
filter_concept: SCTID TERM? -> concept_reference
effective_time_filter: "effectiveTime"i (EQ | ORD) (STRING | "(" STRING+ ")")

LPAR: "("
RPAR: ")"
LBRACE: "{"
RBRACE: "}"
LBRACE2: "{{"
RBRACE2: "}}"
CONSTRAINT_OP: /<<!|<<|<!|<|>>!|>>|>!|>|!!>|!!</
HISTORY.2: /(?i:history)/
HISTORY_PROFILE: /-(?i:min|mod|max)(?![A-Za-z0-9_])/
MEMBER_OF: "^"
STAR: "*"
AND.2: /(?i:and)(?![A-Za-z0-9_])|,/
OR.2: /(?i:or)(?![A-Za-z0-9_])/
MINUS.2: /(?i:minus)(?![A-Za-z0-9_])/
REVERSE.2: /R(?![A-Za-z0-9_])/
EQ: /!?=/
ORD: /[<>]=?/
SCTID: /[1-9][0-9]{5,17}/
TERM: /\|[^|]*\|/
INT: /[0-9]+/
NUMBER: /[+-]?[0-9]+(\.[0-9]+)?/
STRING: /"(\\.|[^"\\])*"/
BOOLEAN.2: /(?i:true|false)(?![A-Za-z0-9_])/
FILTER_DOMAIN.2: /[CD](?![A-Za-z0-9_])/
SEARCH_KIND.2: /(?i:match|wild)/
LANG: /[A-Za-z]{2}(?![A-Za-z0-9_-])/
TYPE_TOKEN.2: /(?i:syn|fsn|def)(?![A-Za-z0-9_])/
DEF_TOKEN.2: /(?i:primitive|defined)(?![A-Za-z0-9_])/
DIALECT_KW.2: /(?i:dialectId|dialect)(?![A-Za-z0-9_])/
ALIAS: /[A-Za-z][A-Za-z0-9-]*/
ACCEPT_TOKEN.2: /(?i:accept|prefer)(?![A-Za-z0-9_])/
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
    found: set[int] = set()
    todo = [node]
    while todo:
        item = todo.pop()
        if isinstance(item, Concept):
            found.add(item.id)
        elif isinstance(item, tuple):
            todo.extend(item)
        elif hasattr(item, "__dataclass_fields__"):
            todo.extend(getattr(item, name) for name in item.__dataclass_fields__)
    return found


# --- parsing -------------------------------------------------------------------------


class _Invalid(ValueError):
    """A constraint that parses but breaks a rule of ECL (raised while it is built)."""


@dataclass(frozen=True)
class _Chain:
    """A refinement chain while it is built: ``plain`` when it is an attribute set (only
    attributes, joined by one operator), which may stand in an attribute group."""

    node: Logical
    plain: bool


def _plain(item: Any) -> bool:
    return isinstance(item, Attribute) or (isinstance(item, _Chain) and item.plain)


def _node(item: Any) -> Any:
    return item.node if isinstance(item, _Chain) else item


def _chain(items: list[Any], ops: list[str]) -> _Chain:
    """``a AND b OR c …``: ECL's grammar nests attribute sets (attributes joined by one
    operator) in refinements (attribute sets, groups and parenthesised refinements joined by
    one operator), so mixing AND and OR is read as AND over OR-joined attribute sets unless a
    group or a parenthesised refinement needs the other way round (``{a} OR b AND c``)."""
    if len(set(ops)) == 1:
        plain = all(_plain(i) for i in items)
        return _Chain(Logical(ops[0], tuple(_node(i) for i in items)), plain)
    beside = {op for i, op in enumerate(ops) if not (_plain(items[i]) and _plain(items[i + 1]))}
    if len(beside) > 1:
        raise _Invalid("AND and OR are mixed next to an attribute group; add parentheses")
    top = beside.pop() if beside else "and"
    runs: list[list[Any]] = [[items[0]]]
    for op, item in zip(ops, items[1:], strict=True):
        if op == top:
            runs.append([item])
        else:
            runs[-1].append(item)
    inner = "or" if top == "and" else "and"
    parts = tuple(
        _node(run[0]) if len(run) == 1 else Logical(inner, tuple(_node(i) for i in run))
        for run in runs
    )
    return _Chain(Logical(top, parts), False)


class _Build(Transformer):
    """Builds the tree while the LALR parser reduces (no recursion over the text's depth)."""

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
        return Refined(items[0], _node(items[1]))

    def refinement_chain(self, items: list[Any]) -> _Chain:
        return _chain(items[0::2], ["and" if op.type == "AND" else "or" for op in items[1::2]])

    def cardinality(self, items: list[Token]) -> Cardinality:
        low = int(items[0])
        high = None if str(items[1]) == "*" else int(items[1])
        if high is not None and high < low:
            raise _Invalid(f"the cardinality [{low}..{high}] has its maximum below its minimum")
        return Cardinality(low, high)

    def attribute_group(self, items: list[Any]) -> Group:
        card = items[0] if isinstance(items[0], Cardinality) else None
        body = items[-1]
        if not _plain(body):
            raise _Invalid(
                "an attribute group holds attributes joined by AND or by OR, not both and "
                "no other group"
            )
        return Group(card, _node(body))

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
                raise _Invalid(
                    f'The ECL effectiveTime filter wants dates as "yyyymmdd", not {text!r}'
                )
            dates.append(int(text))
        return Filter("effectiveTime", str(items[0]), tuple(dates))


def _unquote(text: str) -> str:
    body = text[1:-1]
    return body.replace('\\"', '"').replace("\\\\", "\\")


#: What is counted while a constraint is read (see ``workbench.releases.grammar``)
_OPENING = ("LPAR", "LBRACE", "LBRACE2")
_CLOSING = ("RPAR", "RBRACE", "RBRACE2")
_TERMS = [
    "SCTID",
    "STAR",
    "STRING",
    "NUMBER",
    "BOOLEAN",
    "INT",
    "LANG",
    "ALIAS",
    "TYPE_TOKEN",
    "DEF_TOKEN",
    "ACCEPT_TOKEN",
]
KIND = "ECL expression constraint"


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(
        GRAMMAR,
        parser="lalr",
        transformer=_Build(),
        lexer_callbacks=grammar.callbacks(_OPENING, _CLOSING, _TERMS),
    )


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
    return f"The {kind} {shown(text)} does not parse at {where}{hint}"


def shown(text: str, most: int = 200) -> str:
    """The text quoted for a message (a long one cut, saying how long it is)."""
    if len(text) <= most:
        return repr(text)
    return f"{text[:most]!r}… ({len(text):,} characters)"


_NAMES = {
    "LPAR": "'('",
    "RPAR": "')'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LBRACE2": "'{{'",
    "RBRACE2": "'}}'",
    "EQ": "'=' or '!='",
    "ORD": "'<', '<=', '>' or '>='",
    "STAR": "'*'",
    "DOT": "'.'",
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


def parse(text: str) -> Any:
    """Parse an ECL expression constraint into its tree.

    Raises ExpressionSyntaxError (an ``invalid`` 400) saying where the parse fails, and
    GrammarLimitError (400 ``too-long``) when the text is over a limit of
    ``grammar.configured().ecl`` (its length, nesting depth or number of terms).
    """
    return _parse(text, grammar.configured().ecl)


@lru_cache(maxsize=4096)
def _parse(text: str, limits: grammar.Limits) -> Any:
    grammar.check_length(KIND, "ecl", text, limits)
    if not text or not text.strip():
        raise ExpressionSyntaxError("The ECL expression constraint is empty")
    with grammar.tracking(KIND, "ecl", limits) as tracker:
        try:
            tree = _parser().parse(text)
        except UnexpectedInput as exc:
            tracker.check()  # a limit passed before the error is what is reported
            raise ExpressionSyntaxError(
                describe_error(KIND, text, exc), position=getattr(exc, "pos_in_stream", None)
            ) from None
        except (_Invalid, ExpressionSyntaxError) as exc:
            tracker.check()
            raise ExpressionSyntaxError(f"The {KIND} {shown(text)} is not valid: {exc}") from None
    tracker.check()
    return tree
