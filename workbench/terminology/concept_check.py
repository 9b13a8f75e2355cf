"""The checks of one concept found in a value set or code system: abstract, display and its
languages, status (inactive, deprecated), case; and the switches that set how strict they
are (``CheckOptions``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.terminology.concepts import STANDARDS_STATUS, Concept
from workbench.terminology.languages import Languages, display_in, same_language, valid_in
from workbench.terminology.params import param
from workbench.terminology.result import Issue, ValidationResult, failure
from workbench.terminology.result import coding_label as _fmt


@dataclass(frozen=True)
class CheckOptions:
    """The $validate-code switches that change how strictly a code is checked.

    ``abstract``: False refuses abstract (notSelectable) codes; True or None (not given,
    as tx.fhir.org reads it) takes them when the value set does. ``lenient_display``: a
    wrong display is a warning, not an error. ``membership_only``: only membership counts
    (no display, abstract or status checks). ``active_only``: inactive codes are not valid.
    ``check_versions``: ``system -> version pattern`` a used version must match;
    ``force_versions`` and ``default_versions`` (``system-version``) the others. The
    switches are read from the $validate-code inputs their ``param`` names.
    """

    abstract: bool | None = param("abstract", None)
    lenient_display: bool = param("lenient-display-validation", False)
    membership_only: bool = param("valueset-membership-only", False)
    active_only: bool = param("activeOnly", False)
    #: ``inferSystem=true`` (the FHIR input): a code no system of the value set has cannot
    #: be inferred (``cannot-infer``). Without it (Python's and a column's convenience) the
    #: one system of a value set is taken, and an unknown code says why it is unknown.
    infer_system: bool = param("inferSystem", False)
    check_versions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    force_versions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    default_versions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    languages: Languages | None = None
    #: the supplements in scope (useSupplement, valueset-supplement); None: every one
    supplements: frozenset[str] | None = None


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
    abstract: bool | None,
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
    if concept is not None and concept.abstract and abstract is False and not opts.membership_only:
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
    if display is None and concept is not None and normalized is None and status is None:
        return ValidationResult(True, None, preferred, code, system, version)  # nothing to say
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
    reason = errors[0].reason if errors else ("inactive" if inactive else None)
    return ValidationResult(
        not errors,
        message_of(issues),
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


def message_of(issues: Sequence[Issue]) -> str | None:
    """The ``message`` of a result with these issues, as tx.fhir.org gives it: the errors
    joined; without errors, the warnings but display comments (a retired display is said
    in the issues only), or else the information that a display is valid only in the
    default language."""
    if not issues:
        return None
    errors = [i for i in issues if i.severity == "error"]
    warnings = [i for i in issues if i.severity == "warning" and i.code != "display-comment"]
    no_language = [i for i in issues if i.severity == "information" and i.code == "invalid-display"]
    return "; ".join(i.text for i in (errors or warnings or no_language)) or None


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
    retired = _retired_designation(concept, display, override)
    if retired is not None:
        return [retired_display(display, real, retired)]
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


def _retired_designation(
    concept: Concept | None, display: str | None, override: str | None
) -> tuple[str, list[str]] | None:
    """(status, the current displays) when ``display`` is only a designation marked
    deprecated or withdrawn (standards-status on the designation); else None."""
    if concept is None or display is None or display == override:
        return None
    current, status = [], None
    for d in concept.designations:
        marked = standards_status(d)
        if marked in ("deprecated", "withdrawn"):
            status = marked if d.get("value") == display else status
        elif d.get("value"):
            current.append(str(d["value"]))
    current = list(dict.fromkeys([*([concept.display] if concept.display else []), *current]))
    if status is None or display in current:
        return None
    return status, current


def retired_display(display: str | None, real: str, retired: tuple[str, list[str]]) -> Issue:
    """The warning for a display that is a deprecated or withdrawn designation (d6)."""
    status, current = retired
    shown = ", ".join(f"'{c}'" for c in current[:10]) or "none"
    text = (
        f"The display '{display}' for {real} is no longer considered a correct display "
        f"(its designation is {status}); the correct display is one of {shown}"
    )
    return Issue("warning", "display-comment", text, "invalid-display", "display")


def standards_status(element: Mapping[str, Any]) -> str | None:
    """The standards-status extension of an element (a designation, an include concept)."""
    for ext in element.get("extension", ()) or ():
        if isinstance(ext, Mapping) and ext.get("url") == STANDARDS_STATUS:
            return str(ext.get("valueCode"))
    return None


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
    if not in_language and display in _default_language_texts(concept, language):
        # no display in the wanted languages: the default language's display or one of its
        # other designations is valid, said as information (a8, the last one debatable)
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


def _default_language_texts(concept: Concept, language: str | None) -> list[str]:
    """The concept's display and its designations in the code system's language (or in
    none): the texts valid for the default language."""
    texts = [concept.display] if concept.display else []
    for d in concept.designations:
        tagged = d.get("language")
        default = not tagged or bool(language and same_language(language, tagged))
        if d.get("value") and default and standards_status(d) not in ("deprecated", "withdrawn"):
            texts.append(str(d["value"]))
    return texts


def _deprecated(concept: Concept) -> bool:
    """A concept whose status property says deprecated (valid, but to be reviewed)."""
    return concept.status == "deprecated"
