"""Row verdicts: ``validate_column``'s answers for one column of codes without its result
frame, for callers that need only each row's pass or fail and the failing rows' reasons (the
pandera check, ``workbench.pandera``).

The column is looked up in the value set's answer table exactly as ``validate_column`` looks
it up (``AnswerTable.grouped``: the same answers, learnt once per distinct code and kept with
the value set); what is returned is each row's entry in that table and the entries' answers,
so a row's verdict is one ``take`` and the counts per reason one ``bincount``, with no
per-row text column built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from workbench.bulk.encoding import code_column, is_structured
from workbench.bulk.jobs import ValidateColumn
from workbench.terminology.engine import Terminology

VALID, MISSING = 1, -1  # the answers' result flags (0 is invalid)


@dataclass(frozen=True)
class Verdicts:
    """Each row's entry among the distinct codes (``position``; entry 0 is a missing code)
    and each entry's code text, result flag (1 valid, 0 invalid, -1 missing) and issue;
    ``noted``: the entries that are valid and yet have an issue (a warning)."""

    position: np.ndarray
    codes: np.ndarray
    flags: np.ndarray
    issues: np.ndarray
    noted: np.ndarray

    def passing(self, skip_missing: bool) -> np.ndarray:
        """Each entry's pass: valid, or missing when ``skip_missing``."""
        return (self.flags == VALID) | (skip_missing & (self.flags == MISSING))

    def summary(self, failing: np.ndarray, skip_missing: bool) -> tuple[int, dict[str, int]]:
        """How many rows are valid, and the rows per issue (most first), given the rows
        that fail (``failing``: their entries, under ``skip_missing``). Only the failing
        rows are counted per entry, unless some valid entries have an issue."""
        if len(self.noted):
            rows = np.bincount(self.position, minlength=len(self.flags))
        else:
            rows = np.bincount(failing, minlength=len(self.flags))
            if skip_missing and self.flags[0] == MISSING:  # missing rows pass: count them
                rows[0] = np.count_nonzero(self.position == 0)
        used = np.flatnonzero(rows > 0)
        counts: dict[str, int] = {}
        for issue, n in zip(self.issues[used].tolist(), rows[used].tolist(), strict=True):
            if issue is not None:
                counts[issue] = counts.get(issue, 0) + n
        missing = int(rows[0]) if self.flags[0] == MISSING and skip_missing else 0
        valid = len(self.position) - len(failing) - missing
        return valid, dict(sorted(counts.items(), key=lambda item: -item[1]))


def row_verdicts(
    engine: Terminology,
    valueset: Any,
    codes: Any,
    *,
    system: str | None = None,
    abstract: bool | None = None,
) -> Verdicts | None:
    """The verdicts of a column of codes (a pandas or polars Series) of ``system`` (or of
    none: the value set infers it), or None where ``validate_column`` takes another path for
    it (Codings or CodeableConcepts, a polars column that is not text).

    >>> from workbench import Workbench
    >>> wb = Workbench(); _ = wb.load("valuesets", progress=False)
    >>> found = row_verdicts(wb.terminology, "http://hl7.org/fhir/ValueSet/administrative-gender",
    ...                      pd.Series(["male", "mail", None]))
    >>> found.flags.take(found.position).tolist(), found.issues[found.position[1]]
    ([1, 0, -1], 'unknown-code')
    """
    encoded: Any
    if isinstance(codes, pd.Series):
        if codes.dtype == object and is_structured(codes):
            return None
        texts, encoded = code_column(codes)
    else:
        arrow = codes.to_arrow()
        kind = arrow.type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)) and not (
            pa.types.is_string_view(kind)
        ):
            return None
        texts, encoded = pd.Series([], dtype=object), arrow
    checker = ValidateColumn(engine, valueset, abstract=abstract).checker()
    state, position, rows = checker.table(system).grouped(texts, encoded)
    answers = state.answers
    noted = state.cache.get("verdicts:noted")
    if noted is None:  # once per state of the table
        issued = pd.notna(answers["issue"])
        noted = state.cache["verdicts:noted"] = np.flatnonzero(issued & (answers.result == VALID))
    return Verdicts(
        position if rows is None else position.take(rows),
        state.codes,
        answers.result,
        answers["issue"],
        noted,
    )
