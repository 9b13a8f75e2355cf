"""The pandas backend: the column algorithm every other backend ends in.

A column is answered by the answer tables in its own encoding (``encoding``): one system
for every row (or none: the codes' system is inferred) is a lookup in that system's table;
a system column of several systems answers each distinct (system, code) pair once from
its system's table (``systems``). Validation with a display column checks each distinct
(system, code, display) once; a column of Coding or CodeableConcept dicts is validated
coding by coding. Translation takes the same path as validation without displays, with
its own schema (``schema.TRANSLATION``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench.bulk import counting, paths
from workbench.bulk.columns import require_column
from workbench.bulk.encoding import (
    Objects,
    checked_codes,
    code_column,
    factorize,
    factorize_objects,
    is_missing,
    is_structured,
    missing_mask,
    uniform_value,
)
from workbench.bulk.report import Revalidate, ValidationFrame, to_report
from workbench.bulk.schema import MISSING_MESSAGE, VALIDATION, Answers
from workbench.bulk.systems import answer_systems
from workbench.bulk.table import AnswerTable, result_frame
from workbench.errors import InvalidRequestError
from workbench.terminology.validate.coding import ValidationResult, combine_codings, without_system

if TYPE_CHECKING:
    from workbench.bulk.checker import Checker
    from workbench.bulk.jobs import TranslateColumn, ValidateColumn

Tables = Callable[["str | None"], AnswerTable]
Texts = tuple[pd.Series, "Objects | pa.Array | None"]


def handles(data: Any) -> bool:
    """Whether ``data`` is pandas data (the default backend)."""
    return isinstance(data, pd.Series | pd.DataFrame)


def counts(data: Any, column: str | None) -> pd.DataFrame:
    """The distinct codes of a pandas column with their rows (``counting.code_counts``)."""
    return counting.pandas_counts(data, column)


def validate(job: ValidateColumn, data: Any) -> ValidationFrame:
    """``validate_column`` of a pandas Series or DataFrame: a ``ValidationFrame``."""
    checker = job.checker()
    data = paths.walked_frame(data, job.code)  # a dotted path: its column of values
    if isinstance(data, pd.DataFrame):  # a missing column is a KeyError naming the others
        check_columns(list(data.columns), code=job.code, system=job.system, display=job.display)
    codes = data[job.code] if isinstance(data, pd.DataFrame) and job.code is not None else data
    texts = code_column(codes) if isinstance(codes, pd.Series) else None
    frame = validate_pandas(
        checker, data, code=job.code, system=job.system, display=job.display, texts=texts
    )
    return to_report(
        frame,
        checked_codes(texts[0] if texts is not None else codes),
        suggester=job.suggester(),
        revalidate=Revalidate(data, job.code, job.system, partial(validate, job), job.engine),
    )


def collect(job: ValidateColumn, data: Any, result: Any) -> tuple[pd.DataFrame, Any]:
    """The result and its input (already pandas)."""
    return result, data


def translate(job: TranslateColumn, data: Any) -> pd.DataFrame:
    """``translate_column`` of a pandas Series or DataFrame."""
    return translate_pandas(job.translator().table, data, code=job.code, system=job.system)


# --- one algorithm ------------------------------------------------------------------------


def answer_column(
    tables: Tables,
    codes: pd.Series,
    systems: pd.Series | str | None,
    encoded: Objects | pa.Array | None = None,
) -> pd.DataFrame:
    """The frame of the tables' schema for a code column (its ``code_column``: the codes'
    texts and ``encoded``) with one system (or None) or a system column, row for row:
    each row's code is looked up in its system's table in the column's own encoding."""
    if isinstance(systems, pd.Series):
        systems = uniform_value(systems) or systems
    if isinstance(systems, pd.Series) and len(codes):
        return answer_systems(tables, codes, systems, encoded)
    one = systems if isinstance(systems, str) else None
    state, position, rows = tables(one).grouped(codes, encoded)
    return result_frame(state.answers, position, one, state, rows)


def validate_arrays(
    checker: Checker,
    codes: pd.Series,
    systems: pd.Series | str | None,
    displays: pd.Series | None,
    encoded: Objects | pa.Array | None = None,
) -> pd.DataFrame:
    """Validate aligned code/system/display columns; return the frame of ``VALIDATION``.

    ``encoded``: the code column grouped by identity with the codes' texts, or as Arrow
    strings (from ``code_column``), when the caller has it.

    Without displays: ``answer_column``. Otherwise each distinct (system, code, display)
    is validated once (plain ones through the answer tables too); rows get their answer
    by ``take``. A missing code (None, NaN, NA, "") gives result NA and the issue
    ``missing``.
    """
    if isinstance(systems, pd.Series):
        systems = uniform_value(systems) or systems
    if displays is not None and bool(displays.isna().all()):
        displays = None
    if displays is None:
        return answer_column(checker.table, codes, systems, encoded)
    columns = {"code": codes, "system": systems, "display": displays}
    parts = {
        name: factorize_objects(encoded)
        if name == "code" and isinstance(encoded, Objects)
        else factorize(col)
        for name, col in columns.items()
        if isinstance(col, pd.Series)
    }
    combined = np.zeros(len(codes), dtype=np.int64)
    for ids, uniques in parts.values():
        combined = combined * len(uniques) + ids
    ids, unique_keys = pd.factorize(combined)
    row_ids, rest = np.asarray(ids, dtype=np.int64), np.asarray(unique_keys, dtype=np.int64)
    values: dict[str, np.ndarray] = {}
    for name, (_, uniques) in reversed(list(parts.items())):
        rest, position = np.divmod(rest, len(uniques))
        values[name] = uniques[position]
    if "system" not in values:
        values["system"] = np.full(len(values["code"]), systems, dtype=object)
    answers, at = _distinct_answers(checker, values)
    constant = systems if isinstance(systems, str) else None
    return result_frame(answers, at.take(row_ids), constant)


def _distinct_answers(
    checker: Checker, values: dict[str, np.ndarray]
) -> tuple[Answers, np.ndarray]:
    """The answers of distinct (code, system, display) triples (``values``: one array per
    part) and each triple's position in them: those without a display from the answer
    tables, the others checked one by one."""
    code_values, system_values = values["code"], values["system"]
    display_values = values["display"]
    n = len(code_values)
    no_system = missing_mask(system_values)
    plain = np.asarray(pd.isna(display_values) | (display_values == ""), dtype=bool)
    segments: list[Answers] = []
    at = np.zeros(n, dtype=np.int64)
    offset = 0
    groups = [
        (str(s), plain & ~no_system & (system_values == s))
        for s in pd.unique(system_values[plain & ~no_system])
    ]
    for system, chosen in [*groups, (None, plain & no_system)]:
        where = np.flatnonzero(chosen)
        if not len(where):
            continue
        state, position = checker.table(system).distinct(code_values[where])
        segments.append(state.answers)
        at[where] = offset + position
        offset += len(state.answers)
    others = np.flatnonzero(~plain)
    rows: list[Any] = []
    for k in others:
        system = None if is_missing(system_values[k]) else str(system_values[k])
        if is_missing(code_values[k]):
            rows.append(VALIDATION.missing_row(system))
        else:
            display = None if is_missing(display_values[k]) else str(display_values[k])
            rows.append(checker.check(system, str(code_values[k]), display))
    segments.append(Answers.of_rows(VALIDATION, rows))
    at[others] = offset + np.arange(len(others))
    return Answers.concat(segments), at


def check_columns(
    columns: list[Any], *, code: str | None, system: str | None, display: str | None
) -> None:
    """Check the column arguments against a frame's columns (every backend).

    ``system`` names a column, or is a system URI (it has a ':' or a '/'): the call said
    which (``columns.system_of``: ``system_column=`` or ``system=``).
    """
    require_column(columns, code)
    named = [(display, "display")]
    if system is not None and system not in columns and "/" not in system and ":" not in system:
        named.append((system, "system"))
    for name, role in named:
        if name is not None:
            require_column(columns, name, role)


def _validate_structured(checker: Checker, values: pd.Series) -> pd.DataFrame:
    """Validate a column of Coding or CodeableConcept dicts (a CodeableConcept is valid
    when any of its codings is)."""
    memo: dict[Hashable, ValidationResult] = {}

    def one(coding: Mapping[str, Any]) -> ValidationResult:
        system, code, display = coding.get("system"), coding.get("code"), coding.get("display")
        version = coding.get("version")
        key = (system, code, display, version)
        if key not in memo:
            if is_missing(code):
                memo[key] = ValidationResult(
                    False, MISSING_MESSAGE, None, code, system, issue="missing"
                )
            elif is_missing(system):  # a Coding without a system: never inferred
                memo[key] = without_system(checker.valueset, str(code))
            else:
                memo[key] = checker.check(system, str(code), display, version)
        return memo[key]

    rows: list[Any] = []
    where = f"the value set '{checker.valueset.canonical}'"  # as validate_code names it
    for value in values:
        codings = None
        if isinstance(value, Mapping):
            codings = value.get("coding") if "coding" in value else [value]
        elif not is_missing(value):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise InvalidRequestError(
                f"The code column holds a {type(value).__name__} ({shown}) among its Codings: "
                "a column holds codes, or Codings and CodeableConcepts (dicts), not both"
            )
        if not codings:
            rows.append(VALIDATION.missing_row())
            continue
        concept = isinstance(value, Mapping) and "coding" in value
        rows.append(combine_codings([one(c) for c in codings], where if concept else None))
    return result_frame(Answers.of_rows(VALIDATION, rows), np.arange(len(rows), dtype=np.int64))


def prepare(
    data: pd.Series | pd.DataFrame,
    *,
    code: str | None,
    system: str | None,
    display: str | None,
    texts: Texts | None = None,
) -> tuple[pd.Series, pd.Series | str | None, pd.Series | None, Objects | pa.Array | None]:
    """Pick the code, system and display inputs out of a Series or a DataFrame, with the
    code column's ``code_column`` (``texts``: that, when the caller has it already)."""
    if isinstance(data, pd.DataFrame):
        check_columns(list(data.columns), code=code, system=system, display=display)
        assert code is not None
        codes, encoded = code_column(data[code]) if texts is None else texts
        systems: pd.Series | str | None = system
        if system is not None and system in data.columns:
            systems = data[system]
        displays = data[display] if display is not None else None
        return codes, systems, displays, encoded
    if isinstance(data, pd.Series):
        if display is not None:
            raise InvalidRequestError("display=... names a column; pass a DataFrame for that")
        codes, encoded = code_column(data) if texts is None else texts
        return codes, system, None, encoded
    raise TypeError(
        f"validate_column takes a pandas Series or DataFrame, not {type(data).__name__}"
    )


def validate_pandas(
    checker: Checker,
    data: pd.Series | pd.DataFrame,
    *,
    code: str | None = None,
    system: str | None = None,
    display: str | None = None,
    texts: Texts | None = None,
) -> pd.DataFrame:
    """Validate pandas data with a prepared checker; a plain frame of ``VALIDATION``
    (``texts``: the code column's ``code_column``, when the caller has it already)."""
    codes, systems, displays, encoded = prepare(
        data, code=code, system=system, display=display, texts=texts
    )
    if codes.dtype == object and is_structured(codes):
        frame = _validate_structured(checker, codes)
    else:
        frame = validate_arrays(checker, codes, systems, displays, encoded)
    frame.index = codes.index
    return frame


def translation_input(
    data: pd.DataFrame | pd.Series, code: str | None, system: str | None
) -> tuple[pd.Series, pd.Series | str | None]:
    """The code column and the system column (or the system of every row, or None) of a
    translation."""
    if isinstance(data, pd.DataFrame):
        require_column(list(data.columns), code)
        if system is not None and system in data.columns:
            return data[code], data[system]
        return data[code], system
    if isinstance(data, pd.Series):
        return data, system
    raise InvalidRequestError("translate_column takes a pandas DataFrame or Series")


def translate_pandas(
    tables: Tables,
    data: pd.DataFrame | pd.Series,
    *,
    code: str | None = None,
    system: str | None = None,
) -> pd.DataFrame:
    """Translate every row; a frame of ``TRANSLATION`` aligned to ``data.index``.

    ``code`` names the code column of a DataFrame; ``system`` is a column name or, when it
    is not a column, the system of every row. ``tables(system)``: the answer table of a
    system (a ``ColumnTranslator``'s, or the tables answered beforehand on Dask)."""
    codes, systems = translation_input(data, code, system)
    texts, encoded = code_column(codes)
    if isinstance(systems, str) and is_missing(systems):
        systems = None
    frame = answer_column(tables, texts, systems, encoded)
    frame.index = data.index
    return frame
