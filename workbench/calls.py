"""The Workbench's single calls: expand, validate a code, look a code up, subsumption. Each
builds one request object from its keywords and hands it to the engine's service; an unknown
value set or code system gets a "Did you mean" note.

Versions, for example: the latest version is used unless the call asks for another.

>>> from workbench import Workbench
>>> wb = Workbench()
>>> _ = wb.load([{"resourceType": "CodeSystem", "url": "http://x", "version": v,
...     "content": "complete", "concept": [{"code": "a", "display": f"A {v}"}]}
...     for v in ("1.0.0", "2.0.0")])
>>> vs = {"resourceType": "ValueSet", "compose": {"include": [{"system": "http://x"}]}}
>>> wb.validate_code(valueset=vs, code="a", system="http://x").version
'2.0.0'
>>> wb.validate_code(valueset=vs, code="a", system="http://x",
...                  system_version="http://x|1.x").display
'A 1.0.0'
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

from workbench.errors import (
    CodeSystemNotFoundError,
    InvalidRequestError,
    ValueSetNotFoundError,
    WorkbenchError,
)
from workbench.registry import Registry
from workbench.terminology.compare.result import Comparison
from workbench.terminology.engine import Terminology
from workbench.terminology.expand.expansion import Expansion
from workbench.terminology.lookup import LookupResult
from workbench.terminology.requests import (
    PLAIN_CHECK,
    CodeSystemValidateRequest,
    CompareRequest,
    ExpandRequest,
    LookupRequest,
    SubsumesRequest,
    ValidateRequest,
)
from workbench.terminology.service import EngineService
from workbench.terminology.validate.coding import CheckOptions, ValidationResult
from workbench.terminology.versions import VersionPolicy

_Method = TypeVar("_Method", bound=Callable[..., Any])


def hinting(method: _Method) -> _Method:
    """Add "Did you mean <url>?" (the nearest loaded canonical URLs) as a note to an unknown
    value set or code system error; the error and its text stay as they are."""

    @functools.wraps(method)
    def wrapper(self: TerminologyCalls, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (ValueSetNotFoundError, CodeSystemNotFoundError) as exc:
            self._add_hint(exc)
            raise

    return cast(_Method, wrapper)


class TerminologyCalls:
    """The single-call methods of ``Workbench`` (a part of it): over ``service``, the engine
    service of its ``registry`` and ``terminology``."""

    registry: Registry
    terminology: Terminology
    service: EngineService

    def _add_hint(self, exc: ValueSetNotFoundError | CodeSystemNotFoundError) -> None:
        from workbench.bulk.suggest import url_hint

        kind = "ValueSet" if isinstance(exc, ValueSetNotFoundError) else "CodeSystem"
        known = {
            str(r["url"]): r.get("title") or r.get("name")
            for r in self.registry.all(kind)
            if r.get("url")
        }
        hint = url_hint(str(getattr(exc, "url", "")).split("|", 1)[0], known)
        exc.hint = hint  # type: ignore[union-attr]
        if hint and hasattr(exc, "add_note") and hint not in getattr(exc, "__notes__", []):
            exc.add_note(hint)

    @hinting
    def expand(
        self,
        valueset: str | Mapping[str, Any],
        *,
        version: str | None = None,
        filter: str | None = None,
        offset: int = 0,
        count: int | None = None,
        active_only: bool = False,
        include_designations: bool = False,
        display_language: str | None = None,
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
        include_definition: bool = False,
        properties: Sequence[str] | None = None,
        exclude_nested: bool | None = None,
        system_version: str | Sequence[str] | None = None,
        force_system_version: str | Sequence[str] | None = None,
        check_system_version: str | Sequence[str] | None = None,
        default_valueset_version: str | Sequence[str] | None = None,
        accept_language: str | None = None,
        use_supplements: Sequence[str] | None = None,
        designations: Sequence[str] | None = None,
        allow_maximum_size: bool = False,
    ) -> Expansion:
        """Expand a value set given by canonical URL (``url`` or ``url|version``) or as a dict.

        ``filter`` keeps codes whose code or display contains every word; ``offset``/``count``
        page the result (``.frame`` and ``.to_fhir()`` show the page; ``total`` counts all);
        ``allow_maximum_size`` raises the size limit of an unpaged expansion to the maximum.
        Raises ValueSetNotFoundError, CodeSystemNotFoundError, IncompleteCodeSystemError,
        ImportCycleError or UnsupportedFilterError; ``.to_fhir()`` raises TooCostlyError for
        an unpaged expansion over the size limit. ``tx_resources`` are CodeSystems and
        ValueSets used for this call only, before the stored ones (``tx-resource``).
        ``include_definition`` adds each concept's definition, ``properties`` the named
        concept properties, ``designations`` keeps only designations of those languages or
        uses, ``exclude_nested=False`` nests codes under their parents; the version
        parameters work as in ``validate_code`` (a version
        that ``check_system_version`` does not allow raises VersionCheckError). Every
        parameter, assumed defaults included, is echoed in ``expansion.parameter`` with the
        ``used-codesystem`` and ``used-valueset`` versions.
        """
        return self.service.expand(
            ExpandRequest(
                valueset=valueset,
                version=version,
                filter=filter,
                offset=offset,
                count=count,
                allow_maximum_size=allow_maximum_size,
                active_only=active_only,
                include_designations=include_designations,
                include_definition=include_definition,
                properties=tuple(properties or ()),
                exclude_nested=exclude_nested,
                designations=tuple(designations or ()),
                policy=VersionPolicy.from_parameters(
                    system_version=system_version,
                    force_system_version=force_system_version,
                    check_system_version=check_system_version,
                    default_valueset_version=default_valueset_version,
                ),
                display_language=display_language,
                accept_language=accept_language,
                use_supplements=tuple(use_supplements or ()),
                tx_resources=tuple(tx_resources or ()),
            )
        )

    def engine(self, tx_resources: Sequence[Mapping[str, Any]] | None = None) -> Terminology:
        """The terminology engine, or a view of it that sees ``tx_resources`` first (used for
        one call: nothing is stored, nothing leaks into other calls)."""
        return self.service.engine(tx_resources or ())

    @hinting
    def validate_code(
        self,
        valueset: Mapping[str, Any] | str | None = None,
        *,
        url: str | None = None,
        code: str | None = None,
        system: str | None = None,
        version: str | None = None,
        display: str | None = None,
        coding: Mapping[str, Any] | None = None,
        codeable_concept: Mapping[str, Any] | None = None,
        abstract: bool | None = None,
        valueset_version: str | None = None,
        system_version: str | Sequence[str] | None = None,
        force_system_version: str | Sequence[str] | None = None,
        check_system_version: str | Sequence[str] | None = None,
        default_valueset_version: str | Sequence[str] | None = None,
        lenient_display: bool = False,
        membership_only: bool = False,
        active_only: bool = False,
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
        display_language: str | None = None,
        accept_language: str | None = None,
        use_supplements: Sequence[str] | None = None,
    ) -> ValidationResult:
        """Validate a code (or a Coding, or a CodeableConcept) against a value set.

        ``valueset``: a canonical URL (``url|version`` too) or a ValueSet dict (``url=``:
        its deprecated name). Returns a ValidationResult; a code that fails is
        ``result=False`` with a message, an ``issue`` and its ``issues``, never an exception.
        Raises ValueSetNotFoundError for an unknown value set. A ``system`` left out is
        inferred: the value set's one system, else its one system that has the code. A
        ``display`` given with a ``coding`` is checked in place of the Coding's own.

        Versions (the guide "Versions and languages"): ``system_version``,
        ``force_system_version`` and ``check_system_version`` take ``"system|version"``
        strings (one or a list; patterns such as ``1.x``); ``default_valueset_version`` takes
        ``"url|version"``. Switches: ``lenient_display``, ``membership_only``,
        ``active_only``; ``abstract=False`` refuses abstract codes the value set includes
        (None, the default, takes them, as the HTTP ``abstract`` left out does).
        ``tx_resources`` are CodeSystems and ValueSets for this call only (``tx-resource``).
        ``display_language`` (a weighted list such as ``"de, *;q=0"``; else the value set's
        expansion-parameter extension, ``accept_language``, then ``ValueSet.language``) gives
        the display in that language and checks a given display against it (see the same
        guide, "Languages").
        """
        if code is None and coding is None and codeable_concept is None:
            raise InvalidRequestError(
                "Give something to validate: code, coding or codeable_concept"
            )
        found = self.service.validate(
            ValidateRequest.make(
                valueset=_target(valueset, url),
                valueset_version=valueset_version,
                code=code,
                system=system,
                version=version,
                display=display,
                coding=coding,
                codeable_concept=codeable_concept,
                options=_switches(abstract, lenient_display, membership_only, active_only),
                policy=VersionPolicy.from_parameters(
                    system_version=system_version,
                    force_system_version=force_system_version,
                    check_system_version=check_system_version,
                    default_valueset_version=default_valueset_version,
                ),
                display_language=display_language,
                accept_language=accept_language,
                use_supplements=tuple(use_supplements or ()),
                tx_resources=tuple(tx_resources or ()),
            )
        )
        return self._suggested(found, url or valueset, valueset_version, system, tx_resources)

    def validate_codes(
        self,
        valueset: Mapping[str, Any] | str,
        items: Sequence[Mapping[str, Any]],
        *,
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> list[ValidationResult]:
        """Validate many codes against one value set (``ValueSet/$batch-validate-code``):
        one ValidationResult per item, in order.

        An item is a Coding (``{"system": …, "code": …}``, ``version`` and ``display``
        optional) or a dict of ``validate_code`` keywords for that item alone (``code``,
        ``system``, ``coding``, ``codeable_concept``, ``display``, ``lenient_display``, …);
        ``options`` are keywords every item shares. An item that cannot be validated (no
        code, a wrong keyword value) is a ``result=False`` answer carrying the error's
        message and issue code, in its place; the others are validated all the same. An
        unknown value set raises ValueSetNotFoundError, before any item.
        """
        if not isinstance(items, Sequence) or isinstance(items, str | bytes | Mapping):
            raise InvalidRequestError("validate_codes takes a list of Codings or keyword dicts")
        self.engine(tx_resources).compiled(valueset)  # the shared value set, once
        accepted = _item_names(self.validate_code)
        out = []
        for item in items:
            given = _item_keywords(item)
            try:
                unknown = sorted(set(given) - accepted)
                if unknown:  # an item is data: its wrong keyword is its answer, not a crash
                    raise InvalidRequestError(
                        f"validate_codes: an item has keywords validate_code does not take: "
                        f"{', '.join(map(str, unknown))}"
                    )
                out.append(
                    self.validate_code(valueset, tx_resources=tx_resources, **{**options, **given})
                )
            except WorkbenchError as exc:
                out.append(_unvalidated(exc, given))
        return out

    def _suggested(
        self,
        result: ValidationResult,
        valueset: str | Mapping[str, Any] | None,
        valueset_version: str | None,
        system: str | None,
        tx_resources: Sequence[Mapping[str, Any]] | None,
    ) -> ValidationResult:
        """``result`` with its ``suggestion`` (the code probably meant) when it failed for a
        code a suggestion can help with; the message stays as the operation gives it."""
        if result.result:  # (the common answer: nothing to import or look up)
            return result
        from workbench.bulk.suggest import ISSUES

        if result.issue not in (*ISSUES, "unknown-system") or not result.code:
            return result
        if valueset is None:
            return result
        if isinstance(valueset, str) and valueset_version and "|" not in valueset:
            valueset = f"{valueset}|{valueset_version}"
        from workbench.bulk.checker import make_suggester

        engine = self.engine(tx_resources)
        try:
            if tx_resources or not isinstance(valueset, str):
                suggester = make_suggester(engine, valueset)
            else:
                compiled = engine.compiled(valueset)
                suggester = engine.memo(
                    compiled, "suggester", lambda: make_suggester(engine, valueset)
                )
            found = suggester(result.system or system, result.code, result.issue)
        except WorkbenchError:  # a hint that cannot be had is no hint; the result stands
            return result
        return result if found is None else dataclasses.replace(result, suggestion=found)

    def validate_in_codesystem(
        self,
        system: str,
        code: str | None,
        *,
        version: str | None = None,
        display: str | None = None,
        abstract: bool = True,
        display_language: str | None = None,
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
    ) -> ValidationResult:
        """Validate a code against a whole code system (abstract codes are valid unless
        ``abstract=False``). ``display_language`` (a weighted list such as ``"de"``) is the
        language a given ``display`` must be in."""
        return self.service.validate_in_codesystem(
            CodeSystemValidateRequest(
                system=system,
                code=code,
                version=version,
                display=display,
                abstract=abstract,
                display_language=display_language,
                tx_resources=tuple(tx_resources or ()),
            )
        )

    def lookup(
        self,
        system: str,
        code: str,
        *,
        version: str | None = None,
        properties: Sequence[str] | None = None,
        display_language: str | None = None,
        accept_language: str | None = None,
        use_supplements: Sequence[str] = (),
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
    ) -> LookupResult:
        """Look a code up in its code system: display, designations and properties.

        ``display_language`` (a weighted list like Accept-Language, e.g. ``de, en;q=0.5``;
        before ``accept_language``, the HTTP header) picks the display in the first wanted
        language the code system or its supplements have (for SNOMED CT, the preferred term
        of its dialect), else the concept's own display: $lookup's display is required (R4),
        so even ``*;q=0`` falls back to it.
        ``use_supplements`` names supplements that must be loaded (else
        SupplementNotFoundError)."""
        return self.service.lookup(
            LookupRequest(
                system=system,
                code=code,
                version=version,
                properties=None if properties is None else tuple(properties),
                display_language=display_language,
                accept_language=accept_language,
                use_supplements=tuple(use_supplements),
                tx_resources=tuple(tx_resources or ()),
            )
        )

    def subsumes(
        self,
        system: str,
        code_a: str,
        code_b: str,
        *,
        version: str | None = None,
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
    ) -> str:
        """Return equivalent, subsumes, subsumed-by or not-subsumed for A against B."""
        return self.service.subsumes(
            SubsumesRequest(
                system=system,
                code_a=code_a,
                code_b=code_b,
                version=version,
                tx_resources=tuple(tx_resources or ()),
            )
        )

    def compare(
        self,
        a: str | Mapping[str, Any],
        b: str | Mapping[str, Any],
        *,
        system_version: str | Sequence[str] | None = None,
        force_system_version: str | Sequence[str] | None = None,
        check_system_version: str | Sequence[str] | None = None,
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
    ) -> Comparison:
        """Compare value set ``a`` (*this*) with ``b`` (*other*), each a canonical URL
        (``url`` or ``url|version``) or a ValueSet dict, as ``ValueSet/$compare`` does.

        ``.result`` is same, subset, superset, overlapping, disjoint, empty or
        indeterminate (a side that cannot be expanded); ``.both``, ``.only_in_a`` and
        ``.only_in_b`` are frames of the codes (empty when the definitions alone decided,
        ``.performed_expansion`` False). Raises ValueSetDefinitionNotFoundError for a value
        set that is not loaded, ValueSetVersionNotFoundError (naming the loaded versions)
        for a version that is not.
        """
        return self.service.compare(
            CompareRequest(
                this=a,
                other=b,
                policy=VersionPolicy.from_parameters(
                    system_version=system_version,
                    force_system_version=force_system_version,
                    check_system_version=check_system_version,
                ),
                tx_resources=tuple(tx_resources or ()),
            )
        )


def _switches(
    abstract: bool | None, lenient_display: bool, membership_only: bool, active_only: bool
) -> CheckOptions:
    """The CheckOptions of the keywords: the shared ``PLAIN_CHECK`` when none is set (the
    engine then remembers the switches with the value set instead of working them out)."""
    if abstract is None and not (lenient_display or membership_only or active_only):
        return PLAIN_CHECK
    return CheckOptions(
        abstract=abstract,
        lenient_display=lenient_display,
        membership_only=membership_only,
        active_only=active_only,
    )


def _target(valueset: Mapping[str, Any] | str | None, url: str | None) -> Mapping[str, Any] | str:
    """The value set of ``validate_code``: ``valueset``, else the deprecated ``url=``."""
    if url is not None:
        warnings.warn(
            "validate_code(url=...) is deprecated: name the value set valueset=... (a "
            "canonical URL or a ValueSet), as expand, validate_column and the widgets do",
            DeprecationWarning,
            stacklevel=3,
        )
    target = valueset if valueset is not None else url
    if target is None:
        raise InvalidRequestError("Give the value set: a canonical url or a ValueSet")
    return target


_CODING_KEYS = frozenset({"system", "version", "code", "display", "userSelected", "id"})


def _item_names(validate_code: Callable[..., Any]) -> frozenset[str]:
    """The keywords an item of ``validate_codes`` may give (``validate_code``'s, but the
    value set and the request's resources)."""
    names = inspect.signature(validate_code).parameters
    return frozenset(names) - {"valueset", "tx_resources"}


def _item_keywords(item: Any) -> dict[str, Any]:
    """The ``validate_code`` keywords of one ``validate_codes`` item (a Coding or a dict of
    keywords); an item of neither kind is left for ``validate_code`` to refuse."""
    if not isinstance(item, Mapping):
        return {"coding": item}
    if set(item) <= _CODING_KEYS and "code" in item:
        return {"coding": dict(item)}
    return dict(item)


def _unvalidated(exc: WorkbenchError, given: Mapping[str, Any]) -> ValidationResult:
    """The answer of an item that could not be validated: result=False with the error."""
    coding = given.get("coding")
    coding = coding if isinstance(coding, Mapping) else {}
    code, system = (
        given.get("code") or coding.get("code"),
        given.get("system") or coding.get("system"),
    )
    text, issue = exc.text, exc.tx or exc.code
    return ValidationResult(
        False,
        text,
        None,
        code=code if isinstance(code, str) else None,
        system=system if isinstance(system, str) else None,
        issue=issue,
    )
