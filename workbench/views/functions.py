"""The FHIRPath functions of views, compiled into polars expressions.

The functions SQL on FHIR v2 requires (``where``, ``exists``, ``empty``, ``first``, ``join``,
``ofType``, ``extension``, ``getResourceKey``, ``getReferenceKey``, ``lowBoundary``,
``highBoundary``) and a few more every view writer reaches for (``last``, ``count``, ``not``,
``hasValue``); Pathling's terminology functions are in ``workbench.views.terminology``. A
function the view does not know is an error naming the functions it does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import polars as pl

from workbench.fhirpath import nodes as n
from workbench.views import boundaries
from workbench.views.errors import ViewDefinitionError
from workbench.views.navigation import exists, of_type, step, truth
from workbench.views.values import Value, as_list, literal, single

if TYPE_CHECKING:
    from workbench.views.scope import Scope

Handler = Callable[[Value, tuple[n.Node, ...], "Scope"], Value]


def arity(name: str, args: tuple[n.Node, ...], low: int, high: int) -> None:
    """Refuse a call with the wrong number of arguments."""
    if not low <= len(args) <= high:
        wanted = str(low) if low == high else f"{low} to {high}"
        raise ViewDefinitionError(f"{name}() takes {wanted} argument(s), not {len(args)}")


def per_item(value: Value, criterion: n.Node, scope: Scope) -> tuple[Value, pl.Expr]:
    """The items of ``value`` kept where ``criterion`` is true: compiled once, evaluated on
    every item (inside ``list.eval`` for many items)."""
    if not value.many:
        keep = truth(scope.compile(criterion, scope.on(value))).fill_null(False)
        return value.with_expr(pl.when(keep).then(value.expr)), keep
    item = Value(pl.element(), value.type, False, value.need)
    keep = truth(scope.compile(criterion, scope.on(item, per_item=True))).fill_null(False)
    return value.with_expr(value.expr.list.eval(pl.element().filter(keep))), keep


def _where(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("where", args, 1, 1)
    return per_item(value, args[0], scope)[0]


def _exists(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("exists", args, 0, 1)
    if args:
        value = per_item(value, args[0], scope)[0]
    return Value(exists(value), "boolean", False)


def _empty(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("empty", args, 0, 0)
    return Value(~exists(value), "boolean", False)


def _first(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("first", args, 0, 0)
    return value.with_expr(value.expr.list.first(), many=False) if value.many else value


def _last(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("last", args, 0, 0)
    return value.with_expr(value.expr.list.last(), many=False) if value.many else value


def _count(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("count", args, 0, 0)
    if value.many:
        return Value(value.expr.list.len().fill_null(0).cast(pl.Int64), "integer", False)
    return Value(value.expr.is_not_null().cast(pl.Int64), "integer", False)


def _not(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("not", args, 0, 0)
    return Value(truth(value).not_(), "boolean", False)


def _has_value(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("hasValue", args, 0, 0)
    return Value(exists(value), "boolean", False)


def _join(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    """``join([separator])``: the items as text, joined. The join of nothing is ``''``, not
    empty: this follows the SQL on FHIR test suite (fhirpath.json, "string join"), where
    FHIRPath's text has the empty collection."""
    arity("join", args, 0, 1)
    separator = text_argument("join", args[0], scope) if args else ""
    items = as_list(value).list.eval(pl.element().cast(pl.String))
    return Value(items.list.join(separator), "string", False)


def type_name(node: n.Node) -> str:
    """The type a type argument names: ``Quantity``, ``FHIR.Quantity``, ``System.String``."""
    match node:
        case n.Identifier(name):
            return name
        case n.TypeSpecifier(_, name):
            return name
        case n.Member(n.Identifier("FHIR" | "System"), name):
            return name
    raise ViewDefinitionError("the argument must be a type name (e.g. Quantity)")


def _of_type(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("ofType", args, 1, 1)
    return of_type(value, type_name(args[0]))


def text_argument(function: str, node: n.Node, scope: Scope) -> str:
    """A string argument that must be known before the data: a literal or a constant."""
    if isinstance(node, n.Literal) and node.kind == "string":
        return str(node.value)
    if isinstance(node, n.Variable) and node.name in scope.constants:
        return str(scope.constants[node.name].value)
    if isinstance(node, n.Variable):
        scope.compile(node, scope)  # names the unknown constant
    raise ViewDefinitionError(f"the argument of {function}() must be a string literal")


def _extension(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("extension", args, 1, 1)
    url = text_argument("extension", args[0], scope)
    extensions = step(value, "extension")
    item = Value(pl.element(), "Extension", False, extensions.need)
    same = step(item, "url").expr == pl.lit(url)
    return extensions.with_expr(extensions.expr.list.eval(pl.element().filter(same)))


def _resource_key(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("getResourceKey", args, 0, 0)
    if scope.resource_key is None:
        raise ViewDefinitionError("getResourceKey() cannot be read inside a per-item expression")
    return Value(scope.resource_key, "string", False)


def _reference_key(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
    arity("getReferenceKey", args, 0, 1)
    if value.type != "Reference":
        raise ViewDefinitionError(f"getReferenceKey() is called on a Reference, not a {value.type}")
    wanted = type_name(args[0]) if args else "[A-Z][A-Za-z]+"
    pattern = (
        rf"^(?:[a-z][a-z0-9+.-]*://[^?#]*/)?{wanted}/([A-Za-z0-9\-.]{{1,64}})(?:/_history/[^/]+)?$"
    )
    reference = step(value, "reference")
    if reference.many:
        found = reference.expr.list.eval(pl.element().str.extract(pattern, 1)).list.drop_nulls()
        return Value(found, "string", True)
    return Value(reference.expr.str.extract(pattern, 1), "string", False)


def _boundary(high: bool) -> Handler:
    def handler(value: Value, args: tuple[n.Node, ...], scope: Scope) -> Value:
        arity("highBoundary" if high else "lowBoundary", args, 0, 1)
        if value.many:
            value = value.with_expr(single(value), many=False)
        return boundaries.boundary(value, high)

    return handler


FUNCTIONS: dict[str, Handler] = {
    "where": _where,
    "exists": _exists,
    "empty": _empty,
    "first": _first,
    "last": _last,
    "count": _count,
    "not": _not,
    "hasValue": _has_value,
    "join": _join,
    "ofType": _of_type,
    "extension": _extension,
    "getResourceKey": _resource_key,
    "getReferenceKey": _reference_key,
    "lowBoundary": _boundary(False),
    "highBoundary": _boundary(True),
}


def coding_literal(node: n.CodingLiteral) -> Value:
    """Pathling's Coding literal as a one-valued Coding struct."""
    fields = {
        "system": literal(node.system, "uri").expr,
        "code": literal(node.code, "code").expr,
        "version": literal(node.version, "string").expr,
        "display": literal(node.display, "string").expr,
    }
    return Value(pl.struct([e.alias(k) for k, e in fields.items()]), "Coding", False)
