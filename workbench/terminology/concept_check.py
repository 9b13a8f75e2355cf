"""The checks of one concept found in a value set or code system: abstract, display and its
languages, status (inactive, deprecated), case; and the switches that set how strict they
are (``CheckOptions``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from workbench.terminology.concepts import Concept
from workbench.terminology.languages import Languages, display_in, valid_in
from workbench.terminology.params import param
from workbench.terminology.result import Issue, ValidationResult, failure
from workbench.terminology.result import coding_label as _fmt


@dataclass(frozen=True)
class CheckOptions:
    """The $validate-code switches that change how strictly a code is checked.

    ``abstract``: abstract (notSelectable) codes are valid choices. ``lenient_display``: a
    wrong display is a warning, not an error. ``membership_only``: only membership counts
    (no display, abstract or status checks). ``active_only``: inactive codes are not valid.
    ``check_versions``: ``system -> version pattern`` a used version must match;
    ``force_versions`` and ``default_versions`` (``system-version``) the others. The
    switches are read from the $validate-code inputs their ``param`` names.
    """

    abstract: bool = param("abstract", False)
    lenient_display: bool = param("lenient-display-validation", False)
    membership_only: bool = param("valueset-membership-only", False)
    active_only: bool = param("activeOnly", False)
    check_versions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    force_versions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    default_versions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    languages: Languages | None = None


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


def check_concept(
    concept: Concept | None,
    override: str | None,
    *,
    code: str,
    system: str,
    version: str | None,
    display: str | None,
    abstract: bool,
    where: str,
    options: CheckOptions | None = None,
    case_sensitive: bool = True,
    language: str | None = None,
) -> ValidationResult:
    """The checks of a concept that is a member: abstract, display (and its language),
    status, case; ``concept`` is None when its code system could not check it."""
    opts = options or CheckOptions(abstract=abstract)
    preferred = override or (concept.display if concept is not None else None)
    wanted = opts.languages
    if wanted and concept is not None and not override:
        fallback = Languages(wanted.tags, True, wanted.text)
        preferred = display_in(fallback, concept.display, language, concept.designations)
    real_code = concept.code if concept is not None else code
    normalized = real_code if real_code != code else None
    inactive = bool(concept is not None and concept.inactive) or None
    status = (concept.status or "inactive") if inactive and concept is not None else None
    deprecated = not inactive and concept is not None and _deprecated(concept)
    if deprecated:
        status = "deprecated"
    if concept is not None and concept.abstract and not abstract and not opts.membership_only:
        result = failure(
            "abstract",
            f"The code {_fmt(system, real_code)} is abstract, and abstract "
            f"codes are not allowed here (set abstract=true to allow them)",
            code=code,
            system=system,
            version=version,
            display=preferred,
            tx="code-rule",
        )
        return dataclasses.replace(result, normalized_code=normalized)
    issues = [
        *_display_issues(
            concept,
            override,
            code=code,
            system=system,
            display=display,
            opts=opts,
            language=language,
        ),
        *_status_issues(concept, system, deprecated=deprecated, inactive=bool(inactive), opts=opts),
        *_found_issues(
            concept, code=code, system=system, where=where, case_sensitive=case_sensitive
        ),
    ]
    errors = [i for i in issues if i.severity == "error"]
    warnings = [i for i in issues if i.severity == "warning"]
    reason = errors[0].reason if errors else ("inactive" if inactive else None)
    # a display valid only in the default language is said even when the code is valid
    no_language = [i for i in issues if i.severity == "information" and i.code == "invalid-display"]
    message = "; ".join(i.text for i in (errors or warnings or no_language)) or None
    return ValidationResult(
        not errors,
        message,
        preferred,
        code,
        system,
        version,
        reason,
        tuple(issues),
        inactive=inactive,
        status=status,
        normalized_code=normalized,
    )


def _display_issues(
    concept: Concept | None,
    override: str | None,
    *,
    code: str,
    system: str,
    display: str | None,
    opts: CheckOptions,
    language: str | None,
) -> list[Issue]:
    """A wrong display (an error, or a warning when lenient), a retired one (a comment),
    or one valid but not in the requested languages."""
    if opts.membership_only:
        return []
    problem = display_problem(display, concept, override)
    real = _fmt(system, concept.code if concept is not None else code)
    if problem is not None and concept is not None and display in concept.retired_displays():
        text = (
            f"The display '{display}' for {real} is no longer current "
            f"(an inactive description); the current one is '{problem[1]}'"
        )
        return [Issue("warning", "display-comment", text, "invalid-display", "display")]
    if problem is not None:
        text = f"Wrong display '{display}' for {real}. {problem[0]}"
        severity = "warning" if opts.lenient_display else "error"
        return [Issue(severity, "invalid-display", text, "invalid-display", "display")]
    wanted = opts.languages
    if wanted and display is not None and concept is not None:
        return _language_issues(wanted, display, concept, override, language, opts, system)
    return []


def _status_issues(
    concept: Concept | None, system: str, *, deprecated: bool, inactive: bool, opts: CheckOptions
) -> list[Issue]:
    """A deprecated or inactive concept: valid, with a warning to review its use."""
    if concept is None or opts.membership_only:
        return []
    if deprecated:
        text = f"The concept '{concept.code}' is deprecated and its use should be reviewed"
        return [Issue("warning", "code-comment", text, "deprecated", "code")]
    if inactive:
        shown = f" (status '{concept.status}')" if concept.status else ""
        if concept.note:  # a release's replacement (REPLACED BY …)
            shown += f" ({concept.note})"
        text = f"The code {_fmt(system, concept.code)} is inactive{shown}; review its use"
        return [Issue("warning", "code-comment", text, "inactive", "")]
    return []


def _found_issues(
    concept: Concept | None, *, code: str, system: str, where: str, case_sensitive: bool
) -> list[Issue]:
    """A code found in another case (case-insensitive systems), or accepted unchecked
    because the value set lists it and its code system is not there to check it."""
    if concept is None:
        text = (
            f"{_fmt(system, code)} could not be checked against its code system "
            f"(not loaded, or not complete); it was accepted because {where} lists it"
        )
        return [Issue("warning", "not-found", text, "unknown-system", "system")]
    if concept.code != code and not case_sensitive:
        text = (
            f"The code '{code}' differs in case from the correct code '{concept.code}' in "
            f"{system}, which is case-insensitive"
        )
        return [Issue("information", "code-rule", text, "normalized", "code")]
    return []


def _language_issues(
    wanted: Languages,
    display: str,
    concept: Concept,
    override: str | None,
    language: str | None,
    opts: CheckOptions,
    system: str,
) -> list[Issue]:
    """A display that is valid, but not in the requested languages: a warning when the
    request allows other languages, an error when it does not. The default display of a
    concept that has none in those languages is valid, with an information issue."""
    in_language = valid_in(wanted, concept.display, language, concept.designations)
    if override:
        in_language.insert(0, override)
    if display in in_language or opts.membership_only:
        return []
    where = _fmt(system, concept.code)
    if not in_language and display == concept.display:
        text = (
            f"There is no display for {where} in the requested language(s) '{wanted.text}'; "
            f"'{display}' is valid for the code system's default language"
        )
        return [Issue("information", "invalid-display", text, "invalid-display", "display")]
    text = (
        f"'{display}' is a valid display for {where}, but not in the requested language(s) "
        f"'{wanted.text}'"
    )
    if wanted.wildcard:
        return [Issue("warning", "display-comment", text, "invalid-display", "display")]
    if in_language:
        text += ": valid is " + ", ".join(f"'{v}'" for v in in_language[:10])
    else:
        text += ", which have no display for it"
    severity = "warning" if opts.lenient_display else "error"
    return [Issue(severity, "invalid-display", text, "invalid-display", "display")]


def _deprecated(concept: Concept) -> bool:
    """A concept whose status property says deprecated (valid, but to be reviewed)."""
    return concept.status == "deprecated"
