"""Code validation against a value set or a code system, as result objects.

A code that fails is a ``ValidationResult`` with ``result=False``, a message and a stable
``reason``; it never raises. The reasons (also the ``issue`` column of bulk validation):

========================  =========  ===================================================
reason                    result     meaning
========================  =========  ===================================================
None                      True       valid
``inactive``              True       valid, but the concept is inactive (a warning)
``not-in-vs``             False      a real code of a known system, not in the value set
``unknown-code``          False      the code is not in its code system
``unknown-system``        False      the system is not loaded, missing and not inferable
``invalid-display``       False      the display is none of the concept's displays
``abstract``              False      an abstract code, and ``abstract`` was not allowed
``missing``               False      no code at all
========================  =========  ===================================================
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import CodeSystemNotFoundError, IncompleteCodeSystemError
from workbench.terminology.codesystem import CodeSystemIndex, Concept
from workbench.terminology.compose import CompiledValueSet

REASONS = (
    "not-in-vs",
    "unknown-code",
    "unknown-system",
    "invalid-display",
    "abstract",
    "inactive",
    "missing",
)
# FHIR tx-issue-type codes (http://hl7.org/fhir/tools/CodeSystem/tx-issue-type) per reason.
_TX_TYPE = {
    "not-in-vs": "not-in-vs",
    "unknown-code": "invalid-code",
    "unknown-system": "not-found",
    "invalid-display": "invalid-display",
    "abstract": "code-rule",
    "inactive": "code-comment",
    "missing": "invalid-code",
}


@dataclass(frozen=True, slots=True)
class Issue:
    """One finding of a validation: severity, tx-issue-type code, text and reason."""

    severity: str
    code: str
    text: str
    reason: str


@dataclass(frozen=True, slots=True)
class ValidationResult:
    """The answer of ``validate_code``: result, message, the valid display, and the issues.

    >>> r = ValidationResult(True, None, "Male", code="male", system="http://x")
    >>> bool(r), r.display
    (True, 'Male')
    """

    result: bool
    message: str | None
    display: str | None
    code: str | None = None
    system: str | None = None
    version: str | None = None
    reason: str | None = None
    issues: tuple[Issue, ...] = ()

    def __bool__(self) -> bool:
        return self.result

    def to_parameters(self) -> dict[str, Any]:
        """Return the FHIR Parameters of $validate-code: result, message, display."""
        params: list[dict[str, Any]] = [{"name": "result", "valueBoolean": self.result}]
        if self.message:
            params.append({"name": "message", "valueString": self.message})
        if self.display is not None:
            params.append({"name": "display", "valueString": self.display})
        return {"resourceType": "Parameters", "parameter": params}

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.result else "#cf222e"
        word = "valid" if self.result else "invalid"
        if self.result and self.issues:
            colour, word = "#9a6700", "valid, with a warning"
        rows = "".join(
            f"<tr><th style='text-align:left'>{k}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in (
                ("system", self.system),
                ("code", self.code),
                ("display", self.display),
                ("reason", self.reason),
                ("message", self.message),
            )
            if v is not None
        )
        return f"<div><b style='color:{colour}'>&#9679; {word}</b><table>{rows}</table></div>"


def failure(
    reason: str,
    text: str,
    *,
    code: str | None,
    system: str | None,
    version: str | None = None,
    display: str | None = None,
) -> ValidationResult:
    issue = Issue("error", _TX_TYPE[reason], text, reason)
    return ValidationResult(False, text, display, code, system, version, reason, (issue,))


def _fmt(system: str | None, code: str | None) -> str:
    return f"{system}#{code}" if system else f"'{code}'"


def display_problem(
    given: str | None, concept: Concept | None, override: str | None
) -> tuple[str, str | None] | None:
    """Return (message, the valid display) when ``given`` is not a valid display, else None.

    Valid displays: the value set's display, the concept's display, and every designation
    in any language.
    """
    if given is None:
        return None
    valid = [override] if override else []
    if concept is not None:
        valid += [d for d in concept.displays() if d not in valid]
    if not valid or given in valid:
        return None
    preferred = valid[0]
    if len(valid) == 1:
        choices = f"Valid display is '{preferred}'"
    else:
        shown = ", ".join(f"'{v}'" for v in valid[:10])
        choices = f"Valid display is one of {len(valid)} choices: {shown}"
    return choices, preferred


def validate_in_valueset(
    vs: CompiledValueSet,
    codesystem: Callable[[str, str | None], CodeSystemIndex | None],
    *,
    code: str | None,
    system: str | None,
    version: str | None = None,
    display: str | None = None,
    abstract: bool = False,
) -> ValidationResult:
    """Validate one coding against a compiled value set (see the module docstring)."""
    if code is None or code == "":
        return failure("missing", "No code was given", code=code, system=system)
    if not system:
        systems = vs.systems()
        if len(systems) != 1:
            listed = ", ".join(systems) or "none"
            return failure(
                "unknown-system",
                f"The code '{code}' has no system, and it cannot be inferred: the value set "
                f"{vs.canonical} draws on {len(systems)} code systems ({listed})",
                code=code,
                system=system,
            )
        system = systems[0]
    where = f"the value set {vs.canonical}"
    if version is not None and codesystem(system, version) is None:
        return failure(
            "unknown-system",
            f"A definition for CodeSystem '{system}|{version}' "
            f"could not be found, so the code '{code}' cannot be validated",
            code=code,
            system=system,
            version=version,
        )
    try:
        match = vs.contains(system, code)
    except (CodeSystemNotFoundError, IncompleteCodeSystemError) as exc:
        return failure(
            "unknown-system",
            f"{exc.text}, so the code {_fmt(system, code)} cannot be checked against {where}",
            code=code,
            system=system,
            version=version,
        )
    found, override = match.found, match.display
    if version is not None:
        cs = codesystem(system, version)
        concept = cs.get(code) if cs is not None else None
    else:
        cs = match.cs or codesystem(system, None)
        concept = match.concept or (cs.get(code) if cs is not None else None)
    if cs is None and not found:
        label = f"{system}|{version}" if version else system
        return failure(
            "unknown-system",
            f"A definition for CodeSystem '{label}' could not be "
            f"found, so the code '{code}' cannot be validated",
            code=code,
            system=system,
            version=version,
        )
    if cs is not None and not found and _is_expression(cs, code):
        return _check_expression(cs, code, where, vs)
    if cs is not None and not found:
        reasons, texts, shown = non_members(where, cs, system, [code], vs.inactive_allowed)
        return failure(
            reasons[0], texts[0], code=code, system=system, version=cs.version, display=shown[0]
        )
    version = cs.version if cs is not None else version
    return _check_concept(
        concept,
        override,
        code=code,
        system=system,
        version=version,
        display=display,
        abstract=abstract,
        where=where,
    )


def non_members(
    where: str,
    cs: CodeSystemIndex,
    system: str,
    codes: Sequence[str],
    inactive_allowed: bool,
) -> tuple[list[str], list[str], list[str | None]]:
    """Why codes of a known code system are not in a value set: reasons, messages, displays.

    ``unknown-code`` when the code system does not have the code; ``inactive`` when it is
    inactive and the value set excludes inactive codes; else ``not-in-vs``. Single
    validation and bulk validation both use this function, so they always say the same.
    """
    label = f"{cs.url}|{cs.version}" if cs.version else cs.url
    reasons: list[str] = []
    messages: list[str] = []
    displays: list[str | None] = []
    describe = getattr(cs, "describe", None)
    if describe is not None and len(codes) >= 256:
        return _non_members_at_once(describe, where, label, system, codes, inactive_allowed)
    concepts = cs.concepts
    for code in codes:
        concept = concepts.get(code) or (None if cs.case_sensitive else cs.get(code))
        if concept is None:
            text = f"Unknown code '{code}' in the CodeSystem '{label}'"
            if code != code.strip():
                text += " (the code has leading or trailing whitespace)"
            reasons.append("unknown-code")
            messages.append(text)
            displays.append(None)
        elif concept.inactive and not inactive_allowed:
            reasons.append("inactive")
            messages.append(
                f"The code {system}#{code} is inactive, and {where} excludes inactive codes"
            )
            displays.append(concept.display)
        else:
            reasons.append("not-in-vs")
            messages.append(f"The code {system}#{code} is not in {where}")
            displays.append(concept.display)
    return reasons, messages, displays


def _non_members_at_once(
    describe: Callable[[Sequence[str]], tuple[Any, Any, list[str | None]]],
    where: str,
    label: str,
    system: str,
    codes: Sequence[str],
    inactive_allowed: bool,
) -> tuple[list[str], list[str], list[str | None]]:
    """``non_members`` for a code system that answers for many codes at once (a release
    store): the same reasons and messages, built column-wise."""
    known, inactive, shown = describe(codes)
    stale = inactive & known & (not inactive_allowed)
    reasons = np.where(known, np.where(stale, "inactive", "not-in-vs"), "unknown-code")
    outside = f" is not in {where}"
    excluded = f" is inactive, and {where} excludes inactive codes"
    unknown = f"' in the CodeSystem '{label}'"
    padded = " (the code has leading or trailing whitespace)"
    messages = [
        (f"The code {system}#{code}{excluded if old else outside}")
        if found
        else (f"Unknown code '{code}{unknown}" + (padded if code != code.strip() else ""))
        for code, found, old in zip(codes, known.tolist(), stale.tolist(), strict=True)
    ]
    return reasons.astype(object).tolist(), messages, list(shown)


def validate_in_codesystem(
    cs: CodeSystemIndex, *, code: str | None, display: str | None = None, abstract: bool = True
) -> ValidationResult:
    """Validate a code against a whole code system (CodeSystem/$validate-code)."""
    if code is None or code == "":
        return failure("missing", "No code was given", code=code, system=cs.url)
    if _is_expression(cs, code):
        return _check_expression(cs, code, f"the CodeSystem {cs.url}")
    concept = cs.get(code)
    if concept is None:
        label = f"{cs.url}|{cs.version}" if cs.version else cs.url
        return failure(
            "unknown-code",
            f"Unknown code '{code}' in the CodeSystem '{label}'",
            code=code,
            system=cs.url,
            version=cs.version,
        )
    return _check_concept(
        concept,
        None,
        code=code,
        system=cs.url,
        version=cs.version,
        display=display,
        abstract=abstract,
        where=f"the CodeSystem {cs.url}",
    )


def _is_expression(cs: CodeSystemIndex, code: str) -> bool:
    """A compositional code system (SNOMED CT) takes post-coordinated expressions as codes."""
    check = getattr(cs, "is_expression", None)
    return bool(check is not None and check(code))


def _check_expression(
    cs: Any, code: str, where: str, vs: CompiledValueSet | None = None
) -> ValidationResult:
    """Validate a post-coordinated expression: well-formed (else ExpressionSyntaxError),
    every concept known and active, the concept model respected; in a value set, every
    focus concept must be a member."""
    ok, problems, focus = cs.validate_expression(code)
    if not ok:
        text = f"The expression {code!r} is not valid in {cs.url}: {problems}"
        return failure("unknown-code", text, code=code, system=cs.url, version=cs.version)
    if vs is not None:
        outside = [f for f in focus if not vs.contains(cs.url, f).found]
        if outside:
            text = (
                f"The expression {code!r} is not in {where}: its focus concept(s) "
                f"{', '.join(outside)} are not members"
            )
            return failure("not-in-vs", text, code=code, system=cs.url, version=cs.version)
    return ValidationResult(True, None, None, code, cs.url, cs.version)


def _check_concept(
    concept: Concept | None,
    override: str | None,
    *,
    code: str,
    system: str,
    version: str | None,
    display: str | None,
    abstract: bool,
    where: str,
) -> ValidationResult:
    preferred = override or (concept.display if concept is not None else None)
    real_code = concept.code if concept is not None else code
    if concept is not None and concept.abstract and not abstract:
        return failure(
            "abstract",
            f"The code {_fmt(system, real_code)} is abstract, and abstract "
            f"codes are not allowed here (set abstract=true to allow them)",
            code=real_code,
            system=system,
            version=version,
            display=preferred,
        )
    issues: list[Issue] = []
    problem = display_problem(display, concept, override)
    if problem is not None:
        text = f"Wrong display '{display}' for {_fmt(system, real_code)}. {problem[0]}"
        issues.append(Issue("error", _TX_TYPE["invalid-display"], text, "invalid-display"))
    if concept is not None and concept.inactive:
        status = f" (status '{concept.status}')" if concept.status else ""
        note = getattr(concept, "note", "")  # a release's replacement (REPLACED BY …)
        if note:
            status += f" ({note})"
        text = f"The code {_fmt(system, real_code)} is inactive{status}; review its use"
        issues.append(Issue("warning", _TX_TYPE["inactive"], text, "inactive"))
    if concept is None:
        text = (
            f"{_fmt(system, real_code)} could not be checked against its code system "
            f"(not loaded, or not complete); it was accepted because {where} lists it"
        )
        issues.append(Issue("warning", "not-found", text, "unknown-system"))
    errors = [i for i in issues if i.severity == "error"]
    result = not errors
    reason = (
        errors[0].reason
        if errors
        else ("inactive" if concept is not None and concept.inactive else None)
    )
    message = "; ".join(i.text for i in (errors or issues)) or None
    return ValidationResult(
        result, message, preferred, real_code, system, version, reason, tuple(issues)
    )


def combine_codings(results: Sequence[ValidationResult]) -> ValidationResult:
    """Combine per-coding results of a CodeableConcept: valid when any coding is valid."""
    valid = [r for r in results if r.result]
    if len(results) == 1:
        return results[0]
    failed = [(i, r) for i, r in enumerate(results, 1) if not r.result]
    notes = "; ".join(f"coding {i} ({_fmt(r.system, r.code)}): {r.message}" for i, r in failed)
    if valid:
        best = valid[0]
        index = results.index(best) + 1
        message = f"Coding {index} ({_fmt(best.system, best.code)}) is valid"
        if best.message:
            message += f" ({best.message})"
        if notes:
            message += f"; {notes}"
        warnings = tuple(
            Issue("warning", i.code, i.text, i.reason) for _, r in failed for i in r.issues
        )
        return ValidationResult(
            True,
            message,
            best.display,
            best.code,
            best.system,
            best.version,
            best.reason,
            best.issues + warnings,
        )
    first = results[0]
    return ValidationResult(
        False,
        f"None of the {len(results)} codings is valid: {notes}",
        first.display,
        first.code,
        first.system,
        first.version,
        first.reason,
        tuple(i for r in results for i in r.issues),
    )


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
