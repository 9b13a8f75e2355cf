"""Code validation against a value set or a code system.

``validate_in_valueset`` and ``validate_in_codesystem`` answer a ``ValidationResult``
(``workbench.terminology.result``, where the issues are listed); a code that fails is a
result with ``result=False``, never an exception. ``workbench.terminology.codings`` combines
the results of a CodeableConcept's codings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from workbench.errors import CodeSystemNotFoundError, IncompleteCodeSystemError
from workbench.resources import canonical_of
from workbench.terminology.codings import coding_parts, combine_codings, located
from workbench.terminology.compose import UNUSABLE_CONTENT, CompiledValueSet, unusable
from workbench.terminology.concept_check import CheckOptions, check_concept
from workbench.terminology.concepts import STANDARDS_STATUS, Concept
from workbench.terminology.languages import Languages
from workbench.terminology.provider import CodeSystemProvider, Described
from workbench.terminology.result import REASONS, TX_ISSUE_TYPE, Issue, ValidationResult, failure
from workbench.terminology.result import coding_label as _fmt
from workbench.terminology.versions import matches as version_matches

__all__ = [
    "REASONS",
    "TX_ISSUE_TYPE",
    "CheckOptions",
    "Issue",
    "ValidationResult",
    "coding_parts",
    "combine_codings",
    "failure",
    "located",
    "non_members",
    "status_checks",
    "validate_in_codesystem",
    "validate_in_valueset",
]


def validate_in_valueset(
    vs: CompiledValueSet,
    codesystem: Callable[[str, str | None], CodeSystemProvider | None],
    *,
    code: str | None,
    system: str | None,
    version: str | None = None,
    display: str | None = None,
    abstract: bool = False,
    options: CheckOptions | None = None,
    versions: Callable[[str], list[str] | None] | None = None,
) -> ValidationResult:
    """Validate one coding against a compiled value set (see the module docstring).

    ``version`` is the coding's own version; ``versions(system)`` lists the known versions
    of a system (for the message when a version is unknown).
    """
    opts = options or CheckOptions(abstract=abstract)
    if code is None or code == "":
        return failure("missing", "No code was given", code=code, system=system)
    if not system:
        inferred = _infer_system(vs, code)
        if isinstance(inferred, ValidationResult):
            return inferred
        system = inferred
    forced = opts.force_versions.get(system)
    pinned = vs.pinned_version(system)
    if version is not None and forced is None:
        refused = _coding_version(vs, codesystem, versions, code, system, version, pinned)
        if refused is not None:
            return refused
    where = f"the value set {vs.canonical}"
    found = _locate(vs, codesystem, code, system, version, forced, where)
    if isinstance(found, ValidationResult):
        return found
    refused = _refusal(vs, found, opts, code, system, version, forced, pinned)
    if refused is not None:
        return refused
    cs, concept = found.cs, found.concept
    return check_concept(
        concept,
        found.override,
        code=code,
        system=system,
        version=cs.version if cs is not None else version,
        display=display,
        abstract=opts.abstract,
        where=where,
        options=opts,
        case_sensitive=cs.case_sensitive if cs is not None else True,
        language=cs.language if cs is not None else None,
    )


class _Located(NamedTuple):
    """Where a coding was found: in the value set or not, its display there, the code
    system that was asked and the concept it has (None when it has none)."""

    member: bool
    override: str | None
    cs: CodeSystemProvider | None
    concept: Concept | None


def _coding_version(
    vs: CompiledValueSet,
    codesystem: Callable[[str, str | None], CodeSystemProvider | None],
    versions: Callable[[str], list[str] | None] | None,
    code: str,
    system: str,
    version: str,
    pinned: str | None,
) -> ValidationResult | None:
    """A coding's own version that is unknown, or differs from the one the include pins."""
    if codesystem(system, version) is None:
        return _unknown_version(vs, codesystem, versions, code, system, version, pinned)
    if pinned is None or version_matches(pinned, version):
        return None
    used = codesystem(system, pinned)
    text = (
        f"The code system '{system}' version '{pinned}' in the ValueSet include is "
        f"different to the one in the value ('{version}')"
    )
    shown = used.get(code) if used is not None else None
    return failure(
        "version",
        text,
        code=code,
        system=system,
        version=used.version if used is not None else pinned,
        display=shown.display if shown is not None else None,
        tx="vs-invalid",
    )


def _locate(
    vs: CompiledValueSet,
    codesystem: Callable[[str, str | None], CodeSystemProvider | None],
    code: str,
    system: str,
    version: str | None,
    forced: str | None,
    where: str,
) -> _Located | ValidationResult:
    """Membership of the coding, and the concept of the code system version it is checked
    against (the coding's own version, else the value set's, else a forced one)."""
    try:
        match = vs.contains(system, code)
    except CodeSystemNotFoundError as exc:
        label = f"{system}|{exc.version}" if exc.version else system
        return failure(
            "unknown-system",
            f"{exc.text}, so the code {_fmt(system, code)} cannot be checked against {where}",
            code=code,
            system=system,
            version=version,
            unknown=[label],
        )
    if version is not None and forced is None:
        cs = codesystem(system, version)
        concept = cs.get(code) if cs is not None else None
    else:
        cs = match.cs or codesystem(system, forced)
        concept = match.concept or (cs.get(code) if cs is not None else None)
    if concept is not None and match.designations:
        # the value set's own designations count as the concept's for this check
        concept = dataclasses.replace(
            concept, designations=[*concept.designations, *match.designations]
        )
    if cs is None and not match.found:
        label = f"{system}|{version}" if version else system
        return failure(
            "unknown-system",
            f"A definition for CodeSystem '{label}' could not be "
            f"found, so the code '{code}' cannot be validated",
            code=code,
            system=system,
            version=version,
            unknown=[label],
        )
    return _Located(match.found, match.display, cs, concept)


def _refusal(
    vs: CompiledValueSet,
    found: _Located,
    opts: CheckOptions,
    code: str,
    system: str,
    version: str | None,
    forced: str | None,
    pinned: str | None,
) -> ValidationResult | None:
    """Why a located coding fails before its concept is checked: not a member (an
    expression is checked in full), a version the code system needs or a version check
    refuses, an inactive code where only active ones count; else None."""
    cs, concept = found.cs, found.concept
    where = f"the value set {vs.canonical}"
    if cs is not None and not found.member:
        if cs.is_expression(code):
            return _check_expression(cs, code, where, vs)
        if cs.content == "fragment" and vs.takes_whole(system) and not concept:
            return _unknown_in_fragment(cs, code, system)
        reasons, texts, displays = non_members(where, cs, system, [code], vs.inactive_allowed)
        return _non_member(reasons[0], texts[0], cs, code, system, displays[0])
    display = concept.display if concept is not None else None
    needed = cs is not None and cs.resource.get("versionNeeded") is True
    if needed and cs is not None and version is None and forced is None and pinned is None:
        return failure(
            "version",
            f"The code system '{system}' says a version is needed (versionNeeded), but the "
            f"code '{code}' was given without one",
            code=code,
            system=system,
            version=cs.version,
            display=display,
            tx="version-error",
            element="version",
        )
    used = cs.version if cs is not None else version
    checked = opts.check_versions.get(system)
    if checked is not None and used is not None and not version_matches(checked, used):
        return failure(
            "version",
            f"The version '{used}' is not allowed for system '{system}': required to be "
            f"'{checked}' by a version-check parameter",
            code=code,
            system=system,
            version=used,
            display=display,
            tx="version-error",
            element="version",
        )
    if cs is not None and concept is not None and concept.inactive and opts.active_only:
        text = f"The code {system}#{code} is inactive, and {where} excludes inactive codes"
        return _non_member("inactive", text, cs, code, system, concept.display)
    return None


NO_SYSTEM = (
    "Coding has no system. A code with no system has no defined meaning, and it cannot be "
    "validated. A system should be provided"
)


def without_system(vs: CompiledValueSet, code: str) -> ValidationResult:
    """A Coding with a code and no system: not a member of any value set (its system is
    never inferred; only a plain ``code`` with ``inferSystem`` is)."""
    return failure(
        "not-in-vs",
        f"The provided code '#{code}' was not found in the value set '{vs.canonical}'",
        code=code,
        system=None,
        extra=[Issue("warning", "invalid-data", NO_SYSTEM, "unknown-system", "")],
    )


def _infer_system(vs: CompiledValueSet, code: str) -> str | ValidationResult:
    """The system of a code given without one: the value set's only system, else the one
    system of the value set that has the code (``inferSystem``)."""
    systems = vs.systems()
    if len(systems) == 1:
        return systems[0]
    having = []
    for candidate in systems:
        try:
            if vs.contains(candidate, code).found:
                having.append(candidate)
        except (CodeSystemNotFoundError, IncompleteCodeSystemError):
            continue
    if len(having) == 1:
        return having[0]
    listed = ", ".join(systems) or "none"
    return failure(
        "unknown-system",
        f"The code '{code}' has no system, and it cannot be inferred: the value set "
        f"{vs.canonical} draws on {len(systems)} code systems ({listed})"
        + (f" and {len(having)} of them have the code" if having else ""),
        code=code,
        system=None,
        tx="cannot-infer",
        element="code",
    )


def _unknown_version(
    vs: CompiledValueSet,
    codesystem: Callable[[str, str | None], CodeSystemProvider | None],
    versions: Callable[[str], list[str] | None] | None,
    code: str,
    system: str,
    version: str,
    pinned: str | None,
) -> ValidationResult:
    known = [v for v in ((versions(system) if versions is not None else None) or []) if v]
    text = (
        f"A definition for CodeSystem '{system}' version '{version}' could not be found, "
        "so the code cannot be validated"
    )
    if known:
        text += ". Valid versions: " + " or ".join(known)
    used = codesystem(system, pinned)
    extra: list[Issue] = []
    if used is not None:
        qualifier = "" if pinned else " for the versionless include"
        severity = "error" if pinned else "warning"
        extra.append(
            Issue(
                severity,
                "vs-invalid",
                f"The code system '{system}' version '{used.version}'{qualifier} in the ValueSet "
                f"include is different to the one in the value ('{version}')",
                "version",
                "version",
            )
        )
    concept = used.get(code) if used is not None else None
    return failure(
        "unknown-system",
        text,
        code=code,
        system=system,
        version=used.version if used is not None else None,
        display=concept.display if concept is not None else None,
        extra=extra,
        unknown=[f"{system}|{version}"],
    )


def _unknown_in_fragment(cs: CodeSystemProvider, code: str, system: str) -> ValidationResult:
    """A code a fragment does not have: it may be in another fragment, so a warning."""
    label = f" version '{cs.version}'" if cs.version else ""
    text = (
        f"Unknown Code '{code}' in the CodeSystem '{system}'{label} - note that the code system "
        "is labeled as a fragment, so the code may be valid in some other fragment"
    )
    issue = Issue("warning", "invalid-code", text, "unknown-code", "code")
    return ValidationResult(True, None, None, code, system, cs.version, None, (issue,))


def _non_member(
    reason: str,
    text: str,
    cs: CodeSystemProvider,
    code: str,
    system: str,
    display: str | None,
) -> ValidationResult:
    """The failure for a code of a known system that is not in the value set."""
    result = failure(
        reason,
        text,
        code=code,
        system=system,
        version=cs.version,
        display=display,
        tx="not-in-vs" if reason == "inactive" else None,
        element="code",
    )
    if reason == "inactive":
        concept = cs.get(code)
        status = concept.status if concept is not None and concept.status else "inactive"
        return dataclasses.replace(result, inactive=True, status=status)
    return result


def non_members(
    where: str,
    cs: CodeSystemProvider,
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
    described = cs.describe(codes) if len(codes) >= 256 else None
    if described is not None:
        return _non_members_at_once(cs, described, where, label, system, codes, inactive_allowed)
    concepts = cs.concepts
    for code in codes:
        concept = concepts.get(code) or (None if cs.case_sensitive else cs.get(code))
        if concept is None:
            reasons.append("unknown-code")
            messages.append(_unknown(cs, label, code))
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


def _unknown(cs: CodeSystemProvider, label: str, code: str) -> str:
    """The message of a code the code system does not have, with why when it can tell."""
    text = f"Unknown code '{code}' in the CodeSystem '{label}'"
    detail = _why_unknown(cs, code)
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


def _non_members_at_once(
    cs: CodeSystemProvider,
    described: Described,
    where: str,
    label: str,
    system: str,
    codes: Sequence[str],
    inactive_allowed: bool,
) -> tuple[list[str], list[str], list[str | None]]:
    """``non_members`` for a code system that answers for many codes at once (a release
    store): the same reasons and messages, built column-wise (only the unknown codes one
    by one, for why they are unknown)."""
    known, inactive, shown = described
    stale = inactive & known & (not inactive_allowed)
    reasons = np.where(known, np.where(stale, "inactive", "not-in-vs"), "unknown-code")
    outside = f" is not in {where}"
    excluded = f" is inactive, and {where} excludes inactive codes"
    messages = [
        (f"The code {system}#{code}{excluded if old else outside}")
        if found
        else _unknown(cs, label, code)
        for code, found, old in zip(codes, known.tolist(), stale.tolist(), strict=True)
    ]
    return reasons.astype(object).tolist(), messages, list(shown)


def validate_in_codesystem(
    cs: CodeSystemProvider,
    *,
    code: str | None,
    display: str | None = None,
    abstract: bool = True,
    languages: Languages | None = None,
) -> ValidationResult:
    """Validate a code against a whole code system (CodeSystem/$validate-code); a display
    given must be one in ``languages`` when they are given."""
    if code is None or code == "":
        return failure("missing", "No code was given", code=code, system=cs.url)
    if cs.content in UNUSABLE_CONTENT:
        raise unusable(cs)
    if _is_expression(cs, code):
        return _check_expression(cs, code, f"the CodeSystem {cs.url}")
    concept = cs.get(code)
    if concept is None and cs.content == "fragment":
        return _unknown_in_fragment(cs, code, cs.url)
    if concept is None:
        label = f"{cs.url}|{cs.version}" if cs.version else cs.url
        detail = _why_unknown(cs, code)
        return failure(
            "unknown-code",
            f"Unknown code '{code}' in the CodeSystem '{label}'"
            + (f": {detail}" if detail else ""),
            code=code,
            system=cs.url,
            version=cs.version,
        )
    return check_concept(
        concept,
        None,
        code=code,
        system=cs.url,
        version=cs.version,
        display=display,
        abstract=abstract,
        where=f"the CodeSystem {cs.url}",
        options=CheckOptions(abstract=abstract, languages=languages),
        case_sensitive=cs.case_sensitive,
        language=cs.language,
    )


def _why_unknown(cs: CodeSystemProvider, code: str) -> str | None:
    """Why a code system that knows its grammar (UCUM) does not take a code."""
    return cs.why_unknown(code)


def _is_expression(cs: CodeSystemProvider, code: str) -> bool:
    """A compositional code system (SNOMED CT) takes post-coordinated expressions as codes."""
    return cs.is_expression(code)


def _check_expression(
    cs: CodeSystemProvider, code: str, where: str, vs: CompiledValueSet | None = None
) -> ValidationResult:
    """Validate a post-coordinated expression: well-formed (else ExpressionSyntaxError),
    every concept known and active, the concept model respected; in a value set, the
    provider decides membership when it can (``expression_member``), else every focus
    concept must be a member."""
    ok, problems, focus = cs.validate_expression(code)
    if not ok:
        text = f"The expression {code!r} is not valid in {cs.url}: {problems}"
        return failure("unknown-code", text, code=code, system=cs.url, version=cs.version)
    shown = cs.expression_display(code)
    if vs is not None:
        member = cs.expression_member(vs, code)
        outside = [f for f in focus if not vs.contains(cs.url, f).found] if member is None else []
        if member is False or outside:
            text = f"The expression {code!r} is not in {where}" + (
                f": its focus concept(s) {', '.join(outside)} are not members" if outside else ""
            )
            return failure(
                "not-in-vs", text, code=code, system=cs.url, version=cs.version, display=shown
            )
        return ValidationResult(True, None, shown, code, cs.url, cs.version)
    note = Issue(
        "information",
        "process-note",
        f"The post-coordinated expression {code!r} was checked against the concepts and the "
        "MRCM attribute domains and ranges of this release, not against the full concept model",
        "expression",
        "code",
    )
    return ValidationResult(True, None, shown, code, cs.url, cs.version, issues=(note,))


def status_checks(resources: Sequence[Mapping[str, Any]]) -> list[Issue]:
    """Information issues about the resources a validation used: a value set or code
    system that is draft or retired, or whose standards status is deprecated or withdrawn."""
    found: list[Issue] = []
    for resource in resources:
        standards = next(
            (
                str(e.get("valueCode"))
                for e in resource.get("extension", ()) or ()
                if isinstance(e, Mapping) and e.get("url") == STANDARDS_STATUS
            ),
            None,
        )
        status = standards if standards in ("deprecated", "withdrawn") else None
        if status is None and resource.get("status") in ("retired", "draft"):
            status = str(resource["status"])
        if status is not None:
            kind = resource.get("resourceType", "resource")
            text = f"Reference to {status} {kind} {canonical_of(resource)}"
            found.append(Issue("information", "status-check", text, "status", None))
    return found
