"""$validate-code on the terminology engine: against a value set (code, Coding,
CodeableConcept) and against a whole code system, with status notes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from workbench.frozen import replaced
from workbench.resources import canonical_of
from workbench.terminology import languages, supplements
from workbench.terminology.compose import CompiledValueSet
from workbench.terminology.membership import not_present
from workbench.terminology.requests import PLAIN_CHECK, ValidateRequest
from workbench.terminology.resolution import Resolution
from workbench.terminology.validate.batch import CodingCheck, PerValueSet
from workbench.terminology.validate.coding import (
    CheckOptions,
    Issue,
    ValidationResult,
    failure,
    status_checks,
    validate_in_codesystem,
)

# Remembers what depends on the value set alone while it stays compiled: (key, factory).
_PerValueSet = PerValueSet


class Validating(Resolution):
    """$validate-code over the resolved value sets and code systems (a part of
    ``Terminology``)."""

    def validate_code(self, req: ValidateRequest) -> ValidationResult:
        """Validate a code, Coding or CodeableConcept against a value set.

        ``req.policy`` carries the version parameters (force/default/check per system,
        default value set versions); ``req.options`` the strictness switches. A Coding's own
        version is the default version of its system for the includes that pin none; a
        ``display`` given beside a Coding is checked in place of the Coding's own. A value
        set the value set imports that cannot be found makes the result false (a11). The
        decision is ``CodingCheck``'s, the same for one code as for a batch of them.
        """
        return self.coding_check(req).answer(req)

    def coding_check(self, req: ValidateRequest) -> CodingCheck:
        """The decision of ``validate_code`` for the codings of ``req``'s value set, switches
        and versions (``batch.CodingCheck``: one coding, or many at once)."""
        return CodingCheck(self, req)

    def check_options(
        self, req: ValidateRequest, resource: Mapping[str, Any], per_valueset: _PerValueSet
    ) -> CheckOptions:
        """The request's switches with what the validation needs besides: the versions to
        check or force, the wanted display languages. Raises SupplementNotFoundError for a
        supplement the request or the value set asks for that is not loaded."""
        brought = per_valueset(
            ("validate", "supplements"), lambda: supplements.valueset_supplements(resource)
        )
        asked = [*req.use_supplements, *brought]
        if asked:
            self.require_supplements(asked, f"the validation against {canonical_of(resource)}")
        if (
            req.options is PLAIN_CHECK
            and not req.policy
            and not req.use_supplements
            and not (req.display_language or req.accept_language)
        ):
            # a plain request: its switches depend on the value set alone
            return cast(
                CheckOptions,
                per_valueset(
                    ("validate", "options"),
                    lambda: self._options(req, resource, asked, per_valueset),
                ),
            )
        return self._options(req, resource, asked, per_valueset)

    def _options(
        self,
        req: ValidateRequest,
        resource: Mapping[str, Any],
        asked: list[str],
        per_valueset: _PerValueSet,
    ) -> CheckOptions:
        """``check_options`` once the supplements are known to be there."""
        opts, policy = req.options, req.policy
        changes: dict[str, Any] = {}
        if policy or opts.check_versions or opts.force_versions or opts.default_versions:
            changes.update(
                check_versions={**policy.check},
                force_versions={**policy.force},
                default_versions={**policy.defaults},
            )
        # only the supplements the request or the value set bring in count for displays (a7)
        changes["supplements"] = frozenset(asked)
        if req.display_language or req.accept_language:
            wanted = languages.requested(
                req.display_language, resource, req.accept_language, wildcard=False
            )
        else:
            wanted = per_valueset(
                ("validate", "languages"),
                lambda: languages.requested(None, resource, None, wildcard=False),
            )
        if wanted:
            changes["languages"] = wanted
        return replaced(opts, **changes)

    def with_status_notes(
        self,
        result: ValidationResult,
        resource: Mapping[str, Any],
        first: CompiledValueSet | None,
        per_valueset: _PerValueSet,
    ) -> ValidationResult:
        """The result with the status-check notes about the value set, the value sets it
        imports and the code system used (d5); a code system the value set draws on is one
        of its dependencies, so its notes can be remembered with the compiled value set
        too."""
        used, version = result.system, result.version
        if first is not None and (not used or used in first.systems()):
            found = self.memo(
                first,
                ("validate", "notes", used, version),
                lambda: self._status_notes(used, version, resource, first, per_valueset),
            )
        else:
            found = self._status_notes(used, version, resource, first, per_valueset)
        return replaced(result, issues=(*result.issues, *found)) if found else result

    def _status_notes(
        self,
        used: str | None,
        version: str | None,
        resource: Mapping[str, Any],
        first: CompiledValueSet | None,
        per_valueset: _PerValueSet,
    ) -> tuple[Issue, ...]:
        """The status-check notes of ``with_status_notes``: the value set's own (and its
        imports'), then the code system's."""

        def involved() -> tuple[Issue, ...]:
            imports = first.imported() if first is not None else self._inline_imports(resource)
            found = [resource, *(vs.resource for vs in imports)]
            return tuple(status_checks(found, source=resource))

        own = per_valueset(("validate", "status"), involved)
        return (*own, *self._codesystem_status(used, version, resource))

    def _codesystem_status(
        self, system: str | None, version: str | None, source: Mapping[str, Any]
    ) -> tuple[Issue, ...]:
        """The status-check notes about the code system a validation used."""
        if not system:
            return ()
        cs = self.codesystem(system, version)
        if cs is None or not cs.resource:
            return ()
        return tuple(status_checks([cs.resource], source=source))

    def _inline_imports(self, resource: Mapping[str, Any]) -> list[CompiledValueSet]:
        """The value sets an inline value set imports (compiled again only when it has
        any)."""
        compose = resource.get("compose") or {}
        clauses = [*(compose.get("include") or ()), *(compose.get("exclude") or ())]
        if not any(c.get("valueSet") for c in clauses if isinstance(c, Mapping)):
            return []
        return self.compiled(resource).imported()

    def is_valueset(self, url: str) -> bool:
        """True when ``url`` is a value set's (and no code system's) canonical URL."""
        return self.registry.get("ValueSet", url) is not None

    def validate_in_codesystem(
        self,
        url: str,
        *,
        code: str | None,
        version: str | None = None,
        display: str | None = None,
        abstract: bool = True,
        display_language: str | None = None,
        lenient_display: bool = False,
    ) -> ValidationResult:
        """Validate a code against a whole code system; ``display_language`` (a weighted
        list) is the language a given display must be in; ``lenient_display`` makes a
        wrong display a warning."""
        found = self.codesystem(url, version)
        stored = self.registry.get("CodeSystem", url, version) if found is None else None
        if stored is not None and supplements.is_supplement(stored):
            return failure(
                "unknown-system",
                f"CodeSystem {canonical_of(stored)} is a supplement, so it cannot be used as "
                "Coding.system",
                code=code,
                system=url,
                version=version,
                tx="invalid-data",
            )
        if found is None:
            label = f"{url}|{version}" if version else url
            loaded = self.codesystem_versions(url) if version else []
            return failure(
                "unknown-system",
                f"A definition for CodeSystem '{label}' could not be "
                f"found, so the code '{code}' cannot be validated"
                + (". Valid versions: " + " or ".join(loaded) if loaded else ""),
                code=code,
                system=url,
                version=version,
                unknown=[label],
            )
        if found.content == "not-present":  # its definition only: as if not loaded
            return not_present(url, str(code), found.version)
        wanted = languages.requested(display_language, None, None, wildcard=False)
        return validate_in_codesystem(
            found,
            code=code,
            display=display,
            abstract=abstract,
            languages=wanted,
            lenient_display=lenient_display,
        )
