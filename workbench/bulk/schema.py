"""The result schemas of bulk work, declared once: which columns a result has, what kind
each is, and what a missing code gives.

Every part of the bulk machinery reads the columns from here: the answer tables
(``Answers``, one array per column), the pandas, polars and Dask result frames, the frame
of a column whose system column holds several systems, and the answer of a missing code.
A new result column is one ``Column`` in its schema (named like the attribute of the
answer object it is read from: a ``ValidationResult`` for validation, a
``TranslationRow`` for translation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Literal

import numpy as np
import pandas as pd

MISSING_MESSAGE = "No code was given"

Kind = Literal["result", "text", "count"]


class _TheSystem:
    """The system of the answer table a row was answered from (see ``Column.missing``)."""

    def __repr__(self) -> str:
        return "THE_SYSTEM"


THE_SYSTEM: Any = _TheSystem()


@dataclass(frozen=True)
class Column:
    """One result column.

    ``kind``: ``result`` (a nullable boolean, kept per answer as int8: 1 true, 0 false, -1
    NA), ``text`` (a str or None) or ``count`` (an int64). ``missing``: its value for a
    missing code (``THE_SYSTEM``: the answer table's system). ``per_system``: every answer
    of one system's table has that system here (a result over one system holds it once).
    """

    name: str
    kind: Kind = "text"
    missing: Any = None
    per_system: bool = False


@dataclass(frozen=True)
class Schema:
    """The columns of one kind of bulk result. ``categorical``: text columns are
    categoricals over Arrow strings (each distinct text stored once), else ``object``."""

    name: str
    columns: tuple[Column, ...]
    categorical: bool

    @property
    def names(self) -> list[str]:
        """The column names, in order."""
        return [c.name for c in self.columns]

    @property
    def texts(self) -> tuple[str, ...]:
        """The names of the text columns, in order."""
        return tuple(c.name for c in self.columns if c.kind == "text")

    def column(self, name: str) -> Column:
        """The column called ``name``."""
        return next(c for c in self.columns if c.name == name)

    def missing_row(self, system: str | None = None) -> Any:
        """The answer object of a missing code (attributes named like the columns)."""
        return SimpleNamespace(
            **{c.name: system if c.missing is THE_SYSTEM else c.missing for c in self.columns}
        )

    def meta(self, categories: pd.CategoricalDtype | None = None) -> pd.DataFrame:
        """The empty frame of this schema's columns and dtypes (``categories``: the dtype of
        a categorical text column, e.g. Dask's unknown categories)."""
        text: Any = object if not self.categorical else categories or pd.CategoricalDtype()
        dtypes = {"result": "boolean", "text": text, "count": np.int64}
        return pd.DataFrame({c.name: pd.Series(dtype=dtypes[c.kind]) for c in self.columns})


VALIDATION = Schema(
    "validation",
    (
        Column("result", "result", pd.NA),
        Column("message", missing=MISSING_MESSAGE),
        Column("display"),
        Column("issue", missing="missing"),
        Column("system", missing=THE_SYSTEM, per_system=True),
    ),
    categorical=True,
)
TRANSLATION = Schema(
    "translation",
    (
        Column("result", "result", pd.NA),
        Column("equivalence"),
        Column("target_system"),
        Column("target_code"),
        Column("target_display"),
        Column("matches", "count", 0),
        Column("message"),
    ),
    categorical=False,
)


def _result_flag(value: Any) -> int:
    return -1 if value is pd.NA or value is None else int(bool(value))


class Answers:
    """Answers for distinct values, as one array per column of ``schema`` (``result``:
    int8, 1 valid, 0 invalid, -1 NA; texts: object; counts: int64)."""

    __slots__ = ("columns", "schema")

    def __init__(self, schema: Schema, columns: dict[str, np.ndarray]) -> None:
        self.schema = schema
        self.columns = columns

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def __len__(self) -> int:
        return len(self.columns["result"])

    @property
    def result(self) -> np.ndarray:
        """The result flags (int8: 1, 0, -1 for NA)."""
        return self.columns["result"]

    @classmethod
    def blank(cls, schema: Schema, n: int, **fill: Any) -> Answers:
        """``n`` answers: invalid, no texts, zero counts, except the columns in ``fill``."""
        dtypes = {"result": np.int8, "text": object, "count": np.int64}
        empty = {"result": 0, "text": None, "count": 0}
        columns: dict[str, np.ndarray] = {}
        for c in schema.columns:
            value = fill.get(c.name, empty[c.kind])
            if value is None and c.kind == "text":  # numpy makes object arrays of None
                columns[c.name] = np.empty(n, dtype=object)
            else:
                columns[c.name] = np.full(n, value, dtype=dtypes[c.kind])
        return cls(schema, columns)

    @classmethod
    def of_rows(cls, schema: Schema, rows: Sequence[Any]) -> Answers:
        """From answer objects (a ``ValidationResult``, a ``TranslationRow``, a
        ``missing_row``: attributes named like the columns)."""
        found = cls.blank(schema, len(rows))
        for c in schema.columns:
            values = [getattr(row, c.name) for row in rows]
            if c.kind == "result":
                found.columns[c.name][:] = [_result_flag(v) for v in values]
            else:
                found.columns[c.name][:] = values
        return found

    def put(self, positions: Sequence[int] | np.ndarray, rows: Sequence[Any]) -> None:
        """Set the answers at ``positions`` from answer objects (as ``of_rows``)."""
        if len(rows):
            found = Answers.of_rows(self.schema, rows)
            for name, values in self.columns.items():
                values[np.asarray(positions, dtype=np.int64)] = found.columns[name]

    @classmethod
    def missing(cls, schema: Schema, system: str | None) -> Answers:
        """The one answer of a missing code."""
        return cls.of_rows(schema, [schema.missing_row(system)])

    def take(self, positions: np.ndarray) -> Answers:
        """The answers at ``positions``."""
        return Answers(self.schema, {k: v.take(positions) for k, v in self.columns.items()})

    @classmethod
    def concat(cls, parts: Sequence[Answers]) -> Answers:
        """One after the other (at least one part)."""
        if len(parts) == 1:
            return parts[0]
        schema = parts[0].schema
        return cls(schema, {n: np.concatenate([p.columns[n] for p in parts]) for n in schema.names})
