"""Views over a Spark DataFrame of resources as JSON text: the same compiled view, run by
Spark on its executors (``mapInArrow``), lazily.

Each partition's JSON lines go to a Python worker as Arrow batches, are joined into NDJSON
in C and run through the very ``CompiledView`` a local view runs (pyarrow parses, polars
evaluates), so Spark and pandas give the same rows. The view is compiled on the driver when
the DataFrame is built (an error names its column there, and no job starts), and again once
per worker process; its terminology functions are answered by the engine shipped to the
workers (``workbench.bulk.shipping``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from workbench.bulk.shipping import ShippedEngine
from workbench.fhirdata.text_columns import json_column as text_column
from workbench.views.errors import ViewDefinitionError
from workbench.views.runner import CompiledView, compile_view, run_batches

_COMPILED: dict[tuple[str, bytes], CompiledView] = {}
_LOCK = threading.Lock()


def is_spark(data: Any) -> bool:
    """True for a pyspark DataFrame (without importing pyspark)."""
    return type(data).__module__.startswith("pyspark.sql") and hasattr(data, "mapInArrow")


def json_column(data: Any) -> str:
    """The column of ``data`` that holds the resources' JSON text."""
    from pyspark.sql.types import StringType

    strings = [f.name for f in data.schema.fields if isinstance(f.dataType, StringType)]
    return text_column(data.columns, strings, purpose="a view", error=ViewDefinitionError)


def spark_view(compiled: CompiledView, data: Any, wb: Any = None) -> Any:
    """The rows of ``compiled`` over the Spark DataFrame ``data``: a lazy Spark DataFrame."""
    from pyspark.sql.pandas.types import from_arrow_schema

    column = json_column(data)
    schema = _arrow_schema(compiled)
    shipped = None if wb is None else ShippedEngine(wb.terminology)
    runner = _Runner(orjson.dumps(compiled.view.raw), shipped, schema, type(wb))
    return data.select(column).mapInArrow(runner, from_arrow_schema(schema))


def _arrow_schema(compiled: CompiledView) -> pa.Schema:
    """The Arrow schema of the view's rows (strings as Spark reads them)."""
    empty = compiled.apply(compiled.schema.empty_table()).to_arrow().schema
    fields = [pa.field(f.name, _plain(f.type)) for f in empty]
    return pa.schema(fields)


def _plain(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_large_list(kind) or pa.types.is_list_view(kind):
        return pa.list_(_plain(kind.value_type))
    if pa.types.is_list(kind):
        return pa.list_(_plain(kind.value_type))
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _plain(f.type)) for f in kind])
    if pa.types.is_null(kind):
        return pa.string()
    return kind


@dataclass(frozen=True)
class _Runner:
    """The function of ``mapInArrow`` (picklable: the definition and the shipped engine)."""

    definition: bytes
    shipped: ShippedEngine | None
    schema: pa.Schema
    #: The Workbench class (pickled by name), which makes a workbench around the engine.
    workbench: Any = None

    def compiled(self) -> CompiledView:
        """The view compiled once per worker process (per engine and definition)."""
        key = (self.shipped.token if self.shipped else "", self.definition)
        with _LOCK:
            found = _COMPILED.get(key)
        if found is None:
            wb = self.workbench.around(self.shipped.engine) if self.shipped else None
            found = compile_view(orjson.loads(self.definition), wb)
            with _LOCK:
                _COMPILED[key] = found
        return found

    def __call__(self, batches: Any) -> Any:
        compiled = self.compiled()
        for batch in batches:
            if batch.num_rows == 0:
                continue
            texts = pc.drop_null(batch.column(0))
            lines = pa.ListArray.from_arrays(pa.array([0, len(texts)], pa.int32()), texts)
            data = pc.binary_join(lines, "\n")[0].as_py().encode() + b"\n"
            for rows, _ in run_batches(compiled, [data]):
                yield from rows.to_arrow().cast(self.schema).to_batches()
