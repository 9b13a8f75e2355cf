"""Compiled selects run over lazy polars frames: the SQL on FHIR processing model, relational.

Every frame a plan runs on has one row per focus: ``__k`` (the row's key), ``__f`` (the
focus), ``__ri`` (its ``%rowIndex``) and ``__rk`` (its resource's key). A plan returns its
rows keyed by ``__pk``, the key of the input row they came from, so the spec's cartesian
product of a select's parts is an inner join on that key: the columns (one row per focus),
each nested select's rows, and the rows of all ``unionAll`` branches (concatenated). Joins
keep the left order then the right, so rows come out in the order the spec's algorithm
emits them.

``forEach`` explodes the focus's collection (with its positions as ``%rowIndex``);
``forEachOrNull`` keeps a row of nulls where it is empty; ``repeat`` explodes one level at a
time and orders the items of all levels depth first.
"""

from __future__ import annotations

import polars as pl

from workbench.views.plan import Body, Plan
from workbench.views.values import Value, as_list

KEY, PARENT, FOCUS, ROW_INDEX, RESOURCE_KEY, ORDER = "__k", "__pk", "__f", "__ri", "__rk", "__ord"


def several_flag(name: str) -> str:
    """The column that says a row's single-valued column met several values."""
    return f"__several_{name}"


def run(plan: Plan, frame: pl.LazyFrame) -> pl.LazyFrame:
    """The rows of ``plan`` for every row of ``frame``, keyed by ``__pk``."""
    if plan.foci == "self":
        return body(plan.bodies[0], frame.with_columns(pl.col(KEY).alias(PARENT)))
    if plan.foci == "repeat":
        return _repeat(plan, frame)
    items = _explode(frame, plan.items[0][0])
    if plan.foci == "forEach":
        return body(plan.bodies[0], items.filter(pl.col(FOCUS).is_not_null()))
    present = body(plan.bodies[0], items.filter(pl.col(FOCUS).is_not_null()))
    missing = items.filter(pl.col(FOCUS).is_null()).select(
        PARENT, *_nulls(plan, present.collect_schema())
    )
    return pl.concat([present, missing], how="vertical_relaxed").sort(PARENT, maintain_order=True)


def _explode(frame: pl.LazyFrame, items: Value) -> pl.LazyFrame:
    """One row per item of ``items`` (a row with a null focus where there are none: an
    empty list explodes to a null, not to no row)."""
    found = as_list(items)
    return (
        frame.select(
            pl.col(KEY).alias(PARENT),
            RESOURCE_KEY,
            found.alias(FOCUS),
            pl.int_ranges(0, found.list.len(), dtype=pl.Int64).alias(ROW_INDEX),
        )
        .explode([FOCUS, ROW_INDEX], empty_as_null=True)
        .with_columns(pl.col(ROW_INDEX).fill_null(0))
        .with_row_index(KEY)
    )


def _nulls(plan: Plan, schema: pl.Schema) -> list[pl.Expr]:
    """The columns of an empty ``forEachOrNull``: null, but 0 for a ``%rowIndex`` column."""
    found = []
    for name, kind in schema.items():
        if name == PARENT:
            continue
        column = next((c for c in plan.columns() if c.name == name), None)
        if column is not None and column.path.strip() == "%rowIndex":
            found.append(pl.lit(0, kind).alias(name))
        else:
            found.append(pl.lit(None, kind).alias(name))
    return found


def body(part: Body, frame: pl.LazyFrame, keep: tuple[str, ...] = ()) -> pl.LazyFrame:
    """The rows of one select's body over ``frame``: its columns joined with the rows of its
    nested selects and of its unionAll branches, on the focus's key."""
    flags = [
        o.several.alias(several_flag(o.column.name)) for o in part.outputs if o.several is not None
    ]
    rows = frame.select(KEY, PARENT, *keep, *(o.expr for o in part.outputs), *flags)
    for child in part.selects:
        rows = _product(rows, run(child, frame))
    if part.union:
        branches = [run(branch, frame) for branch in part.union]
        rows = _product(rows, pl.concat(branches, how="vertical_relaxed"))
    return rows.drop(KEY)


def _product(rows: pl.LazyFrame, children: pl.LazyFrame) -> pl.LazyFrame:
    """Each row with each of its children's rows (none: the row goes)."""
    return rows.join(
        children.rename({PARENT: KEY}), on=KEY, how="inner", maintain_order="left_right"
    )


def _repeat(plan: Plan, frame: pl.LazyFrame) -> pl.LazyFrame:
    """The items of every level of a repeat, depth first, each level run with its body."""
    levels: list[pl.LazyFrame] = []
    current = frame.select(pl.col(KEY).alias(PARENT), RESOURCE_KEY, FOCUS, pl.lit("").alias(ORDER))
    for items, paths in zip(plan.items, plan.paths, strict=True):
        parts = [
            _next_level(current, value, index) for value, index in zip(items, paths, strict=True)
        ]
        # each level is computed once: a lazy plan would repeat the levels above it per path
        current = pl.concat(parts, how="vertical").collect().lazy()
        levels.append(current)
    orders = pl.concat([level.select(PARENT, ORDER) for level in levels], how="vertical")
    ranked = orders.with_columns(
        (pl.col(ORDER).rank("ordinal").over(PARENT) - 1).cast(pl.Int64).alias(ROW_INDEX)
    )
    rows = []
    for level, part in zip(levels, plan.bodies, strict=True):
        # the keys are numbered by position and the frame is read more than once (the
        # columns, each nested select): the join keeps the level's order so every read
        # gives an item the same key
        keyed = level.join(
            ranked, on=[PARENT, ORDER], how="left", maintain_order="left"
        ).with_row_index(KEY)
        rows.append(body(part, keyed, keep=(ORDER,)))
    ordered = pl.concat(rows, how="vertical_relaxed").sort([PARENT, ORDER], maintain_order=True)
    return ordered.drop(ORDER)


def _next_level(current: pl.LazyFrame, items: Value, index: int) -> pl.LazyFrame:
    """The items one repeat path reaches from each item of a level, with their order key."""
    found = as_list(items)
    return (
        current.select(
            PARENT,
            RESOURCE_KEY,
            ORDER,
            found.alias(FOCUS),
            pl.int_ranges(0, found.list.len()).alias("__pos"),
        )
        .explode([FOCUS, "__pos"])
        .filter(pl.col(FOCUS).is_not_null())
        .with_columns(
            pl.concat_str(
                [
                    pl.col(ORDER),
                    pl.lit(f"{index:02d}"),
                    pl.col("__pos").cast(pl.String).str.pad_start(6, "0"),
                ]
            ).alias(ORDER)
        )
        .drop("__pos")
    )
