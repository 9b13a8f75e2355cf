"""The version checks of $validate-code against a value set (issue 22, b1-b4): an include
that names a version that is not loaded, a coding version that is not loaded, and a coding
version that differs from the one the value set uses.

Each answers a failed ``ValidationResult`` (or None when the check passes), with the
``code``/``display``/``version`` outputs of the version the value set resolves to: the
forced one, the one the include names, the ``system-version`` default or the latest match of
``check-system-version``, else the latest (``versions`` has the order).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from workbench.terminology.compose import CompiledValueSet
from workbench.terminology.concept_check import CheckOptions
from workbench.terminology.membership import unknown_system
from workbench.terminology.provider import CodeSystemProvider
from workbench.terminology.result import Issue, ValidationResult, failure
from workbench.terminology.versions import matches, names

CodeSystems = Callable[[str, str | None], CodeSystemProvider | None]
Versions = Callable[[str], list[str] | None] | None


def _not_found_text(system: str, version: str, versions: Versions) -> str:
    """tx.fhir.org's UNKNOWN_CODESYSTEM_VERSION text, with the versions that are loaded."""
    known = [v for v in ((versions(system) if versions is not None else None) or []) if v]
    text = (
        f"A definition for CodeSystem '{system}' version '{version}' could not be found, "
        "so the code cannot be validated"
    )
    return text + (". Valid versions: " + " or ".join(known) if known else "")


def _default_of(opts: CheckOptions, system: str) -> str | None:
    """The version a versionless include takes from the request (b2)."""
    return opts.default_versions.get(system) or opts.check_versions.get(system)


def _shown(
    codesystem: CodeSystems, system: str, code: str, version: str | None
) -> tuple[str | None, str | None]:
    """The ``version`` and ``display`` outputs from the code system version ``version``
    resolves to (the latest when None)."""
    used = codesystem(system, version)
    if used is None:
        return version, None
    concept = used.get(code)
    return used.version, concept.display if concept is not None else None


def unknown_include_version(
    vs: CompiledValueSet,
    codesystem: CodeSystems,
    versions: Versions,
    opts: CheckOptions,
    *,
    code: str,
    system: str,
    version: str | None,
) -> ValidationResult | None:
    """An include of ``system`` names a version that is not loaded, though others are (b1):
    result=false, not-found at the system and the canonical as x-caused-by-unknown-system;
    vs-invalid at the version when the coding names another one. Neither the default nor
    the check parameter rescues it."""
    missing = next((v for s, v in vs.unloaded_versions() if s == system and v), None)
    if missing is None or versions is None or not versions(system):
        return None
    text = _not_found_text(system, missing, versions)
    extra = []
    if version is not None and version != missing:
        extra.append(
            Issue(
                "error",
                "vs-invalid",
                f"The code system '{system}' version '{missing}' in the ValueSet include is "
                f"different to the one in the value ('{version}')",
                "version",
                "version",
            )
        )
    shown, display = _shown(codesystem, system, code, version or _default_of(opts, system))
    return _in_tx_order(
        failure(
            "unknown-system",
            text,
            code=code,
            system=system,
            version=shown,
            display=display,
            extra=extra,
            unknown=[f"{system}|{missing}"],
        )
    )


def coding_version(
    vs: CompiledValueSet,
    codesystem: CodeSystems,
    versions: Versions,
    opts: CheckOptions,
    *,
    code: str,
    system: str,
    version: str,
) -> ValidationResult | None:
    """A coding's own version that is not loaded (even when a version is forced: b4), or
    that none of the value set's includes of its system names (when none is forced)."""
    if codesystem(system, version) is None:
        if system not in vs.systems() and system not in opts.force_versions:
            # the value set does not use the system: the answer does not depend on the
            # missing version (x-unknown-system), the code is simply no member
            where = f"the value set {vs.canonical}" if vs.canonical else "the value set"
            return unknown_system(system, code, version, where, drawn_on=False, is_valueset=False)
        return _unknown_version(vs, codesystem, versions, opts, code, system, version)
    pins = vs.pinned_versions(system)
    if system in opts.force_versions or not pins or None in pins:
        return None
    if any(names(str(p), version) for p in pins):
        return None
    pinned = str(pins[0])
    shown, display = _shown(codesystem, system, code, pinned)
    text = (
        f"The code system '{system}' version '{pinned}' in the ValueSet include is "
        f"different to the one in the value ('{version}')"
    )
    checked = opts.check_versions.get(system)
    # b3: the version the include uses may break the check too, besides the mismatch
    broken = checked is not None and shown is not None and not matches(checked, shown)
    extra = (
        [
            Issue(
                "error",
                "version-error",
                version_error(system, str(shown), str(checked)),
                "version",
                "version",
            )
        ]
        if broken
        else []
    )
    found = failure(
        "version",
        text,
        code=code,
        system=system,
        version=shown,
        display=display,
        tx="vs-invalid",
        extra=extra,
    )
    return _in_tx_order(found) if broken else found


def version_error(system: str, version: str, checked: str) -> str:
    """The text of a version that ``check-system-version`` does not allow (b3)."""
    return (
        f"The version '{version}' is not allowed for system '{system}': required to be "
        f"'{checked}' by a version-check parameter"
    )


def _unknown_version(
    vs: CompiledValueSet,
    codesystem: CodeSystems,
    versions: Versions,
    opts: CheckOptions,
    code: str,
    system: str,
    version: str,
) -> ValidationResult:
    """The coding names a version that is not loaded: not-found at the system, and
    vs-invalid at the version naming the one the value set resolves to instead: an error
    when an include, a forced version or a default chose it (b2, b4), a warning when it is
    only the latest version for a versionless include."""
    pinned = vs.pinned_version(system)
    forced = opts.force_versions.get(system)
    default = None if pinned else _default_of(opts, system)
    chosen = forced or pinned or default
    shown, display = _shown(codesystem, system, code, chosen)
    extra: list[Issue] = []
    if codesystem(system, chosen) is not None:
        if forced or default:
            origin = f"'{forced or default}' resulting from the version '{pinned or ''}'"
            severity = "error"
        elif pinned:
            origin, severity = f"'{shown}'", "error"
        else:
            origin, severity = f"'{shown}' for the versionless include", "warning"
        text = (
            f"The code system '{system}' version {origin} in the ValueSet include is "
            f"different to the one in the value ('{version}')"
        )
        extra.append(Issue(severity, "vs-invalid", text, "version", "version"))
    return _in_tx_order(
        failure(
            "unknown-system",
            _not_found_text(system, version, versions),
            code=code,
            system=system,
            version=shown,
            display=display,
            extra=extra,
            unknown=[f"{system}|{version}"],
        )
    )


_SEVERITY = {"fatal": 0, "error": 1, "warning": 2, "information": 3}


def _in_tx_order(result: ValidationResult) -> ValidationResult:
    """The issues in the order tx.fhir.org lists them (by severity, then issue type:
    ``exception`` < ``invalid`` < ``not-found``); ``message`` keeps the order they were
    found in."""
    ordered = sorted(result.issues, key=lambda i: (_SEVERITY.get(i.severity, 4), i.type))
    return dataclasses.replace(result, issues=tuple(ordered))
