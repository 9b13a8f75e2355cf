"""``ValidationFrame.fix``: apply the safe kinds of suggestion, re-validate, keep an audit.

Only suggestions that cannot change what a code means are applied, each kind only when
asked for:

==============  =====================================================================
kind            applied when the suggestion is …
==============  =====================================================================
``whitespace``  the code without its surrounding (or doubled inner) whitespace
``case``        a case variant of the code (in a code system where case matters)
``dotted``      the dotted or undotted form of the code (``E119`` ↔ ``E11.9``)
``map``         the target of a loaded ConceptMap at ``equal``/``equivalent`` strength
==============  =====================================================================

A suggestion that needs several kinds (``" Female"``: whitespace and case) is applied only
when every one is asked for. Edit-distance guesses (``nearest code``, ``nearest display``)
and a display typed as a code are never applied. The data given is never changed in place:
``fix`` returns a ``Fixed`` with a copy (``.data``, same index), the ``.audit`` of every cell
changed and the new validation (``.report``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from workbench.bulk.encoding import is_structured
from workbench.bulk.suggest import CASE, DOTTED, ISSUES, SAFE_EQUIVALENCES, WHITESPACE, Suggestion
from workbench.errors import InvalidRequestError
from workbench.marks import frame_html, frame_text, visible

#: The kinds ``fix`` knows, with the suggestion reason each applies.
KINDS = {"whitespace": WHITESPACE, "case": CASE, "dotted": DOTTED, "map": "ConceptMap match"}
#: The columns of an audit: what changed first (before, after, its kind), then where (row,
#: column) and why.
AUDIT = ["before", "after", "kind", "row", "column", "why", "map"]


@dataclass(frozen=True)
class Fixed:
    """The outcome of ``ValidationFrame.fix``: ``data`` (a fixed copy, same index),
    ``audit`` (one row per cell changed: before, after, kind, row, column, why, map),
    ``report`` (the new validation of ``data``), ``fixed`` (rows fixed per kind) and
    ``remaining`` (the distinct codes that still fail, most frequent first)."""

    data: pd.Series | pd.DataFrame
    audit: Audit
    report: Any  # the ValidationFrame of ``data``
    fixed: pd.Series
    remaining: Any  # a CodeTable, as by_code() gives it
    #: How many rows had their code fixed (a row fixed by two kinds counts once).
    rows_fixed: int

    def __repr__(self) -> str:
        kinds = ", ".join(f"{k} {v:,}" for k, v in self.fixed.items() if v) or "nothing"
        failing = self.report.failure_cases
        still = failing["issue"].astype(object).value_counts()
        rest = ", ".join(f"{k} {v:,}" for k, v in still.items()) or "none"
        return (
            f"<Fixed {self.rows_fixed:,} of {len(self.report):,} rows ({kinds}); "
            f"{len(failing):,} rows still fail ({rest})>"
        )

    def _repr_html_(self) -> str:
        head = f"<p>{visible(repr(self))[1:-1]}</p>"
        changes = pd.DataFrame(self.audit).drop_duplicates(["column", "before", "after"])
        audit = frame_html(changes.head(20), ("before", "after"))
        marked = ("code", "display", "suggestion", "suggested_display")
        remaining = (
            frame_html(self.remaining.head(20), marked) if len(self.remaining) else "<p>none</p>"
        )
        return (
            f"<div class='workbench-fixed'>{head}<details open><summary><b>Changes</b> "
            f"(distinct)</summary>{audit}</details><details open><summary><b>Still failing"
            f"</b></summary>{remaining}</details></div>"
        )


class Audit(pd.DataFrame):
    """``Fixed.audit``: one row per cell changed. Printed and shown in HTML with the odd
    whitespace of ``before`` and ``after`` made visible (``␣male``); the data is exact."""

    @property
    def _constructor(self) -> type[Audit]:
        return Audit

    def to_string(self, *args: Any, **kwargs: Any) -> Any:
        """As ``DataFrame.to_string``, ``before`` and ``after`` with visible whitespace."""
        return frame_text(self, ("before", "after"), *args, **kwargs)

    def _repr_html_(self) -> str | None:
        return frame_html(pd.DataFrame(self).head(50), ("before", "after"))


def check_kinds(kinds: Iterable[str] | str) -> tuple[str, ...]:
    """The kinds asked for, each known (else InvalidRequestError naming the known ones)."""
    asked = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    unknown = [k for k in asked if k not in KINDS]
    if unknown:
        raise InvalidRequestError(
            f"fix() does not know the kind{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}: use some of {sorted(KINDS)} (an edit-distance "
            "guess is never applied)"
        )
    if not asked:
        raise InvalidRequestError(f"fix() needs at least one kind: some of {sorted(KINDS)}")
    return asked


def needed_kinds(before: str, found: Suggestion) -> frozenset[str] | None:
    """The kinds a suggestion takes ``before`` to ``found.code`` by, or None when it is none
    of the safe kinds (an edit-distance guess, a display, a weaker map match)."""
    if found.map is not None:
        return frozenset({"map"}) if found.equivalence in SAFE_EQUIVALENCES else None
    if found.why not in (WHITESPACE, CASE, DOTTED):
        return None
    after, squeezed = found.code, " ".join(before.split())
    kinds = {"whitespace"} if squeezed != before else set()
    if after == squeezed:
        return frozenset(kinds)
    if after.casefold() == squeezed.casefold():
        return frozenset(kinds | {"case"})
    undotted = after.replace(".", "").casefold()
    if undotted == squeezed.replace(".", "").replace(" ", "").casefold():
        same_case = after.replace(".", "") == squeezed.replace(".", "").replace(" ", "")
        return frozenset(kinds | {"dotted"} | (set() if same_case else {"case"}))
    return None


def fix_report(
    report: Any, data: pd.Series | pd.DataFrame | None, kinds: Iterable[str] | str
) -> Fixed:
    """``ValidationFrame.fix``: see there."""
    asked = frozenset(check_kinds(kinds))
    revalidate = getattr(report, "revalidate", None)
    suggester = getattr(report, "suggester", None)
    if revalidate is None or suggester is None:
        raise InvalidRequestError(
            "This report cannot fix its data: fix() needs the report validate_column returned "
            "on pandas data in this session (an unpickled or derived report has lost its "
            "value set)"
        )
    source = revalidate.source if data is None else data
    _check_data(report, source, revalidate)
    codes = report._checked_codes()
    systems = report["system"].astype(object)
    ids, first = report.groups()
    failing = ~report["result"].fillna(False).astype(bool).to_numpy()[first]
    issues = report["issue"].astype(object).to_numpy()[first]
    changes: list[Change] = []
    of_group = np.full(len(first), -1, dtype=np.int64)
    for group in np.flatnonzero(failing):
        row = int(first[group])
        system, code, issue = systems.iat[row], codes.iat[row], issues[group]
        if issue not in (*ISSUES, "unknown-system") or not isinstance(code, str):
            continue
        found = suggester(system, code, issue)
        need = None if found is None else needed_kinds(code, found)
        if found is None or need is None or not need <= asked:
            continue
        if found.system not in (None, system) and revalidate.system is None:
            continue  # another system, and no system column to say so
        of_group[group] = len(changes)
        changes.append(Change(system, found, need))
    return _apply(report, source, revalidate, codes, systems, of_group[ids], changes)


@dataclass(frozen=True)
class Change:
    """What one distinct failing (system, code) becomes: the suggestion applied, and the
    kinds it needs."""

    system: Any
    found: Suggestion
    kinds: frozenset[str]

    @property
    def kind(self) -> str:
        """The kinds, joined (``case+whitespace``)."""
        return "+".join(sorted(self.kinds))


def _check_data(report: Any, source: pd.Series | pd.DataFrame, revalidate: Any) -> None:
    """Refuse data that is not the shape validated, or whose index differs."""
    if isinstance(revalidate.source, pd.DataFrame):
        if not isinstance(source, pd.DataFrame) or revalidate.code not in source:
            raise InvalidRequestError(
                f"fix() takes a DataFrame with the column {revalidate.code!r}, as validated"
            )
        column = source[revalidate.code]
    elif isinstance(source, pd.Series):
        column = source
    else:
        raise InvalidRequestError(
            f"fix() takes a pandas Series, as validated, not {type(source).__name__}"
        )
    if not source.index.equals(report.index):
        raise InvalidRequestError(
            f"The data's index differs from the report's ({len(source):,} rows, index "
            f"{_index_head(source.index)}; the report has {len(report):,} rows, index "
            f"{_index_head(report.index)}): fix the data that was validated, or validate "
            "this data first"
        )
    if column.dtype == object and is_structured(column):
        raise InvalidRequestError(
            "fix() applies to a column of codes, not to Coding or CodeableConcept dicts"
        )


def _index_head(index: pd.Index) -> str:
    shown = ", ".join(map(repr, index[:3].tolist())) + (", …" if len(index) > 3 else "")
    return f"[{shown}]"


def _apply(
    report: Any,
    source: pd.Series | pd.DataFrame,
    revalidate: Any,
    codes: pd.Series,
    systems: pd.Series,
    which: np.ndarray,
    changes: list[Change],
) -> Fixed:
    """The fixed copy, its audit and its new validation (``which``: each row's change, or
    -1)."""
    rows = np.flatnonzero(which >= 0)
    chosen = which[rows]
    column = revalidate.code if isinstance(source, pd.DataFrame) else None
    after = np.array([c.found.code for c in changes], dtype=object).take(chosen)
    before = codes.to_numpy(dtype=object)[rows]
    fixed = _with(source.copy(deep=True), column, rows, after)
    audits = [_audit(report.index[rows], column or source.name, before, after, chosen, changes)]
    if revalidate.system is not None:
        targets = np.array([c.found.system or c.system for c in changes], dtype=object)
        old = systems.to_numpy(dtype=object)[rows]
        new = targets.take(chosen) if len(changes) else old
        moved = new != old
        if moved.any():
            fixed = _with(fixed, revalidate.system, rows[moved], new[moved])
            audits.append(
                _audit(
                    report.index[rows[moved]],
                    revalidate.system,
                    old[moved],
                    new[moved],
                    chosen[moved],
                    changes,
                )
            )
    audit = Audit(pd.concat(audits, ignore_index=True) if len(audits) > 1 else audits[0])
    again = revalidate.run(fixed)
    counts = pd.Series(0, index=list(KINDS), dtype=np.int64, name="rows")
    for i, n in zip(*np.unique(chosen, return_counts=True), strict=True):
        for kind in changes[int(i)].kinds:
            counts[kind] += int(n)
    remaining = again.by_code(failures_only=True, suggest_limit=50)
    return Fixed(fixed, audit, again, counts, remaining, len(rows))


def _audit(
    rows: pd.Index,
    column: Any,
    before: np.ndarray,
    after: np.ndarray,
    chosen: np.ndarray,
    changes: list[Change],
) -> Audit:
    """One audit row per cell changed (the per-change texts taken, not built per row)."""

    def per_row(values: list[Any]) -> np.ndarray:
        return np.array(values, dtype=object).take(chosen) if len(changes) else chosen

    return Audit(
        {
            "row": rows.to_numpy(dtype=object),
            "column": np.full(len(rows), column, dtype=object),
            "before": before,
            "after": after,
            "kind": per_row([c.kind for c in changes]),
            "why": per_row([c.found.why for c in changes]),
            "map": per_row([c.found.map for c in changes]),
        },
        columns=AUDIT,
    )


def _with(data: Any, column: Any, rows: np.ndarray, values: np.ndarray) -> Any:
    """``data`` (a copy: a Series when ``column`` is None, else a DataFrame changed in place)
    with ``values`` at the row positions of its column, keeping a string or categorical dtype
    where it can hold them."""
    if not len(rows):
        return data
    target = data if column is None else data[column]
    dtype = target.dtype
    changed = target.astype(object)
    changed.iloc[rows] = values
    if isinstance(dtype, pd.CategoricalDtype):
        restored = changed.astype("category")
    else:
        try:
            restored = changed.astype(dtype)
        except (TypeError, ValueError):
            restored = changed
    if column is None:
        return restored
    data[column] = restored
    return data
