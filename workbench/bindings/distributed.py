"""Binding checks beyond one machine: a Spark or Dask DataFrame of resources as JSON text
checked on the workers, lazily, by the very ``BindingChecker`` a local check runs (the
definitions and the engine shipped once per worker process, ``bulk.shipping``), so the
rows are the pandas path's. The result is a lazy DataFrame of the report's rows
(``report.COLUMNS``). What a local report lists in ``problems`` is rows here: a text that
is no resource is a row saying why (one bad text never fails the job), and so is a declared
profile not loaded or a type without a definition (``report.unread_table``,
``report.problem_table``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from workbench.bindings.check import BindingCheck, BindingChecker
from workbench.bindings.report import SCHEMA
from workbench.bindings.store import Structures
from workbench.bulk.shipping import ShippedEngine
from workbench.fhirdata.text_columns import json_column

_CHECKERS: dict[tuple[str, str], BindingChecker] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Shipped:
    """A binding check that can travel to workers: the definitions, the shipped engine
    and the request; ``rows`` checks a batch of JSON texts there."""

    structures: Structures
    shipped: ShippedEngine
    request: BindingCheck
    #: The definitions' name on the driver (the same definitions give the same token).
    token: str

    @classmethod
    def of(cls, structures: Structures, engine: Any, request: BindingCheck) -> Shipped:
        """A check over ``structures`` and ``engine`` (a Terminology), ready to ship."""
        token = f"{id(structures)}-{structures.generation}"
        return cls(structures, ShippedEngine(engine), request, token)

    def checker(self) -> BindingChecker:
        """The checker, made once per worker process (per engine and definitions), so its
        compiled plans are reused by every batch."""
        key = (self.shipped.token, self.token)
        with _LOCK:
            found = _CHECKERS.get(key)
            if found is None:
                found = _CHECKERS[key] = BindingChecker(self.structures, self.shipped.engine)
        return found

    def rows(self, texts: list[str | bytes | None]) -> pa.Table:
        """The report's rows for resources given as JSON texts."""
        lines = [t.encode() if isinstance(t, str) else t for t in texts if t]
        _, table = self.checker().rows(self.request, lines)
        return table.cast(SCHEMA)  # (texts plain, as the DataFrame's schema says)

    def arrow(self, batches: Any) -> Any:
        """``mapInArrow``'s function: each batch's first column of JSON text checked."""
        for batch in batches:
            if batch.num_rows:
                texts = pc.drop_null(batch.column(0)).to_pylist()
                yield from self.rows(texts).to_batches()

    def pandas(self, texts: pd.Series) -> pd.DataFrame:
        """``map_partitions``' function: a partition's JSON texts checked."""
        return self.rows(texts.tolist()).to_pandas()


def spark_rows(shipped: Shipped, data: Any) -> Any:
    """The rows of a check over a Spark DataFrame: a lazy Spark DataFrame."""
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StringType

    strings = [f.name for f in data.schema.fields if isinstance(f.dataType, StringType)]
    column = json_column(list(data.columns), strings, purpose="a binding check")
    return data.select(column).mapInArrow(shipped.arrow, from_arrow_schema(SCHEMA))


def dask_rows(shipped: Shipped, data: Any) -> Any:
    """The rows of a check over a Dask DataFrame (or Series) of JSON texts: lazy."""
    series = data
    if hasattr(data, "columns"):
        strings = [c for c in data.columns if str(data[c].dtype) in ("object", "string")]
        series = data[json_column(list(data.columns), strings, purpose="a binding check")]
    meta = SCHEMA.empty_table().to_pandas()
    return series.map_partitions(shipped.pandas, meta=meta)
