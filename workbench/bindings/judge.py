"""Deciding each row of a binding check: its codes answered by the engine's own decision
(``CodingCheck.settled``, what ``validate_code`` and bulk validation run, through
``bulk.checker.make_checker``), each distinct key once, then the HL7 validator's rules
for the binding's strength.

- required: the code must be in the value set; a CodeableConcept needs one coding in it
  (its other codings are then information);
- extensible: a coding of a system the value set draws on, or a code its system does not
  have, must be in the value set (an error); a concept with no coding in the value set is
  a warning, an error when it has neither text nor a coding; ``maxValueSet`` bounds it;
- preferred and example: information only (``maxValueSet`` still bounds them);
- a wrong display is its own issue (the engine's severity);
- a value set or code system that is not loaded leaves the row unchecked (``result``
  missing, a warning that names what to load).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from workbench.bulk.checker import Checker, make_checker
from workbench.errors import (
    ImportedValueSetNotFoundError,
    ValueSetNotFoundError,
    WorkbenchError,
)
from workbench.terminology.engine import Terminology
from workbench.terminology.result import ValidationResult

_LOAD = "load the package or release that defines it"


class Verdict(NamedTuple):
    """The decision on one row: ``result`` (None: not checked), the ``issue`` (a
    tx-issue-type code, or ``structure`` / ``required``), ``severity`` and ``message``."""

    result: bool | None
    issue: str | None = None
    severity: str | None = None
    message: str | None = None


class Answers:
    """The engine's answers for (value set, system, code, display, version) keys, each
    asked once; a value set that cannot be used is remembered with its reason."""

    def __init__(self, engine: Terminology) -> None:
        self.engine = engine
        self._checkers: dict[str, Checker | str] = {}
        self._answers: dict[tuple[Any, ...], ValidationResult] = {}

    def checker(self, valueset: str) -> Checker | str:
        """The checker of ``valueset``, or the text of why there is none."""
        found = self._checkers.get(valueset)
        if found is None:
            try:
                found = make_checker(self.engine, valueset, None)
            except (ValueSetNotFoundError, ImportedValueSetNotFoundError) as exc:
                found = f"{exc}: {_LOAD}"
            except WorkbenchError as exc:  # (a value set that cannot be used: its reason)
                found = str(exc)
            self._checkers[valueset] = found
        return found

    def answer(
        self, valueset: str, system: str | None, code: str, display: str | None,
        version: str | None, coding: bool,
    ) -> ValidationResult | str:  # fmt: skip
        """The engine's answer for one coding, or why it cannot be had."""
        checker = self.checker(valueset)
        if isinstance(checker, str):
            return checker
        key = (valueset, system, code, display, version, coding)
        found = self._answers.get(key)
        if found is None:
            parts = {"code": code, "system": system, "version": version, "display": display}
            try:
                found = checker.coding_check.settled(parts, "", coding=coding)
            except WorkbenchError as exc:
                return str(exc)
            self._answers[key] = found
        return found

    def systems(self, valueset: str) -> frozenset[str]:
        """The code systems ``valueset`` draws on (none when it cannot be used)."""
        checker = self.checker(valueset)
        return frozenset() if isinstance(checker, str) else frozenset(checker.valueset.systems())


def judge(rows: Sequence[tuple[Any, ...]], answers: Answers) -> list[Verdict]:
    """One verdict per row of ``walk.FIELDS``, in order. A verdict depends on the row's
    binding, coding, kind and whether its concept is satisfied by another coding, never on
    where it is: it is decided once per distinct such key."""
    satisfied = {row[12] for row in rows
                 if row[12] >= 0 and _is_member(_membership(row, answers))}  # fmt: skip
    decided: dict[tuple[Any, ...], Verdict] = {}
    out: list[Verdict] = []
    for row in rows:
        key = (*row[5:12], row[12] != -1, row[12] in satisfied, row[13], row[14])
        verdict = decided.get(key)
        if verdict is None:
            verdict = decided[key] = _verdict(row, _membership(row, answers), answers,
                                              row[12] in satisfied)  # fmt: skip
        out.append(verdict)
    return out


def _is_member(answer: Any) -> bool:
    return isinstance(answer, ValidationResult) and answer.result


def _membership(row: tuple[Any, ...], answers: Answers) -> ValidationResult | str | None:
    """The membership answer of a row (no display asked), None for a row without a code."""
    valueset, system, code, version, problem = row[6], row[8], row[9], row[11], row[14]
    if problem is not None or code is None:
        return None
    if valueset is None:
        return "the binding names no value set"
    return answers.answer(valueset, system, code, None, version, _coded(row))


def _coded(row: tuple[Any, ...]) -> bool:
    """Whether the row's value is a Coding or a Quantity (concept -2, or a CodeableConcept's
    coding: a system is then required), not a plain ``code`` (concept -1)."""
    return bool(row[12] != -1)


def _verdict(
    row: tuple[Any, ...], member: ValidationResult | str | None, answers: Answers,
    satisfied: bool,
) -> Verdict:  # fmt: skip
    strength, valueset, system = row[5], row[6], row[8]
    if row[14] is not None:
        return Verdict(False, "structure", "error", row[14])
    if isinstance(member, str):
        return Verdict(None, "not-found", "warning", member)
    if member is None:
        return _no_code(strength, valueset, text=row[13])
    if member.unknown_systems:
        unknown = f"{member.message} ({', '.join(member.unknown_systems)}: {_LOAD})"
        return Verdict(None, "not-found", "warning", unknown)
    if member.result:
        return _display(row, answers) or Verdict(True)
    issue, message = member.issue or "not-in-vs", member.message
    if strength == "required":
        return Verdict(False, issue, "information" if satisfied else "error", message)
    bounded = _outside_max(row, answers)
    if bounded is not None:
        return bounded
    if strength == "extensible":
        drawn = system is not None and system in answers.systems(valueset)
        if drawn or issue == "unknown-code":
            return Verdict(False, issue, "error", message)
        return Verdict(False, issue, "information" if satisfied else "warning", message)
    return Verdict(False, issue, "information", message)


def _no_code(strength: str, valueset: str | None, *, text: bool) -> Verdict:
    if strength == "required":
        message = f"No code provided, and a code is required from the value set {valueset}"
        return Verdict(False, "required", "error", message)
    if strength == "extensible" and not text:
        message = f"No code or text provided, and a code should come from the value set {valueset}"
        return Verdict(False, "required", "error", message)
    return Verdict(None, "required", "information", f"No code provided (text only) for {valueset}")


def _display(row: tuple[Any, ...], answers: Answers) -> Verdict | None:
    display = row[10]
    if display is None:
        return None
    found = answers.answer(row[6], row[8], row[9], display, row[11], _coded(row))
    if isinstance(found, str) or found.result:
        return None
    wrong = next((i for i in found.issues if i.code == "invalid-display"), None)
    if wrong is None:
        return None
    return Verdict(False, "invalid-display", wrong.severity, wrong.text)


def _outside_max(row: tuple[Any, ...], answers: Answers) -> Verdict | None:
    maximum = row[7]
    if maximum is None or row[9] is None:
        return None
    found = answers.answer(maximum, row[8], row[9], None, row[11], _coded(row))
    if isinstance(found, str):
        return Verdict(None, "not-found", "warning", found)
    if found.result:
        return None
    message = f"{found.message} (the maxValueSet {maximum} bounds the binding)"
    return Verdict(False, found.issue, "error", message)
