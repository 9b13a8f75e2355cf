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

from workbench.errors import (
    CodeSystemNotFoundError,
    IncompleteCodeSystemError,
    NotPresentCodeSystemError,
)
from workbench.resources import canonical_of
from workbench.terminology import supplements
from workbench.terminology.codings import coding_parts, combine_codings, located
from workbench.terminology.compose import UNUSABLE_CONTENT, CompiledValueSet, Match, unusable
from workbench.terminology.concept_check import CheckOptions, check_concept
from workbench.terminology.concepts import STANDARDS_STATUS, Concept
from workbench.terminology.languages import Languages
from workbench.terminology.membership import (
    inactive_text,
    non_member,
    non_members,
    not_present,
    unknown_system,
    why_not_members,
    with_not_in_vs,
)
from workbench.terminology.provider import CodeSystemProvider
from workbench.terminology.result import REASONS, TX_ISSUE_TYPE, Issue, ValidationResult, failure
from workbench.terminology.result import coding_label as _fmt
from workbench.terminology.validate.plain import plain_member, plain_options, plain_result
from workbench.terminology.validate.versions import (
    coding_version,
    unknown_include_version,
    version_error,
)
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
    abstract: bool | None = None,
    options: CheckOptions | None = None,
    versions: Callable[[str], list[str] | None] | None = None,
    is_valueset: Callable[[str], bool] | None = None,
) -> ValidationResult:
    """Validate one coding against a compiled value set (see the module docstring).

    ``version`` is the coding's own version; ``versions(system)`` lists the known versions
    of a system (for the message when a version is unknown); ``is_valueset(url)`` tells a
    system that is a value set's URL (no code system) from an unknown one.
    """
    opts = options or CheckOptions(abstract=abstract)
    where = where_of(vs)
    if code is None or code == "":
        return failure("missing", "No code was given", code=code, system=system)
    if not system:
        inferred = _infer_system(vs, code, strict=opts.infer_system)
        if isinstance(inferred, ValidationResult):
            return with_not_in_vs(inferred, where)
        system = inferred
    forced = opts.force_versions.get(system)
    pinned = vs.pinned_version(system)
    refused = _version_refusal(vs, codesystem, versions, opts, code, system, version, forced)
    if refused is not None:
        return refused
    found = _locate(vs, codesystem, code, system, version, forced, where)
    if isinstance(found, ValidationResult):
        return found
    if found is None:
        return unknown_system(
            system,
            code,
            version,
            where,
            drawn_on=system in vs.systems(),
            is_valueset=is_valueset is not None and is_valueset(system),
        )
    refused = _refusal(vs, found, opts, code, system, version, forced, pinned)
    if refused is not None:
        return refused
    if display is None and version is None and forced is None:
        plain = _plain(vs, found, code, system, opts)
        if plain is not None:  # nothing to say (what a batch answers from ``PlainMembers``)
            return plain
    cs, concept = found.cs, found.concept
    if opts.supplements is not None and cs is not None and concept is not None:
        concept = _without_other_supplements(cs, concept, opts.supplements)
    result = check_concept(
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
    if result.issue == "invalid-display" and version is None and forced is None:
        result = _display_in_another_version(vs, codesystem, opts, code, system, display) or result
    if result.issue == "abstract":  # refused: not a member here (a2, d1)
        return with_not_in_vs(result, where)
    if result.result and found.deprecated:  # deprecated in this value set (d5)
        text = (
            f"The concept {system}#{code} is {found.deprecated} in {where}, and its use "
            "should be reviewed"
        )
        extra = Issue("warning", "code-comment", text, "deprecated", "code")
        return dataclasses.replace(result, issues=(*result.issues, extra))
    return result


def _plain(
    vs: CompiledValueSet, found: _Located, code: str, system: str, opts: CheckOptions
) -> ValidationResult | None:
    """The answer of a plainly valid member (``plain.plain_member``), or None when the
    code needs the full check."""
    if not plain_options(vs, opts):
        return None
    match = Match(found.member, found.override, found.concept, found.cs, (), found.deprecated)
    plain = plain_member(match, code, opts)
    return None if plain is None else plain_result(plain, code, system)


def _display_in_another_version(
    vs: CompiledValueSet,
    codesystem: Callable[[str, str | None], CodeSystemProvider | None],
    opts: CheckOptions,
    code: str,
    system: str,
    display: str | None,
) -> ValidationResult | None:
    """A coding without a version whose display is wrong in the version it was checked
    against, when the value set includes several versions of its system: the answer of
    another included version that has the code with that display (naming that version),
    else None."""
    versions = vs.included_versions(system)
    if len(versions) < 2:
        return None
    for other in versions:
        match = vs.contains(system, code, other)
        cs = codesystem(system, other) if match.found else None
        concept = match.concept or (cs.get(code) if cs is not None else None)
        if cs is None or concept is None:
            continue
        result = check_concept(
            concept,
            match.display,
            code=code,
            system=system,
            version=cs.version,
            display=display,
            abstract=opts.abstract,
            where=where_of(vs),
            options=opts,
            case_sensitive=cs.case_sensitive,
            language=cs.language,
        )
        if result.result and not result.issues:
            return result
    return None


def _version_refusal(
    vs: CompiledValueSet,
    codesystem: Callable[[str, str | None], CodeSystemProvider | None],
    versions: Callable[[str], list[str] | None] | None,
    opts: CheckOptions,
    code: str,
    system: str,
    version: str | None,
    forced: str | None,
) -> ValidationResult | None:
    """The answer when a version decides it before membership: an include version that is
    not loaded (unless a version is forced), else the coding's own version (b1-b4)."""
    refused = None
    if forced is None and vs.unloaded_versions():
        refused = unknown_include_version(
            vs, codesystem, versions, opts, code=code, system=system, version=version
        )
    if refused is None and version is not None:
        refused = coding_version(
            vs, codesystem, versions, opts, code=code, system=system, version=version
        )
    return refused


def _without_other_supplements(
    cs: CodeSystemProvider, concept: Concept, wanted: frozenset[str]
) -> Concept:
    """The concept without the designations of supplements that are not in scope (a7)."""
    added = cs.supplement_designations(concept.code)
    other = [d for canonical, d in added if not supplements.in_scope(canonical, wanted)]
    if not other:
        return concept
    kept = [d for d in concept.designations if not any(d is o for o in other)]
    return dataclasses.replace(concept, designations=kept)


def where_of(vs: CompiledValueSet) -> str:
    """How messages name the value set."""
    return f"the value set {vs.canonical}" if vs.canonical else "the value set"


class _Located(NamedTuple):
    """Where a coding was found: in the value set or not, its display there, the code
    system that was asked and the concept it has (None when it has none)."""

    member: bool
    override: str | None
    cs: CodeSystemProvider | None
    concept: Concept | None
    deprecated: str | None = None


def _locate(
    vs: CompiledValueSet,
    codesystem: Callable[[str, str | None], CodeSystemProvider | None],
    code: str,
    system: str,
    version: str | None,
    forced: str | None,
    where: str,
) -> _Located | ValidationResult | None:
    """Membership of the coding, and the concept of the code system version it is checked
    against (the coding's own version, else the value set's, else a forced one); None when
    there is no code system to check it against and the value set does not list it."""
    try:
        match = vs.contains(system, code, version if forced is None else None)
    except NotPresentCodeSystemError as exc:  # its definition only: as if not loaded
        return not_present(system, code, exc.version or version)
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
        cs = match.cs
        if cs is None:  # no member: the version the includes draw on, where they use one
            drawn = vs.included_versions(system) if forced is None else []
            cs = codesystem(system, drawn[0] if len(drawn) == 1 else forced)
        concept = match.concept or (cs.get(code) if cs is not None else None)
    if concept is not None and match.designations:
        # the value set's own designations count as the concept's for this check
        concept = dataclasses.replace(
            concept, designations=[*concept.designations, *match.designations]
        )
    if cs is None and not match.found:
        return None  # no code system at all: the caller says why (``unknown_system``)
    return _Located(match.found, match.display, cs, concept, match.deprecated)


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
    where = where_of(vs)
    if cs is not None and not found.member:
        if cs.is_expression(code):
            return _check_expression(cs, code, where, vs)
        if cs.content == "fragment" and vs.takes_whole(system) and not concept:
            return _unknown_in_fragment(cs, code, system)
        reasons, texts, displays = why_not_members(where, cs, system, [code], vs.inactive_allowed)
        return non_member(
            reasons[0],
            texts[0],
            cs,
            code,
            system,
            displays[0],
            where,
            membership_only=opts.membership_only,
        )
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
            version_error(system, used, checked),
            code=code,
            system=system,
            version=used,
            display=display,
            tx="version-error",
            element="version",
        )
    if cs is not None and concept is not None and concept.inactive and opts.active_only:
        text = inactive_text(system, code, where)
        return non_member("inactive", text, cs, code, system, concept.display, where)
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


def _infer_system(vs: CompiledValueSet, code: str, *, strict: bool) -> str | ValidationResult:
    """The system of a code given without one: the value set's only system, else the one
    system of the value set that has the code (``inferSystem``). A code that no system of
    the value set has cannot be inferred (never checked against a guessed system), unless
    the value set's one system could not be checked (it is not loaded: that is the
    answer's cause)."""
    systems = vs.systems()
    if len(systems) == 1 and not strict:
        return systems[0]
    having = []
    unchecked = []
    for candidate in systems:
        try:
            if vs.contains(candidate, code).found:
                having.append(candidate)
        except (CodeSystemNotFoundError, IncompleteCodeSystemError):
            unchecked.append(candidate)
    if len(having) == 1:
        return having[0]
    if not having and len(systems) == 1 and unchecked:
        return systems[0]
    listed = ", ".join(systems) or "none"
    if len(systems) == 1:
        why = f"the value set {vs.canonical} draws on {listed} only, which has no such code"
    else:
        why = f"the value set {vs.canonical} draws on {len(systems)} code systems ({listed})"
        why += f" and {len(having)} of them have the code" if having else ""
    return failure(
        "unknown-system",
        f"The code '{code}' has no system, and it cannot be inferred: {why}",
        code=code,
        system=None,
        tx="cannot-infer",
        element="code",
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


def validate_in_codesystem(
    cs: CodeSystemProvider,
    *,
    code: str | None,
    display: str | None = None,
    abstract: bool = True,
    languages: Languages | None = None,
    lenient_display: bool = False,
) -> ValidationResult:
    """Validate a code against a whole code system (CodeSystem/$validate-code); a display
    given must be one in ``languages`` when they are given (a wrong one is a warning when
    ``lenient_display``)."""
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
        options=CheckOptions(
            abstract=abstract, languages=languages, lenient_display=lenient_display
        ),
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


def status_checks(
    resources: Sequence[Mapping[str, Any]], source: Mapping[str, Any] | None = None
) -> list[Issue]:
    """Information issues about the resources a validation used (d5): a value set or code
    system that is retired, deprecated or withdrawn (standards status), draft or
    experimental. ``source`` is the value set asked for: as tx.fhir.org does, a draft
    (experimental) resource is said only when the source is not draft (experimental)
    itself."""
    source = source or {}
    source_draft = source.get("status") == "draft" or _standards(source) == "draft"
    found: list[Issue] = []
    for resource in resources:
        standards = _standards(resource)
        status = standards if standards in ("deprecated", "withdrawn") else None
        if status is None and resource.get("status") == "retired":
            status = "retired"
        elif status is None and resource.get("experimental") is True:
            status = None if source.get("experimental") is True else "experimental"
        elif status is None and (resource.get("status") == "draft" or standards == "draft"):
            status = None if source_draft else "draft"
        if status is not None:
            kind = resource.get("resourceType", "resource")
            text = f"Reference to {status} {kind} {canonical_of(resource)}"
            found.append(Issue("information", "status-check", text, "status", None))
    return found


def _standards(resource: Mapping[str, Any]) -> str | None:
    """The standards-status extension of a resource."""
    return next(
        (
            str(e.get("valueCode"))
            for e in resource.get("extension", ()) or ()
            if isinstance(e, Mapping) and e.get("url") == STANDARDS_STATUS
        ),
        None,
    )
