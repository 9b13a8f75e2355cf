"""Running a ViewDefinition over FHIR resources on one machine (pyarrow and polars).

A view is compiled once (``CompiledView``): its paths checked against the R4 element model,
the schema of the elements it reads built from them. The resources of its type are then
parsed by ``pyarrow.json`` with that schema, in batches (each element the view does not read
is skipped by the parser), and each batch goes through the compiled plan as one lazy polars
query. A batch the parser refuses (a resource whose element has the wrong JSON type) is split
until the resources at fault are found; they are reported and the rest is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl
import pyarrow as pa
import pyarrow.json as pajson

from workbench.fhirdata.ndjson import longest_line
from workbench.views.compiler import compile_path, scope_at
from workbench.views.definition import View, read_view
from workbench.views.errors import ViewDefinitionError
from workbench.views.frames import KEY, PARENT, RESOURCE_KEY, ROW_INDEX, run, several_flag
from workbench.views.navigation import truth
from workbench.views.needs import Need, arrow_schema, decimal_keys, quote_decimals
from workbench.views.plan import Plan, compile_select, focus_value
from workbench.views.scope import Scope
from workbench.views.values import kind

#: The first depth a repeat is compiled to; deeper data doubles it, up to MAX_REPEAT_DEPTH.
REPEAT_DEPTH = 4
MAX_REPEAT_DEPTH = 64
_SENTINEL = "changed from null"
_BLOCK = 1 << 20


@dataclass
class Skipped:
    """A resource a view could not read: its position in the batches and why."""

    index: int
    reason: str
    #: The resource type the line names (None when it is not a JSON object with one).
    resource_type: str | None = None


@dataclass
class CompiledView:
    """A view compiled for the workbench ``terminology`` (None: no terminology functions)."""

    view: View
    depth: int = REPEAT_DEPTH
    terminology: Any = None
    need: Need = field(init=False)
    plan: Plan = field(init=False)
    where: list[pl.Expr] = field(init=False)

    def __post_init__(self) -> None:
        self.need = Need(self.view.resource)
        focus = focus_value(self.view.resource, self.need)
        scope = scope_at(focus, self.view.constants, pl.col(ROW_INDEX), pl.col(RESOURCE_KEY),
                         self.terminology)  # fmt: skip
        self.need.child("id", "string", False)
        self.where = [self._where(path, place, scope) for path, place in self.view.where]
        self.plan = compile_select(self.view.select, focus, scope, self.depth)
        self.schema = arrow_schema(self.need)
        self.quoted = quote_decimals(decimal_keys(self.need))

    def _where(self, path: str, place: str, scope: Scope) -> pl.Expr:
        value = compile_path(path, scope, place)
        if kind(value.type) not in ("boolean", ""):
            raise ViewDefinitionError(
                f"{path!r} gives a {value.type}, not a boolean: a where path must be true or false",
                place=place,
            )
        return truth(value).fill_null(False)

    def columns(self) -> list[str]:
        """The names of the view's columns, in order."""
        return [c.name for c in self.plan.columns()]

    def apply(self, table: pa.Table) -> pl.DataFrame:
        """The view's rows for a table of resources read with ``self.schema``."""
        resources = pl.from_arrow(table)
        assert isinstance(resources, pl.DataFrame)
        frame = resources.lazy().select(
            pl.struct(pl.all()).alias("__f"),
            pl.col("id").alias(RESOURCE_KEY),
            pl.lit(0, pl.Int64).alias(ROW_INDEX),
        )
        frame = frame.filter(pl.col("__f").struct.field("resourceType") == self.view.resource)
        frame = frame.with_row_index(KEY)
        for condition in self.where:
            frame = frame.filter(condition)
        rows = run(self.plan, frame).collect()
        return self._checked(rows).drop(PARENT)

    def _checked(self, rows: pl.DataFrame) -> pl.DataFrame:
        """Refuse a single-valued column that met several values (the spec's error)."""
        for column in self.plan.columns():
            flag = several_flag(column.name)
            if flag in rows.columns:
                if rows[flag].any():
                    raise ViewDefinitionError(
                        "several values found for a column that is not a collection: set "
                        '"collection": true, or narrow the path (e.g. with first() or where())',
                        place=column.place,
                    )
                rows = rows.drop(flag)
        return rows


def compile_view(
    definition: Any, terminology: Any = None, depth: int = REPEAT_DEPTH
) -> CompiledView:
    """Check and compile a ViewDefinition (a dict)."""
    return CompiledView(read_view(definition), depth, terminology)


def parse_batch(data: bytes, schema: pa.Schema) -> tuple[pa.Table, list[Skipped]]:
    """Parse NDJSON ``data`` with ``schema``; lines the parser refuses are found (by halving)
    and returned (their index in ``data``, the reason, the type they name), the others are
    read."""
    options = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    # blocks of 1 MiB (parsed on every core); a line longer than a block: blocks that fit it
    block = _BLOCK
    while True:
        read = pajson.ReadOptions(block_size=block)
        try:
            table = pajson.read_json(pa.BufferReader(data), read_options=read,
                                     parse_options=options)  # fmt: skip
            return table, []
        except pa.ArrowInvalid as error:
            if "straddl" in str(error) and block == _BLOCK:
                block = max(_BLOCK, longest_line(data) + 2)
                continue
            if _SENTINEL in str(error):
                raise
            failed = error
            break
    lines = data.splitlines(keepends=True)
    if len(lines) == 1:
        return schema.empty_table(), [_refused(lines[0], failed)]
    half = len(lines) // 2
    first, bad_first = parse_batch(b"".join(lines[:half]), schema)
    second, bad_second = parse_batch(b"".join(lines[half:]), schema)
    table = pa.concat_tables([first, second])
    moved = [Skipped(s.index + half, s.reason, s.resource_type) for s in bad_second]
    return table, bad_first + moved


def _refused(line: bytes, error: Exception) -> Skipped:
    """Why the parser refused one line, naming the resource (type and id) when it is one."""
    why = str(error).removeprefix("JSON parse error: ").replace("Column(/", "the element (")
    why = re.sub(r" in row \d+$", "", why)
    try:
        found = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return Skipped(0, f"not valid JSON ({exc})")
    if not isinstance(found, dict):
        return Skipped(0, f"a JSON {type(found).__name__}, not a resource")
    kind = found.get("resourceType")
    name = f"{kind}/{found.get('id')}"
    reason = f"{name}: {why}; the resource is not valid FHIR JSON, and is skipped"
    return Skipped(0, reason, kind if isinstance(kind, str) else None)


def run_batches(
    compiled: CompiledView, batches: Iterable[bytes]
) -> Iterator[tuple[pl.DataFrame, list[Skipped]]]:
    """The view's rows for each batch of NDJSON resources of its type (a repeat deeper than
    the compiled depth compiles the view again, deeper)."""
    offset = 0
    for data in batches:
        while True:
            try:
                table, bad = parse_batch(compiled.quoted(data), compiled.schema)
                break
            except pa.ArrowInvalid:
                if compiled.depth >= MAX_REPEAT_DEPTH:
                    raise ViewDefinitionError(
                        f"a repeat goes deeper than {MAX_REPEAT_DEPTH} levels"
                    ) from None
                compiled = CompiledView(compiled.view, compiled.depth * 2, compiled.terminology)
        yield (
            compiled.apply(table),
            [Skipped(offset + b.index, b.reason, b.resource_type) for b in bad],
        )
        offset += data.count(b"\n")
