"""A view's selects compiled once, before any data: each path checked and turned into an
expression, the elements they read recorded for the schema.

A ``Plan`` is one select: how it sets its foci (itself, ``forEach``, ``forEachOrNull``,
``repeat``) and a ``Body`` per level of foci (one; a ``repeat`` has one per depth): the
compiled columns, nested selects and ``unionAll`` branches. ``workbench.views.frames`` runs
plans over frames of resources.

A ``repeat`` is compiled to a depth: the items of every depth share one element node (so
frames of one depth have one Arrow type), and below the last depth the paths end on a
sentinel node (see ``workbench.views.needs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from workbench.views.compiler import compile_path
from workbench.views.definition import Column, Select
from workbench.views.errors import ViewDefinitionError
from workbench.views.needs import Need
from workbench.views.scope import Scope
from workbench.views.values import Value, as_list, dtype, is_complex

#: The focus column of every frame a plan runs on.
FOCUS = pl.col("__f")


@dataclass
class Output:
    """A compiled column: its expression, the FHIR type, and (for a column that must hold one
    value but reads a repeating element) the check that it never holds several."""

    column: Column
    expr: pl.Expr
    type: str
    several: pl.Expr | None = None


@dataclass
class Body:
    """What a select does on each of its foci."""

    outputs: list[Output]
    selects: list[Plan]
    union: list[Plan]


@dataclass
class Plan:
    """A compiled select (see the module's docstring)."""

    select: Select
    foci: str  # "self", "forEach", "forEachOrNull" or "repeat"
    items: list[list[Value]] = field(default_factory=list)  # per depth, per path
    paths: list[list[int]] = field(default_factory=list)  # a repeat's path indexes, per depth
    bodies: list[Body] = field(default_factory=list)

    def columns(self) -> list[Column]:
        """The columns this plan emits, in order."""
        return self.select.all_columns()


def focus_value(type_name: str, need: Need | None) -> Value:
    """The focus of a frame: one item of ``type_name`` in the column ``__f``."""
    return Value(FOCUS, type_name, False, need)


def compile_select(select: Select, focus: Value, scope: Scope, depth: int) -> Plan:
    """Compile ``select`` over frames whose focus is ``focus``; ``depth``: the levels a
    ``repeat`` is compiled to."""
    inner = scope if focus is scope.focus else scope.on(focus)  # the resource stays the root
    if select.repeat:
        return _repeat(select, focus, inner, depth)
    path = select.for_each or select.for_each_or_null
    if path is None:
        return Plan(select, "self", bodies=[compile_body(select, inner, depth)])
    items = compile_path(path, inner, f"{select.place}.forEach" if select.for_each else
                         f"{select.place}.forEachOrNull")  # fmt: skip
    _no_choice(items, path, select.place)
    item_focus = focus_value(items.type, items.need)
    body = compile_body(select, inner.on(item_focus), depth)
    kind = "forEach" if select.for_each else "forEachOrNull"
    return Plan(select, kind, items=[[items]], bodies=[body])


def compile_body(select: Select, scope: Scope, depth: int) -> Body:
    """The columns, selects and unionAll branches of ``select`` over ``scope``'s focus."""
    outputs = [_output(column, scope) for column in select.columns]
    selects = [compile_select(child, scope.focus, scope, depth) for child in select.selects]
    union = [compile_select(child, scope.focus, scope, depth) for child in select.union_all]
    return Body(outputs, selects, union)


def _output(column: Column, scope: Scope) -> Output:
    value = compile_path(column.path, scope, column.place)
    _no_choice(value, column.path, column.place)
    if is_complex(value.type) and value.need is not None:
        value.need.whole = True
    several = None
    if column.collection:
        expr = as_list(value)
    elif value.many:
        several = value.expr.list.len().fill_null(0) > 1
        expr = value.expr.list.first()
    else:
        expr = value.expr
    declared = column.type
    if declared and not is_complex(declared) and not column.collection:
        expr = _cast(expr, declared, value.type)
    return Output(column, expr.alias(column.name), declared or value.type, several)


def _cast(expr: pl.Expr, declared: str, found: str) -> pl.Expr:
    """A column's value in the polars type of its declared FHIR type."""
    target = dtype(declared)
    if target == dtype(found):
        return expr
    return expr.cast(target, strict=False)


def _no_choice(value: Value, path: str, place: str) -> None:
    if value.choice is not None:
        options = ", ".join(o.type for o in value.choice.choices)
        raise ViewDefinitionError(
            f"{path!r} is a choice of {options}: name one with ofType() "
            f"(e.g. {path}.ofType({value.choice.choices[0].type}))",
            place=place,
        )


def _repeat(select: Select, focus: Value, scope: Scope, depth: int) -> Plan:
    """A repeat compiled to ``depth`` levels (see the module's docstring). A path the type
    of a level does not have gives nothing at that level (``answer.item`` on the resource);
    a path neither the first nor the second level has is an error."""
    plan = Plan(select, "repeat")
    current, failed = focus, dict[int, ViewDefinitionError]()
    for level in range(depth + 1):
        found = _level(select, scope.on(current), failed if level < 2 else {})
        if not found:
            break
        shared = _share([v for _, v in found], select)
        if level == depth:
            shared.sentinel = True
            break
        plan.items.append([v for _, v in found])
        plan.paths.append([i for i, _ in found])
        current = focus_value(found[0][1].type, shared)
        plan.bodies.append(compile_body(select, scope.on(current), depth))
    _refuse_unused(failed, plan)
    return plan


def _level(
    select: Select, scope: Scope, failed: dict[int, ViewDefinitionError]
) -> list[tuple[int, Value]]:
    """The repeat paths compiled on one level's focus, each with its index."""
    found = []
    for index, path in enumerate(select.repeat):
        try:
            value = compile_path(path, scope, f"{select.place}.repeat[{index}]")
        except ViewDefinitionError as error:
            failed.setdefault(index, error)
            continue
        _no_choice(value, path, select.place)
        if value.need is None or _above(value.need, scope.focus.need):
            raise ViewDefinitionError(
                f"the repeat path {path!r} does not go down into the resource: each level "
                "would be the one before, a cycle with no end",
                place=f"{select.place}.repeat[{index}]",
            )
        found.append((index, value))
    return found


def _above(need: Need, focus: Need | None) -> bool:
    """Whether ``need`` is ``focus`` or one of the nodes above it."""
    node: Need | None = focus
    while node is not None:
        if node is need:
            return True
        node = node.parent
    return False


def _refuse_unused(failed: dict[int, ViewDefinitionError], plan: Plan) -> None:
    """A path that applied to neither of the first two levels is a mistake."""
    used = {i for level in plan.paths[:2] for i in level}
    for index, error in failed.items():
        if index not in used:
            raise error


def _share(found: list[Value], select: Select) -> Need:
    """Make the items every repeat path reaches share one element node."""
    types = {v.type for v in found}
    if len(types) != 1 or found[0].need is None:
        raise ViewDefinitionError(
            f"the repeat paths reach different types ({', '.join(sorted(types))}); "
            "repeat needs one type",
            place=f"{select.place}.repeat",
        )
    shared = found[0].need
    for value in found[1:]:
        assert value.need is not None
        if value.need is not shared:
            value.need.alias(shared)
    return shared
