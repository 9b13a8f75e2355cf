"""SNOMED CT compositional grammar (post-coordinated expressions), parsed with lark.

The grammar follows the rules of SNOMED International's Compositional Grammar ABNF
(https://confluence.ihtsdotools.org/display/DOCSCG): expression = [definitionStatus]
subExpression; subExpression = focusConcept [":" refinement]; focusConcept = conceptReference
*("+" conceptReference); refinement = (attributeSet / attributeGroup) *([","] attributeGroup);
attributeGroup = "{" attributeSet "}"; attributeSet = attribute *("," attribute); attribute =
attributeName "=" attributeValue, where a value is a concept, a nested ``( subExpression )``,
a quoted string, ``#`` number or a boolean. Terms between pipes are ignored.

>>> e = parse("71388002 |Procedure| : { 405813007 = 15497006, 260686004 = 129304002 }")
>>> e.focus, [[(a.name, a.value) for a in g] for g in e.groups]
((71388002,), [[(405813007, 15497006), (260686004, 129304002)]])
>>> looks_like_expression("404684003"), looks_like_expression("64572001 : 116676008 = 4147007")
(False, True)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput

from workbench.errors import ExpressionSyntaxError
from workbench.releases import grammar
from workbench.releases.snomed.ecl import describe_error, shown

GRAMMAR = r"""
start: DEFINITION_STATUS? sub_expression
sub_expression: focus (":" refinement)?
focus: concept_reference ("+" concept_reference)*
concept_reference: SCTID TERM?
refinement: _item ("," _item | attribute_group)*
_item: attribute | attribute_group
attribute_group: "{" attribute_set "}"
attribute_set: attribute ("," attribute)*
attribute: concept_reference "=" value
?value: concept_reference
    | "(" sub_expression ")"
    | STRING -> string
    | "#" NUMBER -> number
    | BOOLEAN -> boolean

LPAR: "("
RPAR: ")"
LBRACE: "{"
RBRACE: "}"
DEFINITION_STATUS: "===" | "<<<"
SCTID: /[1-9][0-9]{5,17}/
TERM: /\|[^|]*\|/
NUMBER: /[+-]?[0-9]+(\.[0-9]+)?/
STRING: /"(\\.|[^"\\])*"/
BOOLEAN: /(?i:true|false)(?![A-Za-z0-9_])/

%import common.WS
%ignore WS
"""

_EXPRESSION_HINT = re.compile(r"[:+{=]|\s|\|")


def looks_like_expression(code: str) -> bool:
    """True when a code is a post-coordinated expression rather than a bare concept id: it
    has an expression's punctuation or spaces, and starts as the grammar's expressions do,
    with a concept id or a definition status (``===``, ``<<<``). Text such as a display
    typed as a code (``Myocardial infarction``) is an unknown code, not a malformed
    expression.

    >>> looks_like_expression("22298006 : 363698007 = 80891009"), looks_like_expression("22298006")
    (True, False)
    >>> looks_like_expression("Myocardial infarction"), looks_like_expression("=== 64572001")
    (False, True)
    """
    if not isinstance(code, str):
        return False
    text = code.strip()
    return bool(_EXPRESSION_HINT.search(text)) and text[:1] in _EXPRESSION_START


#: What an expression starts with: a concept id's first digit or a definition status.
_EXPRESSION_START = frozenset("0123456789=<")


@dataclass(frozen=True)
class Attribute:
    """``name = value``: value is a concept id, a nested Expression, a str, float or bool."""

    name: int
    value: Any


@dataclass(frozen=True)
class Expression:
    """A (sub-)expression: focus concepts, ungrouped attributes and attribute groups."""

    focus: tuple[int, ...]
    ungrouped: tuple[Attribute, ...] = ()
    groups: tuple[tuple[Attribute, ...], ...] = ()
    status: str | None = None

    def concepts(self) -> list[int]:
        """Every concept id the expression names (focus, attribute names and values)."""
        found = list(self.focus)
        for attribute in self.attributes():
            found.append(attribute.name)
            if isinstance(attribute.value, int) and not isinstance(attribute.value, bool):
                found.append(attribute.value)
            elif isinstance(attribute.value, Expression):
                found.extend(attribute.value.concepts())
        return found

    def attributes(self) -> list[Attribute]:
        """Every attribute, ungrouped ones first."""
        return [*self.ungrouped, *(a for g in self.groups for a in g)]


class _Invalid(ValueError):
    """An expression that parses but breaks a rule of the grammar."""


class _Build(Transformer):
    """Builds the expression while the LALR parser reduces (no recursion over its depth)."""

    def start(self, items: list[Any]) -> Expression:
        status = str(items[0]) if isinstance(items[0], Token) else None
        expr: Expression = items[-1]
        return Expression(expr.focus, expr.ungrouped, expr.groups, status)

    def sub_expression(self, items: list[Any]) -> Expression:
        focus: tuple[int, ...] = items[0]
        ungrouped: tuple[Attribute, ...] = ()
        groups: tuple[tuple[Attribute, ...], ...] = ()
        if len(items) > 1:
            ungrouped, groups = items[1]
        return Expression(focus, ungrouped, groups)

    def focus(self, items: list[int]) -> tuple[int, ...]:
        return tuple(items)

    def concept_reference(self, items: list[Token]) -> int:
        return int(items[0])

    def refinement(self, items: list[Any]) -> tuple[tuple[Attribute, ...], tuple[Any, ...]]:
        ungrouped: list[Attribute] = []
        groups: list[tuple[Attribute, ...]] = []
        for item in items:
            if isinstance(item, Attribute):
                if groups:
                    raise _Invalid(
                        f"the ungrouped attribute {item.name} comes after an attribute group "
                        "(ungrouped attributes come first)"
                    )
                ungrouped.append(item)
            else:
                groups.append(item)
        return tuple(ungrouped), tuple(groups)

    def attribute_group(self, items: list[Any]) -> tuple[Attribute, ...]:
        return tuple(items[0])

    def attribute_set(self, items: list[Attribute]) -> list[Attribute]:
        return list(items)

    def attribute(self, items: list[Any]) -> Attribute:
        return Attribute(items[0], items[1])

    def string(self, items: list[Token]) -> str:
        return str(items[0])[1:-1].replace('\\"', '"').replace("\\\\", "\\")

    def number(self, items: list[Token]) -> float:
        return float(items[0])

    def boolean(self, items: list[Token]) -> bool:
        return str(items[0]).lower() == "true"


KIND = "SNOMED CT expression"


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(
        GRAMMAR,
        parser="lalr",
        transformer=_Build(),
        lexer_callbacks=grammar.callbacks(
            ("LPAR", "LBRACE"), ("RPAR", "RBRACE"), ("SCTID", "STRING", "NUMBER", "BOOLEAN")
        ),
    )


def parse(text: str) -> Expression:
    """Parse a post-coordinated expression; ExpressionSyntaxError says where it fails, and
    GrammarLimitError (400 ``too-long``) when it is over a limit of
    ``grammar.configured().scg`` (length, nesting depth, terms)."""
    return _parse(text, grammar.configured().scg)


@lru_cache(maxsize=4096)
def _parse(text: str, limits: grammar.Limits) -> Expression:
    grammar.check_length(KIND, "scg", text, limits)
    if not text or not text.strip():
        raise ExpressionSyntaxError("The SNOMED CT expression is empty")
    with grammar.tracking(KIND, "scg", limits) as tracker:
        try:
            result = cast(Expression, _parser().parse(text))
        except UnexpectedInput as exc:
            tracker.check()  # a limit passed before the error is what is reported
            raise ExpressionSyntaxError(
                describe_error(KIND, text, exc), position=getattr(exc, "pos_in_stream", None)
            ) from None
        except _Invalid as exc:
            tracker.check()
            raise ExpressionSyntaxError(f"The {KIND} {shown(text)} is not valid: {exc}") from None
    tracker.check()
    return result
