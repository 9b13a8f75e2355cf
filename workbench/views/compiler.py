"""FHIRPath compiled into polars expressions: the one evaluator of views.

``compile_path(text, scope, place)`` parses a path (``workbench.fhirpath``) and compiles it
against the scope's focus: a value whose type is known from the R4 element model, so every
step is checked before any data is read, and every element read is recorded for the schema.
The result is a ``Value``: a polars expression over the whole column of foci at once; nothing
is evaluated resource by resource.

>>> import polars as pl
>>> from workbench.views.navigation import root_value
>>> from workbench.views.needs import Need
>>> scope = scope_at(root_value("Patient", pl.col("r"), Need("Patient")), {}, pl.lit(0),
...                  pl.col("r").struct.field("id"))
>>> compile_path("name.where(use = 'official').family.first()", scope, "here").type
'string'
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import polars as pl

from workbench.fhirpath import nodes as n
from workbench.fhirpath.errors import FhirPathError
from workbench.views import functions, terminology
from workbench.views.definition import Constant
from workbench.views.errors import ViewDefinitionError
from workbench.views.functions import coding_literal
from workbench.views.navigation import exists, matches, of_type, step
from workbench.views.scope import Scope
from workbench.views.values import Value, empty, kind, literal, single

#: The environment variables FHIRPath defines for FHIR, with the constants of a view.
STANDARD = {
    "sct": "http://snomed.info/sct",
    "loinc": "http://loinc.org",
    "ucum": "http://unitsofmeasure.org",
}
_LITERAL_TYPES = {"boolean": "boolean", "string": "string", "integer": "integer",
                  "long": "integer", "decimal": "decimal", "date": "date",
                  "datetime": "dateTime", "time": "time"}  # fmt: skip


def parse_path(text: str, place: str) -> n.Node:
    """Parse a path; a FHIRPath syntax error becomes a ViewDefinitionError at ``place``."""
    from workbench.fhirpath import parse

    try:
        return parse(text)
    except FhirPathError as error:
        raise ViewDefinitionError(f"{text!r} is not FHIRPath: {error.text}", place=place) from None


def compile_path(text: str, scope: Scope, place: str) -> Value:
    """Compile the FHIRPath ``text`` in ``scope``; every error names ``place``."""
    node = parse_path(text, place)
    try:
        return compile_node(node, scope)
    except ViewDefinitionError as error:
        if error.place:
            raise
        raise ViewDefinitionError(f"in {text!r}: {error.text}", place=place) from None


def compile_node(node: n.Node, scope: Scope) -> Value:
    """Compile one parsed node (see ``compile_path``)."""
    from workbench.views import operators

    match node:
        case n.Literal():
            return _literal(node)
        case n.Identifier(name):
            if scope.at_root and name == scope.focus.type:
                return scope.focus
            return step(scope.focus, name)
        case n.Member(base, name):
            return step(compile_node(base, scope), name)
        case n.Function():
            return call(node, scope)
        case n.Indexer(base, index):
            return _index(compile_node(base, scope), index, scope)
        case n.Binary():
            return operators.binary(node, scope)
        case n.Unary(op, operand):
            return operators.unary(op, compile_node(operand, scope))
        case n.TypeOperation(op, operand, type_):
            return _type_operation(op, compile_node(operand, scope), type_.name)
        case n.Variable(name):
            return _variable(name, scope)
        case n.This():
            return scope.focus
        case n.CodingLiteral():
            return coding_literal(node)
    raise ViewDefinitionError(f"{type(node).__name__} is not supported in a view")


def call(node: n.Function, scope: Scope) -> Value:
    """Compile the call ``node`` (its base compiled first; none: the focus)."""
    handler = functions.FUNCTIONS.get(node.name) or terminology.FUNCTIONS.get(node.name)
    if handler is None:
        known = ", ".join(sorted({*functions.FUNCTIONS, *terminology.FUNCTIONS}))
        raise ViewDefinitionError(f"{node.name}() is not a function views know; they know {known}")
    base = scope.focus if node.base is None else compile_node(node.base, scope)
    return handler(base, node.args, scope)


def scope_at(
    focus: Value,
    constants: dict[str, Constant],
    row_index: pl.Expr,
    resource_key: pl.Expr,
    terminology: Any = None,
) -> Scope:
    """The scope of a view's top-level paths (the focus: the resource)."""
    return Scope(focus, constants, row_index, resource_key, compile_node, at_root=True,
                 terminology=terminology)  # fmt: skip


def _literal(node: n.Literal) -> Value:
    if node.kind == "empty":
        return empty()
    type_name = _LITERAL_TYPES.get(node.kind)
    if type_name is None:
        raise ViewDefinitionError(f"a {node.kind} literal is not supported in a view")
    value = str(node.value) if isinstance(node.value, Decimal) else node.value  # 1.50 kept
    return literal(value, type_name)


def _index(value: Value, index: n.Node, scope: Scope) -> Value:
    """``value[index]``: the item at a position known when the view is compiled (empty when
    there is none, a negative position included)."""
    position = _position(index, scope)
    if position < 0 or (position > 0 and not value.many):
        # nothing, in the value's type and element node: a path may go on from it
        return value.with_expr(pl.when(pl.lit(False)).then(single(value)), many=False)
    if not value.many:
        return value
    return Value(value.expr.list.get(position, null_on_oob=True), value.type, False, value.need)


def _position(index: n.Node, scope: Scope) -> int:
    """The position an index names: an integer literal, or a view's constant of an integer
    type (``name[%i]``: constants are known when the view is compiled, so it is substituted
    here)."""
    if isinstance(index, n.Literal) and index.kind == "integer":
        return int(index.value)  # type: ignore[arg-type]
    if isinstance(index, n.Variable) and index.name in scope.constants:
        constant = scope.constants[index.name]
        if kind(constant.type) != "integer":
            raise ViewDefinitionError(
                f"the index %{index.name} is a {constant.type} constant ({constant.value!r}); "
                "an index must be an integer"
            )
        return int(constant.value)
    if isinstance(index, n.Variable):
        raise ViewDefinitionError(
            f"the index %{index.name} is not a constant of the view; an index must be an "
            "integer literal or an integer constant ([0], [1], [%i] ...)"
        )
    raise ViewDefinitionError(
        "an index must be an integer literal or an integer constant ([0], [1], [%i] ...)"
    )


def _type_operation(op: str, value: Value, type_name: str) -> Value:
    if op == "as":
        found = of_type(value, type_name)
        return found.with_expr(single(found), many=False) if found.many else found
    if value.choice is not None:
        option = of_type(value, type_name)
        return Value(pl.when(exists(value)).then(exists(option)), "boolean", False)
    holds = matches(value.type, type_name)
    return Value(pl.when(exists(value)).then(pl.lit(holds)), "boolean", False)


def _variable(name: str, scope: Scope) -> Value:
    if name == "rowIndex":
        if scope.row_index is None:
            raise ViewDefinitionError("%rowIndex cannot be read inside a per-item expression")
        return Value(scope.row_index, "integer", False)
    if name in scope.constants:
        constant = scope.constants[name]
        value = str(constant.value) if constant.type == "decimal" else constant.value
        return literal(value, constant.type)
    if name in STANDARD:
        return literal(STANDARD[name], "string")
    if name in ("resource", "rootResource", "context"):
        if scope.at_root:
            return scope.focus
        raise ViewDefinitionError(f"%{name} can be read only at the top of a view")
    known = ", ".join(f"%{c}" for c in [*scope.constants, "rowIndex", *STANDARD])
    raise ViewDefinitionError(f"%{name} is not a constant of the view; known: {known}")
