"""A CodeableConcept's validation from the validations of its codings."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.terminology.result import Issue, ValidationResult
from workbench.terminology.result import coding_label as _fmt


def located(result: ValidationResult, path: str) -> ValidationResult:
    """The result with its issues placed at ``path`` (``Coding``, ``CodeableConcept…``)."""
    if not result.issues or all(i.path == path for i in result.issues):
        return result  # already there (a valid code, or a plain code input): no copy to make
    return dataclasses.replace(result, issues=tuple(i.at(path) for i in result.issues))


def combine_codings(
    results: Sequence[ValidationResult], where: str | None = None
) -> ValidationResult:
    """Combine per-coding results of a CodeableConcept: valid when any coding is valid and
    no coding has a code its (known) code system does not have.

    Every coding's issues are kept at ``CodeableConcept.coding[i]``; a coding's own
    not-in-vs becomes the information ``this-code-not-in-vs``. In a valid CodeableConcept
    the other codings' errors become information, but an unknown code stays an error and
    makes the result false (a3). In an invalid one where no coding is a member, a first
    error without expression says that no coding is valid (``where`` names the value set),
    and when no code of it is known at all (unknown codes or systems) its Parameters name
    no coding (``named``: no code, system, version or display, as tx.fhir.org answers); a
    coding that is a member and fails for another reason (its display, its version) adds
    none (d2, d3).
    """
    placed = [located(r, f"CodeableConcept.coding[{i}]") for i, r in enumerate(results)]
    valid = [r for r in placed if r.result]
    unknown = tuple(u for r in placed for u in r.unknown_systems)
    outside = tuple(u for r in placed for u in r.outside_systems)
    failed = [(i, r) for i, r in enumerate(placed, 1) if not r.result]
    notes = "; ".join(f"coding {i} ({_fmt(r.system, r.code)}): {r.message}" for i, r in failed)
    if valid:
        return _one_valid(placed, valid[0], failed, notes, unknown, outside)
    # the outputs come from the first coding that is a member (failing for another reason)
    first = next((r for r in placed if not _not_member(r)), placed[0])
    issues = tuple(_as_note(i) for r in placed for i in r.issues)
    general = (len(placed) > 1 or where) and all(_not_member(r) for r in placed)
    if general:
        text = f"No valid coding was found for {where or 'the value set'}"
        issues = (Issue("error", "not-in-vs", text, first.issue or "not-in-vs", None), *issues)
    message = f"None of the {len(placed)} codings is valid: {notes}" if len(placed) > 1 else None
    if len(placed) == 1:  # the overall error, then the coding's own words
        message = "; ".join(t for t in (issues[0].text if general else None, first.message) if t)
    return dataclasses.replace(
        first,
        named=not (general and all(r.issue in _UNKNOWN for r in placed)),
        message=message,
        issues=issues,
        unknown_systems=unknown,
        outside_systems=outside,
    )


#: The failures of a coding whose code is not known at all.
_UNKNOWN = frozenset({"unknown-code", "unknown-system"})


def _one_valid(
    placed: list[ValidationResult],
    best: ValidationResult,
    failed: list[tuple[int, ValidationResult]],
    notes: str,
    unknown: tuple[str, ...],
    outside: tuple[str, ...],
) -> ValidationResult:
    """A CodeableConcept with a valid coding (``best``): the other codings' errors become
    information, but a code unknown to its known code system stays an error (a3)."""
    if len(placed) == 1:
        return best
    index = placed.index(best) + 1
    message = best.message
    if failed:
        message = f"Coding {index} ({_fmt(best.system, best.code)}) is valid"
        if best.message:
            message += f" ({best.message})"
        message += f"; {notes}"
    others = tuple(
        i if i.severity == "error" and i.reason == "unknown-code" else _as_note(i, errors=True)
        for r in placed
        if r is not best
        for i in r.issues
    )
    issues = best.issues + others
    errors = [i for i in others if i.severity == "error"]
    if errors:  # an unknown code in a known code system: not valid (a3)
        message = "; ".join(i.text for i in (*best.issues, *errors) if i.severity == "error")
    return dataclasses.replace(
        best,
        issue=errors[0].reason if errors else best.issue,
        result=not errors,
        message=message,
        issues=issues,
        unknown_systems=unknown,
        outside_systems=() if not errors else outside,  # a valid one: they caused nothing
    )


def _not_member(result: ValidationResult) -> bool:
    """True when a failed coding is no member of the value set (it has a not-in-vs)."""
    return any(i.code == "not-in-vs" for i in result.issues)


def _as_note(issue: Issue, errors: bool = False) -> Issue:
    """A coding's not-in-vs as ``this-code-not-in-vs`` information; with ``errors``, its
    other errors as information too."""
    if issue.code == "not-in-vs":
        return dataclasses.replace(issue, severity="information", code="this-code-not-in-vs")
    if errors and issue.severity == "error":
        return dataclasses.replace(issue, severity="information")
    return issue


def coding_parts(coding: Mapping[str, Any]) -> dict[str, str | None]:
    """Return the keyword arguments of one Coding dict for ``validate_in_valueset``."""

    def get(key: str) -> str | None:
        value = coding.get(key)
        return None if value is None else str(value)

    return {
        "code": get("code"),
        "system": get("system"),
        "version": get("version"),
        "display": get("display"),
    }
