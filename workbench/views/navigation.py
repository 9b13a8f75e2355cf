"""Steps into elements: ``name.family``, a choice element's type, its ``ofType``.

Each step is checked against the R4 element model (an element the type does not have is an
error naming the type and what it has), recorded in the element tree the schema is built
from, and compiled into a struct field access: on one value a field, on many values the same
inside ``list.eval`` (a repeating element flattened with ``explode``).

>>> from workbench.views.needs import Need
>>> import polars as pl
>>> root = Value(pl.col("r"), "Patient", False, Need("Patient"))
>>> step(root, "name").many, step(step(root, "name"), "family").type
(True, 'string')
"""

from __future__ import annotations

import polars as pl

from workbench.structure.types import Child, model
from workbench.views.errors import ViewDefinitionError
from workbench.views.needs import Need
from workbench.views.values import Value, empty, kind, single


def step(value: Value, name: str) -> Value:
    """The children ``name`` of every item of ``value``."""
    if value.choice is not None:
        options = ", ".join(o.type for o in value.choice.choices)
        raise ViewDefinitionError(
            f"{value.choice.name!r} is a choice of {options}: name one with "
            f"ofType() before .{name} (e.g. {value.choice.name}.ofType("
            f"{value.choice.choices[0].type}).{name})"
        )
    if not model().has_type(value.type):
        what = f"a {value.type}" if value.type else "this value"
        raise ViewDefinitionError(f"{what} has no element {name!r}")
    child = model().child(value.type, name)
    if child is None:
        names = ", ".join(model().names(value.type))
        raise ViewDefinitionError(f"{value.type} has no element {name!r}; it has: {names}")
    if child.is_choice:
        return Value(value.expr, value.type, value.many, value.need, child)
    return field(value, child)


def field(value: Value, child: Child) -> Value:
    """The element ``child`` (not a choice) of every item of ``value``."""
    assert value.need is not None, "a value read from the data has its element node"
    need = value.need.child(child.json, child.type, child.repeats)
    if not value.many:
        return Value(value.expr.struct.field(child.json), child.type, child.repeats, need)
    inner = pl.element().struct.field(child.json)
    if child.repeats:
        inner = inner.explode()
    return Value(value.expr.list.eval(inner).list.drop_nulls(), child.type, True, need)


def choice_option(value: Value, type_name: str) -> Value:
    """The option ``type_name`` of an unresolved choice (``value.ofType(Quantity)``); the
    empty collection when the choice has no such type."""
    assert value.choice is not None
    option = value.choice.choice(type_name) or _by_kind(value.choice, type_name)
    if option is None:
        return empty(type_name)
    return field(Value(value.expr, value.type, value.many, value.need), option)


def _by_kind(choice: Child, type_name: str) -> Child | None:
    """A choice's option named by its FHIRPath system type (``ofType(String)``)."""
    wanted = type_name[:1].lower() + type_name[1:]
    return next((o for o in choice.choices if kind(o.type) == wanted), None)


def of_type(value: Value, type_name: str) -> Value:
    """``ofType(T)``: a choice's option, or the value itself when it is of type T, or empty."""
    if value.choice is not None:
        return choice_option(value, type_name)
    if matches(value.type, type_name):
        return value
    return empty(type_name)


def matches(actual: str, wanted: str) -> bool:
    """True when a value of type ``actual`` is of type ``wanted`` (FHIR or System name)."""
    if actual == wanted:
        return True
    plain = wanted[:1].lower() + wanted[1:]
    return kind(actual) == plain or (wanted == "Resource" and actual in model().resources)


def root_value(resource_type: str, expr: pl.Expr, need: Need) -> Value:
    """The resource a view reads, as the focus of its top-level paths."""
    return Value(expr, resource_type, False, need)


def exists(value: Value) -> pl.Expr:
    """True when the collection has an item (a boolean column, never null)."""
    if value.choice is not None:
        return pl.any_horizontal([single(o).is_not_null() for o in _options(value)])
    if value.many:
        return value.expr.list.len().fill_null(0) > 0
    return value.expr.is_not_null()


def _options(value: Value) -> list[Value]:
    assert value.choice is not None
    return [choice_option(value, option.type) for option in value.choice.choices]


def truth(value: Value) -> pl.Expr:
    """The value where FHIRPath wants a boolean: a boolean's value (the single item of a
    collection), otherwise whether it has an item (a singleton is true)."""
    if kind(value.type) == "boolean":
        return single(value)
    return pl.when(exists(value)).then(pl.lit(True)).otherwise(pl.lit(None, pl.Boolean))
