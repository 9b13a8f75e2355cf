"""A compiled FHIRPath value: a polars expression and what is known of it before any data.

FHIRPath values are collections. A compiled value is either *one* (a scalar column: null is
the empty collection) or *many* (a list column whose items are never null: a null or empty
list is the empty collection); which one is known from the element model, so single-valued
paths (most columns) stay plain columns. ``type`` is the FHIR type (``Coding``, ``code``,
``Observation.component``) or the FHIRPath type of a computed value, named as FHIR names its
primitive (``boolean``, ``string``, ``integer``, ``decimal``, ``date``, ``dateTime``, ``time``);
an empty string when nothing is known (``{}``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl

from workbench.structure.types import Child, model
from workbench.views.needs import Need

STRINGS = {
    "string", "code", "id", "uri", "url", "canonical", "oid", "uuid", "markdown",
    "base64Binary", "xhtml",
}  # fmt: skip
INTEGERS = {"integer", "positiveInt", "unsignedInt", "integer64"}
TEMPORAL = {"date", "dateTime", "instant", "time"}
_DTYPES: dict[str, pl.DataType] = {
    "boolean": pl.Boolean(),
    **dict.fromkeys(INTEGERS, pl.Int64()),
}


@dataclass(frozen=True)
class Value:
    """A compiled value (see the module's docstring). ``need`` is the element tree node it
    reads from (None for computed values); ``choice`` an unresolved choice element
    (``value`` before ``ofType``), whose options are read from ``need``."""

    expr: pl.Expr
    type: str
    many: bool
    need: Need | None = None
    choice: Child | None = None

    def with_expr(self, expr: pl.Expr, *, many: bool | None = None) -> Value:
        """The same value with another expression (and shape)."""
        return replace(self, expr=expr, many=self.many if many is None else many)


def kind(type_name: str) -> str:
    """The FHIRPath kind of a type: boolean, string, integer, decimal, a temporal type, or
    the type itself (complex)."""
    if type_name in STRINGS:
        return "string"
    if type_name in INTEGERS:
        return "integer"
    if type_name == "instant":
        return "dateTime"
    return type_name


def dtype(type_name: str) -> pl.DataType:
    """The polars type a value of a primitive FHIR type has (strings for the rest: a
    decimal read from the data is the text written, ``1.50``; see ``number``)."""
    return _DTYPES.get(type_name, pl.String())


def number(expr: pl.Expr, type_name: str) -> pl.Expr:
    """The value as a number where FHIRPath computes or compares (a decimal's text as a
    float; an integer as it is)."""
    return expr.cast(pl.Float64) if kind(type_name) == "decimal" else expr


def is_complex(type_name: str) -> bool:
    """True for a complex type or backbone element (a struct)."""
    return model().has_type(type_name)


def literal(value: object, type_name: str) -> Value:
    """A one-valued literal of a primitive type."""
    return Value(pl.lit(value, dtype=dtype(type_name)), type_name, False)


def empty(type_name: str = "") -> Value:
    """The empty collection."""
    return Value(pl.lit(None, dtype=dtype(type_name) if type_name else pl.Null()),
                 type_name, False)  # fmt: skip


def as_list(value: Value) -> pl.Expr:
    """The value as a list column, never null: the empty collection is ``[]`` (a one-valued
    value becomes a list of zero or one item; a many-valued one under an element absent from
    the data, null, becomes ``[]``). A ``collection`` column, a union and ``in`` read it, so
    every engine gives ``[]`` for nothing found, as SQL on FHIR asks."""
    if value.many:
        return value.expr.fill_null([])
    return pl.concat_list([value.expr]).list.drop_nulls()


def single(value: Value) -> pl.Expr:
    """The value as one item: a many-valued value's single item (null when empty; the
    first item when it has several: callers that must refuse several check it themselves)."""
    return value.expr.list.first() if value.many else value.expr
