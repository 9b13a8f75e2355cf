"""Why a code is not a member of a value set, as the issues of its ``ValidationResult``.

Whenever a (system, version, code) is not a member, the result carries an error
``not-in-vs`` at the code beside its root cause (issue 22, d1): ``invalid-code`` for a code
its code system does not have, ``code-rule`` for an abstract code refused or an inactive
code where only active ones count (with a ``code-comment`` warning at the coding, d4),
``not-found`` for a code system nobody knows, ``invalid-data`` for a system that is a value
set or a relative reference, ``cannot-infer`` for a system that cannot be inferred.
Single validation and bulk validation (``non_members``) say the same words.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np

from workbench.terminology.provider import CodeSystemProvider, Described
from workbench.terminology.result import Issue, ValidationResult, failure

#: A URI with a scheme (an absolute reference); anything else is relative.
_ABSOLUTE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def not_in_vs_text(system: str | None, code: str, where: str) -> str:
    """The text of the ``not-in-vs`` issue (``where`` names the value set)."""
    return (
        f"The code {system}#{code} is not in {where}"
        if system
        else (f"The code '{code}' is not in {where}")
    )


def not_in_vs(system: str | None, code: str, where: str) -> Issue:
    """The ``not-in-vs`` error at the code."""
    return Issue("error", "not-in-vs", not_in_vs_text(system, code, where), "not-in-vs", "code")


def with_not_in_vs(result: ValidationResult, where: str) -> ValidationResult:
    """A failed result about a code that is no member, with its ``not-in-vs`` error after
    the errors it has (once), and the message of every error."""
    if result.result or any(i.code == "not-in-vs" for i in result.issues):
        return result
    errors = [i for i in result.issues if i.severity == "error"]
    rest = [i for i in result.issues if i.severity != "error"]
    added = not_in_vs(result.system, str(result.code), where)
    issues = (*errors, added, *rest)
    message = "; ".join(i.text for i in issues if i.severity == "error")
    return dataclasses.replace(result, issues=issues, message=message)


def not_present(system: str, code: str, version: str | None) -> ValidationResult:
    """A code of a code system loaded only with ``content: not-present`` (its definition,
    without its codes, as FHIR packages ship SNOMED CT): answered as for a code system that
    is not loaded (x-caused-by-unknown-system), saying how to load its codes.

    >>> r = not_present("http://snomed.info/sct", "22298006", None)
    >>> r.result, r.issue, r.unknown_systems
    (False, 'unknown-system', ('http://snomed.info/sct',))
    """
    label = f"{system}|{version}" if version else system
    text = (
        f"The CodeSystem '{label}' is loaded without its codes (content 'not-present'), so "
        f"the code '{code}' cannot be validated: load the code system's release "
        "(Workbench.load_release, or --release on the command line)"
    )
    return failure(
        "unknown-system", text, code=code, system=system, version=version, unknown=[label]
    )


def unknown_system(
    system: str, code: str, version: str | None, where: str, *, drawn_on: bool, is_valueset: bool
) -> ValidationResult:
    """A code system that is not loaded. When the value set draws on it the code cannot be
    checked (x-caused-by-unknown-system); otherwise the code is no member either
    (x-unknown-system, ``not-in-vs``), and a system that is a value set or a relative
    reference is said to be no code system (``invalid-data``)."""
    label = f"{system}|{version}" if version else system
    text = (
        f"A definition for CodeSystem '{label}' could not be found, so the code '{code}' "
        "cannot be validated"
    )
    if drawn_on:
        return failure(
            "unknown-system", text, code=code, system=system, version=version, unknown=[label]
        )
    first: list[Issue] = []
    if is_valueset:
        first.append(
            Issue(
                "error",
                "invalid-data",
                f"The system '{system}' is a value set, not a code system: a Coding.system "
                "must be a code system",
                "unknown-system",
                "system",
            )
        )
    elif not _ABSOLUTE.match(system):
        first.append(
            Issue(
                "error",
                "invalid-data",
                f"The system '{system}' is a relative reference: a Coding.system must be an "
                "absolute URI",
                "unknown-system",
                "system",
            )
        )
    if not is_valueset:
        first.append(Issue("error", "not-found", text, "unknown-system", "system"))
    issues = (*first, not_in_vs(system, code, where))
    return ValidationResult(
        False,
        "; ".join(i.text for i in issues),
        None,
        code,
        system,
        version,
        "unknown-system",
        issues,
        outside_systems=() if is_valueset else (label,),
    )


def non_member(
    reason: str,
    cause: str,
    cs: CodeSystemProvider,
    code: str,
    system: str,
    display: str | None,
    where: str,
    *,
    membership_only: bool = False,
) -> ValidationResult:
    """The failure for a code of a known system that is not in the value set: its cause
    (none for a plain non-member, and none but membership under ``membership_only``), the
    ``not-in-vs`` error, and for an inactive code the warning at the coding (d4)."""
    outside = not_in_vs(system, code, where)
    issues: list[Issue] = []
    if reason == "unknown-code" and not membership_only:
        issues.append(Issue("error", "invalid-code", cause, reason, "code"))
    elif reason == "inactive":
        issues.append(Issue("error", "code-rule", cause, reason, "code"))
    issues.append(outside)
    inactive, status = None, None
    if reason == "inactive":
        concept = cs.get(code)
        status = concept.status if concept is not None and concept.status else "inactive"
        inactive = True
        text = f"The code {system}#{code} is {status}; review its use"
        issues.append(Issue("warning", "code-comment", text, reason, ""))
    return ValidationResult(
        False,
        "; ".join(i.text for i in issues if i.severity == "error"),
        display,
        code,
        system,
        cs.version,
        reason,
        tuple(issues),
        inactive=inactive,
        status=status,
    )


def inactive_text(system: str, code: str, where: str) -> str:
    """The ``code-rule`` text of an inactive code where only active codes count."""
    return f"The code {system}#{code} is valid but not active, and {where} excludes inactive codes"


def non_members(
    where: str,
    cs: CodeSystemProvider,
    system: str,
    codes: Sequence[str],
    inactive_allowed: bool,
) -> tuple[list[str], list[str], list[str | None]]:
    """Why codes of a known code system are not in a value set: reasons, messages, displays.

    ``unknown-code`` when the code system does not have the code; ``inactive`` when it is
    inactive and the value set excludes inactive codes; else ``not-in-vs``. The messages
    are those of ``validate_code`` (the cause, then ``not-in-vs``). Single validation and
    bulk validation both use this function, so they always say the same.
    """
    reasons, causes, displays = why_not_members(where, cs, system, codes, inactive_allowed)
    return reasons, non_member_messages(reasons, causes, codes, system, where), displays


def non_member_messages(
    reasons: Sequence[str], causes: Sequence[str], codes: Sequence[str], system: str, where: str
) -> list[str]:
    """The messages ``non_member`` gives (without ``membership_only``): the cause, then
    ``not-in-vs``, one per code."""
    return [
        cause if reason == "not-in-vs" else f"{cause}; {not_in_vs_text(system, code, where)}"
        for reason, cause, code in zip(reasons, causes, codes, strict=True)
    ]


def why_not_members(
    where: str,
    cs: CodeSystemProvider,
    system: str,
    codes: Sequence[str],
    inactive_allowed: bool,
) -> tuple[list[str], list[str], list[str | None]]:
    """``non_members`` with the text of each cause alone (``not-in-vs`` for a plain
    non-member)."""
    label = f"{cs.url}|{cs.version}" if cs.version else cs.url
    described = cs.describe(codes) if len(codes) >= 256 else None
    if described is not None:
        return _causes_at_once(cs, described, where, label, system, codes, inactive_allowed)
    reasons: list[str] = []
    causes: list[str] = []
    displays: list[str | None] = []
    concepts = cs.concepts
    for code in codes:
        concept = concepts.get(code) or (None if cs.case_sensitive else cs.get(code))
        if concept is None:
            reasons.append("unknown-code")
            causes.append(unknown_code_text(cs, label, code))
            displays.append(None)
        elif concept.inactive and not inactive_allowed:
            reasons.append("inactive")
            causes.append(inactive_text(system, code, where))
            displays.append(concept.display)
        else:
            reasons.append("not-in-vs")
            causes.append(not_in_vs_text(system, code, where))
            displays.append(concept.display)
    return reasons, causes, displays


def unknown_code_text(cs: CodeSystemProvider, label: str, code: str) -> str:
    """The message of a code the code system does not have, with why when it can tell."""
    text = f"Unknown code '{code}' in the CodeSystem '{label}'"
    detail = cs.why_unknown(code)
    if detail:
        return f"{text}: {detail}"
    if code != code.strip():
        text += " (the code has leading or trailing whitespace)"
    if cs.compositional and not cs.expressions:
        text += (
            " (the code system is compositional, but this server does not know its "
            "grammar, so an expression cannot be checked)"
        )
    return text


def _causes_at_once(
    cs: CodeSystemProvider,
    described: Described,
    where: str,
    label: str,
    system: str,
    codes: Sequence[str],
    inactive_allowed: bool,
) -> tuple[list[str], list[str], list[str | None]]:
    """``why_not_members`` for a code system that answers for many codes at once (a release
    store): the same reasons and texts, built column-wise (only the unknown codes one by
    one, for why they are unknown)."""
    known, inactive, shown = described
    stale = inactive & known & (not inactive_allowed)
    reasons = np.where(known, np.where(stale, "inactive", "not-in-vs"), "unknown-code")
    causes = [
        (inactive_text(system, code, where) if old else not_in_vs_text(system, code, where))
        if found
        else unknown_code_text(cs, label, code)
        for code, found, old in zip(codes, known.tolist(), stale.tolist(), strict=True)
    ]
    return reasons.astype(object).tolist(), causes, list(shown)
