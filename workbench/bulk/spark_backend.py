"""The Spark backend: the same semantics on a ``pyspark.sql.DataFrame``, lazily, in the JVM.

No Python runs per row, and no terminology server is involved. A row's answer depends on
a few values (its code, or Coding struct; its system column; its display column). For a
validation the call starts no job: the plan gathers the distinct values (``distinct``) and
answers each batch of them in a Python worker (``mapInArrow``, with the engine itself,
``shipping.ShippedChecker``: workbench must be importable on the executors), by the pandas
backend, with the very answer tables and rules of a pandas column (``encoding.is_missing``
included), so every row gets what pandas gives for it. A translation does the same with its maps and
their target displays shipped as plain data (a ``ShippedTranslator``). The answers are joined to the
rows by a broadcast hash join on those values (null-safe: a null key finds the missing
answer): they are shipped to the executors once, and the join runs in generated JVM code
(measured against ``mapInArrow`` over every row in ``benchmarks/bench_spark.py``).

A column of the wrong type (an array, a map, binary, a struct that is neither a Coding nor
a CodeableConcept, a date) is refused with its name before any job runs; so is a value set
or a ConceptMap that does not exist. pyspark is imported here only, when a Spark DataFrame
is given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from workbench.bulk import counting, libraries
from workbench.bulk.columns import require_column
from workbench.bulk.pandas_backend import (
    check_columns,
    translate_pandas,
    validate_pandas,
)
from workbench.bulk.schema import TRANSLATION, VALIDATION, Schema
from workbench.bulk.shipping import ShippedChecker
from workbench.bulk.translate import shipped
from workbench.errors import InvalidRequestError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType, StructType

    from workbench.bulk.jobs import TranslateColumn, ValidateColumn

CODING_FIELDS = frozenset({"system", "version", "code", "display", "userSelected"})
ANSWER = "__workbench_answer"  # the struct column the answers are joined in as
KEY = "__workbench_key_"  # the answers' key columns (then their number)


def handles(data: Any) -> bool:
    """Whether ``data`` is a Spark DataFrame (classic or Connect; pyspark is not imported
    when it is not in use)."""
    return libraries.is_spark(data)


@dataclass(frozen=True)
class Keys:
    """The input columns a row's answer depends on, and how to read them on the driver:
    ``code`` (a column name), ``system`` (a column name, else the system of every row or
    None), ``display`` (a column name or None); ``structured``: the code column holds
    Coding or CodeableConcept structs."""

    code: str
    system: str | None
    system_column: bool
    display: str | None
    structured: bool

    @property
    def columns(self) -> list[str]:
        """The key columns, code first."""
        found = [self.code]
        if self.system_column and self.system is not None:
            found.append(self.system)
        if self.display is not None:
            found.append(self.display)
        return found


def counts(data: DataFrame, column: str | None) -> pd.DataFrame:
    """The distinct codes of a Spark column with their rows: one grouping job, its small
    result collected on the driver."""
    column = require_column(list(data.columns), column)
    _text_type(column, data.schema[column].dataType)
    rows = data.groupBy(column).count().collect()
    missing = sum(int(r[1]) for r in rows if r[0] is None)
    found = [(r[0], int(r[1])) for r in rows if r[0] is not None]
    return counting.code_counts([c for c, _ in found], [n for _, n in found], missing)


def validate(job: ValidateColumn, data: DataFrame) -> DataFrame:
    """``validate_column`` of a Spark DataFrame: a lazy DataFrame of ``VALIDATION``
    (``result`` boolean, null for a missing code; the texts strings), one row per input
    row in its order. Eager: only the value set is compiled (no Spark job runs); the
    distinct (system, code, display) values are answered when the caller's action runs."""
    return with_validation(job, data).select(f"{ANSWER}.*")


def collect(job: ValidateColumn, data: DataFrame, result: DataFrame) -> tuple[pd.DataFrame, Any]:
    """The result and the input columns it is about, collected to the driver as pandas by
    one job over the same plan (``reports.report_of``)."""
    from workbench.bulk.reports import input_columns

    columns = input_columns(job, list(data.columns))
    picked = [f"{KEY}{i}" for i in range(len(columns))]
    both = with_validation(job, data).select(
        *[data[c].alias(p) for c, p in zip(columns, picked, strict=True)], f"{ANSWER}.*"
    )
    rows = [r.asDict(recursive=True) for r in both.collect()]
    source = pd.DataFrame({c: [r[p] for r in rows] for c, p in zip(columns, picked, strict=True)})
    frame = pd.DataFrame({n: [r[n] for r in rows] for n in VALIDATION.names})
    return frame, source[columns[0]] if job.code is None else source


def translate(job: TranslateColumn, data: DataFrame) -> DataFrame:
    """``translate_column`` of a Spark DataFrame: a lazy DataFrame of ``TRANSLATION``, one
    row per input row in its order. Eager: only the maps are chosen and their target
    displays looked up (no Spark job runs, but see ``with_translation``)."""
    return with_translation(job, data).select(f"{ANSWER}.*")


def with_validation(job: ValidateColumn, data: DataFrame, into: str = ANSWER) -> DataFrame:
    """``data`` with one more column, ``into``: a struct of the ``VALIDATION`` columns.
    No job runs: the distinct keys are answered inside the plan (``mapInArrow`` over them,
    Python once per distinct key), when the caller's action runs."""
    job.checker()  # an unknown value set fails here, before any job
    keys = validation_keys(data, job.code, job.system, job.display)
    return _joined_lazily(data, keys, VALIDATION, _Validator(job.shipped_checker(), keys), into)


@dataclass(frozen=True)
class _Validator:
    """Answers a batch of distinct keys, on an executor (picklable: the engine shipped)."""

    checker: ShippedChecker
    keys: Keys

    def __call__(self, local: pd.DataFrame) -> pd.DataFrame:
        keys = self.keys
        return validate_pandas(
            self.checker.open(), local, code=keys.code, system=keys.system, display=keys.display
        )


def with_translation(job: TranslateColumn, data: DataFrame, into: str = ANSWER) -> DataFrame:
    """``data`` with one more column, ``into``: a struct of the ``TRANSLATION`` columns.
    No job runs: the maps and their target displays are shipped as plain data and the
    distinct keys answered inside the plan, as for a validation. The one exception, a map
    with an ``unmapped`` ``provided`` group into a loaded code system (whose displays of the
    column's own codes only the engine knows): the distinct keys are collected and
    answered on the driver, by one Spark job during the call."""
    translator = job.translator()  # an unknown map fails here, before any job
    keys = translation_keys(data, job.code, job.system)
    plain = shipped(translator)
    if plain is None:
        return _joined(data, keys, TRANSLATION, _Translating(translator, keys), into)
    return _joined_lazily(data, keys, TRANSLATION, _Translating(plain, keys), into)


@dataclass(frozen=True)
class _Translating:
    """Answers a batch of distinct keys (picklable with a ``ShippedTranslator``)."""

    translator: Any
    keys: Keys

    def __call__(self, local: pd.DataFrame) -> pd.DataFrame:
        keys = self.keys
        if keys.structured:  # a Coding's code and system
            codings = local[keys.code]
            local = pd.DataFrame(
                {
                    "code": [_field(c, "code") for c in codings],
                    "system": [_field(c, "system") for c in codings],
                },
                dtype=object,
            )
            return translate_pandas(self.translator.table, local, code="code", system="system")
        return translate_pandas(self.translator.table, local, code=keys.code, system=keys.system)


# --- the columns ----------------------------------------------------------------------------


def validation_keys(
    data: DataFrame, code: str | None, system: str | None, display: str | None
) -> Keys:
    """The key columns of a validation, their types checked (no job runs)."""
    columns = list(data.columns)
    check_columns(columns, code=code, system=system, display=display)
    assert code is not None
    types = {f.name: f.dataType for f in data.schema.fields}
    structured = _code_type(code, types[code])
    system_column = system is not None and system in columns
    for name in (system if system_column else None, display):
        if name is not None:
            _text_type(name, types[name])
    return Keys(code, system, system_column, display, structured)


def translation_keys(data: DataFrame, code: str | None, system: str | None) -> Keys:
    """The key columns of a translation, their types checked (no job runs). A Coding
    struct gives its code and system (then ``system`` must not be given)."""
    columns = list(data.columns)
    code = require_column(columns, code)
    types = {f.name: f.dataType for f in data.schema.fields}
    structured = _code_type(code, types[code], codeable=False)
    system_column = system is not None and system in columns
    if structured and system is not None:
        raise InvalidRequestError(
            f"The code column {code!r} holds Codings, which name their system: "
            f"leave system=... out (it is {system!r})"
        )
    if system_column:
        assert system is not None
        _text_type(system, types[system])
    return Keys(code, system, system_column, None, structured)


def _code_type(name: str, kind: DataType, *, codeable: bool = True) -> bool:
    """Whether the code column ``name`` holds structs (Codings, CodeableConcepts when
    ``codeable``); raises InvalidRequestError for a type no code can be read from."""
    from pyspark.sql.types import StructType

    if isinstance(kind, StructType):
        names = set(kind.fieldNames())
        if "code" in names and names <= CODING_FIELDS:
            _text_type(f"{name}.code", kind["code"].dataType)
            return True
        if codeable and "coding" in names and _codings(kind):
            return True
        what = "Coding" + (" or CodeableConcept" if codeable else "")
        raise InvalidRequestError(
            f"The column {name!r} is a struct of {sorted(names)}, not a {what} "
            f"(a Coding has the fields {sorted(CODING_FIELDS)}"
            + (
                ", a CodeableConcept 'coding' (an array of Codings) and 'text')"
                if codeable
                else ")"
            )
        )
    _text_type(name, kind)
    return False


def _codings(kind: StructType) -> bool:
    """Whether a struct is a CodeableConcept: ``coding`` an array of Coding structs."""
    from pyspark.sql.types import ArrayType, StructType

    coding = kind["coding"].dataType
    if not isinstance(coding, ArrayType) or not isinstance(coding.elementType, StructType):
        return False
    names = set(coding.elementType.fieldNames())
    return (
        set(kind.fieldNames()) <= {"coding", "text"} and "code" in names and names <= CODING_FIELDS
    )


def _text_type(name: str, kind: DataType) -> None:
    """Raise InvalidRequestError unless a column of ``kind`` holds codes or texts: strings,
    numbers (read as the text the user had: ``1`` and ``1.0`` are ``"1"``), booleans or
    nothing but nulls."""
    from pyspark.sql.types import (
        ArrayType,
        BooleanType,
        CharType,
        NullType,
        NumericType,
        StringType,
        VarcharType,
    )

    if isinstance(kind, StringType | CharType | VarcharType | NumericType | BooleanType | NullType):
        return
    hint = ""
    if isinstance(kind, ArrayType):
        hint = " (one code per row: explode the array first, pyspark.sql.functions.explode)"
    raise InvalidRequestError(
        f"The column {name!r} is of type {kind.simpleString()}: a code, system or display "
        f"column holds strings or numbers{hint}"
    )


def _field(value: Any, name: str) -> Any:
    """A field of a collected struct (a dict; None for a null struct)."""
    return value.get(name) if isinstance(value, dict) else None


# --- the answers, joined --------------------------------------------------------------------


def _local(distinct: pa.Table, keys: Keys) -> pd.DataFrame:
    """The collected distinct keys as pandas, as a pandas column holds them: structs as
    dicts (lists as lists), strings and numbers as Arrow gives them to pandas."""
    data: dict[str, Any] = {}
    for name, column in zip(keys.columns, distinct.columns, strict=True):
        if name == keys.code and keys.structured:
            data[name] = pd.Series(column.to_pylist(), dtype=object)
        else:
            data[name] = column.to_pandas()
    return pd.DataFrame(data)


def _answer_arrow(frame: pd.DataFrame, schema: Schema) -> pa.StructArray:
    """A result frame of ``schema`` as one Arrow struct (booleans, strings, int64)."""
    kinds = {"result": pa.bool_(), "text": pa.string(), "count": pa.int64()}
    arrays = []
    for column in schema.columns:
        values = frame[column.name]
        if column.kind == "result":
            array = pa.array(values.astype(object).where(values.notna(), None), pa.bool_())
        elif column.kind == "text":
            array = pa.array(values.astype(object).where(values.notna(), None), pa.string())
        else:
            array = pa.array(values.to_numpy(), kinds["count"])
        arrays.append(array)
    return pa.StructArray.from_arrays(arrays, names=schema.names)


def spark_schema(schema: Schema) -> StructType:
    """The Spark type of a result of ``schema``: ``result`` boolean, texts strings, counts
    longs (all nullable)."""
    from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

    kinds = {"result": BooleanType(), "text": StringType(), "count": LongType()}
    return StructType([StructField(c.name, kinds[c.kind], True) for c in schema.columns])


def _joined(
    data: DataFrame,
    keys: Keys,
    schema: Schema,
    answer: Callable[[pd.DataFrame], pd.DataFrame],
    into: str,
) -> DataFrame:
    """``data`` with the answers of its distinct keys, ``answer(local)`` on the driver,
    joined in as the struct column ``into`` (a broadcast hash join, null-safe)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    if into in data.columns:
        raise InvalidRequestError(f"The data has a column {into!r} already")
    columns = [_col(name) for name in keys.columns]
    distinct = data.select(*columns).distinct().toArrow()  # the one eager job
    frame = answer(_local(distinct, keys))
    names = [f"{KEY}{k}" for k in range(len(columns))]
    table = pa.Table.from_arrays(
        [*distinct.columns, _answer_arrow(frame, schema)], names=[*names, into]
    )
    types = {f.name: f.dataType for f in data.schema.fields}
    fields = [StructField(n, types[k], True) for n, k in zip(names, keys.columns, strict=True)]
    struct = StructType([*fields, StructField(into, spark_schema(schema), True)])
    answers = data.sparkSession.createDataFrame(table, schema=struct)
    on = _all_equal([c.eqNullSafe(F.col(n)) for c, n in zip(columns, names, strict=True)])
    joined = data.join(F.broadcast(answers), on=on, how="left")
    return joined.select(*[_col(c) for c in data.columns], F.col(into))


def _joined_lazily(
    data: DataFrame,
    keys: Keys,
    schema: Schema,
    answer: Callable[[pd.DataFrame], pd.DataFrame],
    into: str,
) -> DataFrame:
    """As ``_joined``, with the distinct keys gathered and answered inside the plan: a
    ``mapInArrow`` over ``distinct`` of the keys (one Python step per batch of distinct
    keys, never per row), broadcast and joined null-safe; no job runs now."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    if into in data.columns:
        raise InvalidRequestError(f"The data has a column {into!r} already")
    columns = [_col(name) for name in keys.columns]
    names = [f"{KEY}{k}" for k in range(len(columns))]
    types = {f.name: f.dataType for f in data.schema.fields}
    fields = [StructField(n, types[k], True) for n, k in zip(names, keys.columns, strict=True)]
    struct = StructType([*fields, StructField(into, spark_schema(schema), True)])
    distinct = data.select(*[c.alias(n) for c, n in zip(columns, names, strict=True)]).distinct()
    answers = distinct.mapInArrow(_Answering(keys, schema, answer, into), struct)
    on = _all_equal([c.eqNullSafe(F.col(n)) for c, n in zip(columns, names, strict=True)])
    joined = data.join(F.broadcast(answers), on=on, how="left")
    return joined.select(*[_col(c) for c in data.columns], F.col(into))


@dataclass(frozen=True)
class _Answering:
    """The function of ``mapInArrow``: each batch of distinct keys with its answers."""

    keys: Keys
    schema: Schema
    answer: Callable[[pd.DataFrame], pd.DataFrame]
    into: str

    def __call__(self, batches: Any) -> Any:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            table = pa.Table.from_batches([batch])
            frame = self.answer(_local(table, self.keys))
            arrays = [*batch.columns, _answer_arrow(frame, self.schema)]
            yield pa.RecordBatch.from_arrays(arrays, names=[*batch.schema.names, self.into])


def _all_equal(conditions: Sequence[Column]) -> Column:
    found = conditions[0]
    for more in conditions[1:]:
        found = found & more
    return found


def _col(name: str) -> Column:
    """The column called ``name`` (dots and backticks in it taken literally)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")
