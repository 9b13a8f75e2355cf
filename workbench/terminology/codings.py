"""A CodeableConcept's validation from the validations of its codings."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.terminology.result import Issue, ValidationResult
from workbench.terminology.result import coding_label as _fmt


def located(result: ValidationResult, path: str) -> ValidationResult:
    """The result with its issues placed at ``path`` (``Coding``, ``CodeableConcept…``)."""
    if all(i.path == path for i in result.issues):
        return result  # already there (a valid code, or a plain code input): no copy to make
    return dataclasses.replace(result, issues=tuple(i.at(path) for i in result.issues))


def combine_codings(
    results: Sequence[ValidationResult], where: str | None = None
) -> ValidationResult:
    """Combine per-coding results of a CodeableConcept: valid when any coding is valid.

    Every coding's issues are kept at ``CodeableConcept.coding[i]``. In a valid
    CodeableConcept the other codings' errors become information; in an invalid one a
    first error says that no coding is valid (``where`` names the value set), and a
    coding's own not-in-vs becomes ``this-code-not-in-vs``.
    """
    placed = [located(r, f"CodeableConcept.coding[{i}]") for i, r in enumerate(results)]
    valid = [r for r in placed if r.result]
    unknown = tuple(u for r in placed for u in r.unknown_systems)
    failed = [(i, r) for i, r in enumerate(placed, 1) if not r.result]
    notes = "; ".join(f"coding {i} ({_fmt(r.system, r.code)}): {r.message}" for i, r in failed)
    if valid:
        best = valid[0]
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
            dataclasses.replace(i, severity="information", code=_this_code(i.code))
            if i.severity == "error"
            else i
            for r in placed
            if r is not best
            for i in r.issues
        )
        return dataclasses.replace(
            best, message=message, issues=best.issues + others, unknown_systems=unknown
        )
    first = placed[0]
    issues = tuple(
        dataclasses.replace(i, severity="information", code="this-code-not-in-vs")
        if i.code == "not-in-vs"
        else i
        for r in placed
        for i in r.issues
    )
    if len(placed) > 1 or where:
        text = f"No valid coding was found for {where or 'the value set'}"
        general = Issue("error", "not-in-vs", text, first.issue or "not-in-vs", "", "")
        issues = (dataclasses.replace(general, path="CodeableConcept"), *issues)
    message = (
        f"None of the {len(placed)} codings is valid: {notes}" if len(placed) > 1 else first.message
    )
    return dataclasses.replace(first, message=message, issues=issues, unknown_systems=unknown)


def _this_code(tx_code: str) -> str:
    return "this-code-not-in-vs" if tx_code == "not-in-vs" else tx_code


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
