"""FHIRPath operators compiled into polars expressions.

Comparison, equality and arithmetic act on single items (FHIRPath's singleton evaluation: a
many-valued side must hold one item; none gives empty). ``and``, ``or``, ``xor`` and
``implies`` are the three-valued logic FHIRPath defines, which polars' Kleene logic gives.
``|`` is the union of two collections (duplicates removed), ``in`` and ``contains`` test
membership, ``&`` concatenates strings with empty as ''.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from workbench.fhirpath import nodes as n
from workbench.views.errors import ViewDefinitionError
from workbench.views.navigation import truth
from workbench.views.values import Value, as_list, kind, number, single

if TYPE_CHECKING:
    from workbench.views.scope import Scope

_COMPARE = {"=", "!=", "<", "<=", ">", ">=", "~", "!~"}
_NUMERIC = {"integer", "decimal"}


def binary(node: n.Binary, scope: Scope) -> Value:
    """Compile ``left op right``."""
    left, right = scope.compile(node.left, scope), scope.compile(node.right, scope)
    op = node.op
    if op in ("and", "or", "xor", "implies"):
        return Value(_logic(op, truth(left), truth(right)), "boolean", False)
    if op in _COMPARE:
        return Value(_compare(op, left, right), "boolean", False)
    if op == "|":
        union = pl.concat_list([as_list(left), as_list(right)]).list.unique(maintain_order=True)
        return Value(union, left.type or right.type, True, left.need or right.need)
    if op in ("in", "contains"):
        item, collection = (left, right) if op == "in" else (right, left)
        found = as_list(collection).list.contains(single(item))
        return Value(pl.when(single(item).is_not_null()).then(found), "boolean", False)
    if op == "&":
        joined = single(left).cast(pl.String).fill_null("") + single(right).cast(
            pl.String
        ).fill_null("")
        return Value(joined, "string", False)
    return _arithmetic(op, left, right)


def _logic(op: str, left: pl.Expr, right: pl.Expr) -> pl.Expr:
    if op == "and":
        return left & right
    if op == "or":
        return left | right
    if op == "xor":
        return left ^ right
    return left.not_() | right  # implies


def _compare(op: str, left: Value, right: Value) -> pl.Expr:
    a, b = _operand(left), _operand(right)
    a, b = _comparable(a, left.type, right.type), _comparable(b, right.type, left.type)
    if op in ("~", "!~"):
        same = _equivalent(a, b, left.type)
        return same if op == "~" else same.not_()
    found = {
        "=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b,
    }[op]  # fmt: skip
    if left.many or right.many:  # several items on a side: = is false, the others empty
        several = _several(left) | _several(right)
        wrong = pl.lit(False) if op == "=" else pl.lit(True) if op == "!=" else pl.lit(None)
        return pl.when(several).then(wrong).otherwise(found)
    return found


def _several(value: Value) -> pl.Expr:
    if not value.many:
        return pl.lit(False)
    return value.expr.list.len().fill_null(0) > 1


def _operand(value: Value) -> pl.Expr:
    return single(value)


def _comparable(expr: pl.Expr, own: str, other: str) -> pl.Expr:
    """Numbers compared as numbers (a decimal's text, an integer with a decimal), the rest
    as they are."""
    if kind(own) == "decimal" or (kind(own) == "integer" and kind(other) == "decimal"):
        return expr.cast(pl.Float64)
    return expr


def _equivalent(a: pl.Expr, b: pl.Expr, type_name: str) -> pl.Expr:
    """``~``: strings alike ignoring case and spaces' runs; empty ~ empty is true."""
    if kind(type_name) == "string":
        a = a.str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()
        b = b.str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()
    both_empty = a.is_null() & b.is_null()
    return pl.when(both_empty).then(pl.lit(True)).otherwise((a == b).fill_null(False))


def _arithmetic(op: str, left: Value, right: Value) -> Value:
    a, b = number(_operand(left), left.type), number(_operand(right), right.type)
    kinds = {kind(left.type), kind(right.type)}
    if op == "+" and kinds <= {"string"}:
        return Value(a + b, "string", False)
    if not kinds <= _NUMERIC | {""}:
        raise ViewDefinitionError(
            f"{op} needs numbers, not {kind(left.type) or 'empty'} and "
            f"{kind(right.type) or 'empty'}"
        )
    result = "decimal" if "decimal" in kinds or op == "/" else "integer"
    match op:
        case "+":
            found = a + b
        case "-":
            found = a - b
        case "*":
            found = a * b
        case "/":
            found = pl.when(b != 0).then(a.cast(pl.Float64) / b.cast(pl.Float64))
        case "div":
            found = pl.when(b != 0).then((a / b).floor().cast(pl.Int64))
            result = "integer"
        case "mod":
            found = pl.when(b != 0).then(a % b)
        case _:
            raise ViewDefinitionError(f"the operator {op} is not supported in a view")
    return Value(found, result, False)


def unary(op: str, value: Value) -> Value:
    """``-x`` or ``+x``."""
    if kind(value.type) not in _NUMERIC:
        raise ViewDefinitionError(f"{op} needs a number, not {value.type or 'empty'}")
    found = number(single(value), value.type)
    return value.with_expr(-found if op == "-" else found, many=False)
