"""``Impact.fix``: each code with one one-to-one replacement replaced, in the data's own
library, with the audit ``ValidationFrame.fix`` keeps.

Only the ``replacement`` of the impact frame is applied (exactly one SAME AS / REPLACED BY
/ MAP_TO the newer release records); a header's children and weaker associations never
are. The data given is never changed: ``ImpactFix.data`` is a copy of the same kind:

===========  ================================================  =======================
library      the fixed data                                     the audit's ``row``
===========  ================================================  =======================
pandas       a Series or DataFrame, same index and dtype        the index label
polars       a Series or DataFrame, same dtype                  the row's position
Dask         a lazy Series or DataFrame (``map_partitions``)    the index label
Spark        a lazy DataFrame (``DataFrame.replace``)           the row's position
===========  ================================================  =======================

The audit (``AUDIT``: before, after, kind, row, column, why, map) is a pandas frame of the
cells changed; for Dask and Spark it is computed from the changed rows only (one pass over
the data), and the fixed data stays lazy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from workbench.bulk import libraries
from workbench.bulk.fix import AUDIT, Audit
from workbench.errors import InvalidRequestError

#: The kinds ``Impact.fix`` applies.
FIX_KINDS = ("replacement",)


@dataclass(frozen=True)
class Plan:
    """What a fix applies: ``mapping`` code → replacement, ``why`` code → its audit text,
    and the column (None: the data is a Series)."""

    mapping: dict[str, str]
    why: dict[str, str]
    column: str | None

    def audit(self, rows: Any, before: Sequence[Any]) -> Audit:
        """One audit row per cell changed (``rows``: the index labels or positions)."""
        before = [str(b) for b in before]
        return Audit(
            {
                "row": np.asarray(rows, dtype=object),
                "column": self.column,
                "before": np.array(before, dtype=object),
                "after": np.array([self.mapping[b] for b in before], dtype=object),
                "kind": "replacement",
                "why": np.array([self.why[b] for b in before], dtype=object),
                "map": None,
            },
            columns=AUDIT,
        )


def fix_impact(
    frame: pd.DataFrame, column: str | None, to_version: str, data: Any, kinds: Sequence[str] | str
) -> tuple[Any, Audit]:
    """``Impact.fix`` of an impact ``frame`` of ``column`` (release ``to_version``) on
    ``data``: the fixed copy and the audit."""
    asked = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not asked or any(k not in FIX_KINDS for k in asked):
        raise InvalidRequestError(
            f"Impact.fix() applies the kinds {list(FIX_KINDS)}, not {list(asked)}"
        )
    table = frame.dropna(subset=["replacement"])
    codes = [str(c) for c in table["code"]]
    plan = Plan(
        dict(zip(codes, map(str, table["replacement"]), strict=True)),
        {c: f"{r} (release {to_version})" for c, r in zip(codes, table["relation"], strict=True)},
        column,
    )
    fixer = next((f for handles, f in FIXERS if handles(data)), _pandas)
    return fixer(plan, data)


def _refused(plan: Plan, library: str, kinds: str = "Series or a DataFrame") -> InvalidRequestError:
    return InvalidRequestError(
        f"Impact.fix() takes a {library} {kinds} with the column {plan.column!r}, as "
        "impact() was given"
    )


def _pandas(plan: Plan, source: Any) -> tuple[Any, Audit]:
    """A pandas Series, or a DataFrame with the column: a copy, the same index and dtype."""
    if isinstance(source, pd.DataFrame) and plan.column in source:
        values = source[plan.column]
    elif isinstance(source, pd.Series):
        values = source
    else:
        raise _refused(plan, "pandas, polars, Dask or Spark")
    fixed, before = _replaced(values, plan.mapping)
    out = source.copy()
    if isinstance(out, pd.DataFrame):
        out[plan.column] = fixed
    else:
        out = fixed
    return out, plan.audit(before.index, before.tolist())


def _replaced(values: pd.Series, mapping: dict[str, str]) -> tuple[pd.Series, pd.Series]:
    """``values`` with the codes of ``mapping`` replaced (a categorical column as object,
    since the replacements may be new categories) and the values replaced."""
    changed = values.isin(list(mapping)).to_numpy()
    before = values[changed].astype(object)
    plain = isinstance(values.dtype, pd.CategoricalDtype)
    fixed = values.astype(object) if plain else values.copy()
    fixed[changed] = before.map(mapping)
    return fixed, before


def _polars(plan: Plan, source: Any) -> tuple[Any, Audit]:
    """A polars Series, or a DataFrame with the column: the same dtype (a categorical one
    through strings), the audit's rows by position."""
    import polars as pl

    if isinstance(source, pl.DataFrame) and plan.column in source.columns:
        values = source.get_column(plan.column)
    elif isinstance(source, pl.Series):
        values = source
    else:
        raise _refused(plan, "polars")
    text = values.cast(pl.String)
    changed = text.is_in(list(plan.mapping))
    fixed = text.replace(plan.mapping)
    if values.dtype == pl.Categorical:
        fixed = fixed.cast(pl.Categorical)
    audit = plan.audit(changed.arg_true().to_list(), text.filter(changed).to_list())
    if isinstance(source, pl.DataFrame):
        return source.with_columns(fixed.alias(str(plan.column))), audit
    return fixed.alias(str(values.name)), audit


def _replace_partition(part: pd.Series, mapping: dict[str, str]) -> pd.Series:
    return _replaced(part, mapping)[0]


def _dask(plan: Plan, source: Any) -> tuple[Any, Audit]:
    """A Dask Series, or a DataFrame with the column: fixed lazily, partition by partition;
    the audit computed from the changed rows."""
    columns = None if source.ndim == 1 else list(source.columns)
    if columns is not None and plan.column not in columns:
        raise _refused(plan, "Dask")
    values = source if columns is None else source[plan.column]
    meta = values._meta.astype(object) if values.dtype == "category" else values._meta
    fixed = values.map_partitions(_replace_partition, plan.mapping, meta=meta)
    before = values[values.isin(list(plan.mapping))].astype(object).compute()
    audit = plan.audit(before.index, before.tolist())
    return (fixed if columns is None else source.assign(**{str(plan.column): fixed})), audit


def _spark(plan: Plan, source: Any) -> tuple[Any, Audit]:
    """A Spark DataFrame with the column: fixed lazily by ``DataFrame.replace``; the audit
    from the changed rows, each at its position in the DataFrame's order (its partitions'
    row counts, then the row within its partition), in one job."""
    from pyspark.sql import functions as F

    if plan.column is None or plan.column not in source.columns:
        raise _refused(plan, "Spark", "DataFrame")
    if not plan.mapping:
        return source, plan.audit([], [])
    within = F.monotonically_increasing_id().bitwiseAND((1 << 33) - 1)
    placed = source.select(
        F.spark_partition_id().alias("part"), within.alias("at"), F.col(plan.column).alias("code")
    )
    found = F.struct(F.col("at"), F.col("code"))
    parts = (
        placed.groupBy("part")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.collect_list(F.when(F.col("code").isin(list(plan.mapping)), found)).alias("found"),
        )
        .collect()
    )
    rows: list[int] = []
    before: list[str] = []
    start = 0
    for part in sorted(parts, key=lambda p: p["part"]):
        for hit in sorted(part["found"], key=lambda h: h["at"]):
            rows.append(start + int(hit["at"]))
            before.append(hit["code"])
        start += int(part["rows"])
    return source.replace(plan.mapping, subset=[plan.column]), plan.audit(rows, before)


#: (handles, fixer): the first whose ``handles`` takes the data fixes it; pandas else.
FIXERS: tuple[tuple[Callable[[Any], bool], Callable[[Plan, Any], tuple[Any, Audit]]], ...] = (
    (libraries.is_polars, _polars),
    (libraries.is_dask, _dask),
    (libraries.is_spark, _spark),
)
