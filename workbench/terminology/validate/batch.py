"""How ``validate_code`` decides: ``CodingCheck``, for one coding or a batch of them.

A request is resolved once (its value set compiled, its switches, languages and
supplements read); each coding is then decided by ``coding`` (``validate_in_valueset``
under the request's version policy) and given the status notes of the resources it used
(``noted``). A single ``$validate-code`` asks one coding; a column, a batch or a view asks
``codes``: many codes of one system, the plainly valid members among them answered at
once from the value set's ``PlainMembers`` (the same rule ``validate_in_valueset`` ends
with, ``plain.plain_member``) and every other code by ``coding``, one by one. No other
code decides a coding.

>>> from workbench import Workbench
>>> from workbench.terminology.requests import ValidateRequest
>>> wb = Workbench()
>>> _ = wb.load({"resourceType": "CodeSystem", "url": "http://x", "content": "complete",
...     "concept": [{"code": "a", "display": "A"}]})
>>> vs = {"resourceType": "ValueSet", "compose": {"include": [{"system": "http://x"}]}}
>>> check = CodingCheck(wb.terminology, ValidateRequest(valueset=vs))
>>> decided = check.codes("http://x", np.array(["a", "b"], dtype=object))
>>> decided.column("result").tolist(), decided.column("issue").tolist()
([True, False], [None, 'unknown-code'])
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from workbench.errors import ImportedValueSetNotFoundError, InvalidRequestError, WorkbenchError
from workbench.frozen import replaced
from workbench.terminology.compose import UNUSABLE_CONTENT, CompiledValueSet
from workbench.terminology.membership import non_member, non_member_messages, why_not_members
from workbench.terminology.provider import CodeSystemProvider
from workbench.terminology.requests import ValidateRequest
from workbench.terminology.result import ValidationResult, failure
from workbench.terminology.validate.coding import (
    CheckOptions,
    coding_parts,
    combine_codings,
    located,
    validate_in_valueset,
    where_of,
    without_system,
)
from workbench.terminology.validate.plain import Plain, PlainMembers, plain_result
from workbench.terminology.versions import VersionPolicy

T = TypeVar("T")
Parts = Mapping[str, "str | None"]
PerValueSet = Callable[[Hashable, Callable[[], Any]], Any]


class CheckingEngine(Protocol):
    """What ``CodingCheck`` asks of the engine (``validate.engine.Validating``)."""

    def compiled(
        self, valueset: str | Mapping[str, Any], version: str | None, policy: VersionPolicy
    ) -> CompiledValueSet: ...

    def memo(self, compiled: CompiledValueSet, key: Hashable, factory: Callable[[], T]) -> T: ...

    def codesystem(self, url: str, version: str | None = None) -> CodeSystemProvider | None: ...

    def codesystem_versions(self, url: str) -> list[str]: ...

    def is_valueset(self, url: str) -> bool: ...

    def check_options(
        self, req: ValidateRequest, resource: Mapping[str, Any], per_valueset: PerValueSet
    ) -> CheckOptions: ...

    def with_status_notes(
        self,
        result: ValidationResult,
        resource: Mapping[str, Any],
        first: CompiledValueSet | None,
        per_valueset: PerValueSet,
    ) -> ValidationResult: ...


class CodingCheck:
    """``validate_code``'s decision for the codings of one request (its code, coding or
    codeable concept are not read: ``answer`` reads them; ``coding`` and ``codes`` take
    others). Raises ValueSetNotFoundError (and the other errors of compiling the value
    set) when made; a value set it imports that cannot be found is an answer instead."""

    def __init__(self, engine: CheckingEngine, req: ValidateRequest) -> None:
        self.engine = engine
        self.req = req
        self.missing: ImportedValueSetNotFoundError | None = None
        self._base: CompiledValueSet | None = None
        self._plain: PlainMembers | None = None
        try:
            self.first = (
                None
                if not isinstance(req.valueset, str) and isinstance(req.valueset, Mapping)
                else engine.compiled(req.valueset, req.valueset_version, req.policy)
            )
        except ImportedValueSetNotFoundError as exc:
            self.missing, self.first = exc, None
        self.resource: Mapping[str, Any] = (
            self.first.resource
            if self.first is not None
            else req.valueset
            if isinstance(req.valueset, Mapping)
            else {"url": req.valueset}
        )
        self.opts = engine.check_options(req, self.resource, self.per_valueset)

    def per_valueset(self, key: Hashable, factory: Callable[[], T]) -> T:
        """What depends on the value set alone: remembered while it stays compiled."""
        return factory() if self.first is None else self.engine.memo(self.first, key, factory)

    @property
    def base(self) -> CompiledValueSet:
        """The value set compiled under the request's own version policy."""
        if self._base is None:
            req = self.req
            self._base = self.first or self.engine.compiled(
                req.valueset, req.valueset_version, req.policy
            )
        return self._base

    # --- one request ------------------------------------------------------------------

    def answer(self, req: ValidateRequest) -> ValidationResult:
        """The answer to ``req`` (this check's request, or one that differs from it only
        in what it validates): its code, its Coding or its CodeableConcept, noted."""
        try:
            if self.missing is not None:
                raise self.missing
            if req.codeable_concept is not None:
                codings = req.codeable_concept.get("coding") or []
                if not codings:
                    raise InvalidRequestError("The codeableConcept has no coding to validate")
                found = self.noted(self.concept([coding_parts(c) for c in codings]))
                return replaced(found, concept=req.codeable_concept)
            if req.coding is not None:
                coding = req.coding
                if req.display is not None:
                    coding = {**coding, "display": req.display}
                return self.noted(self.coding(coding_parts(coding), "Coding"))
            given = {"code": req.code, "system": req.system, "version": req.version}
            return self.noted(self.coding({**given, "display": req.display}, "", coding=False))
        except ImportedValueSetNotFoundError as exc:
            given = coding_parts(req.coding) if req.coding is not None else {}
            return _import_missing(
                exc,
                {
                    "code": req.code or given.get("code"),
                    "system": req.system or given.get("system"),
                    "version": req.version or given.get("version"),
                },
            )

    def concept(self, codings: Sequence[Parts]) -> ValidationResult:
        """A CodeableConcept of these codings (at least one), before its notes. Raises
        ImportedValueSetNotFoundError for an import that cannot be found."""
        where = f"the value set '{self.base.canonical}'"
        return combine_codings([self.coding(c, "") for c in codings], where)

    def coding(self, parts: Parts, path: str, coding: bool = True) -> ValidationResult:
        """One coding (``code``, ``system``, ``version``, ``display``; ``coding``: given as
        a Coding, whose system is never inferred) found at ``path``, before its notes.
        Raises ImportedValueSetNotFoundError for an import that cannot be found."""
        if self.missing is not None:
            raise self.missing
        return self._coding(parts, path, coding)

    def settled(self, parts: Parts, path: str = "", coding: bool = True) -> ValidationResult:
        """``coding``, noted, with a missing import as its answer (what a batch gives each
        of its codings)."""
        try:
            return self.noted(self.coding(parts, path, coding))
        except ImportedValueSetNotFoundError as exc:
            return _import_missing(exc, parts)

    def _coding(self, parts: Parts, path: str, coding: bool) -> ValidationResult:
        code, system = parts.get("code"), parts.get("system")
        if coding and code and not system:  # a Coding without a system means nothing (a5)
            return located(without_system(self.base, str(code)), path)
        req, used = self.req, self.req.policy
        wanted = parts.get("version")
        if wanted and system and system not in used.force:
            used = used.with_default(system, wanted)
        compiled = (
            self.base
            if used is req.policy
            else self.engine.compiled(req.valueset, req.valueset_version, used)
        )
        result = validate_in_valueset(
            compiled,
            self.engine.codesystem,
            code=code,
            system=system,
            version=wanted,
            display=parts.get("display"),
            options=self.opts,
            versions=self.engine.codesystem_versions,
            is_valueset=self.engine.is_valueset,
        )
        return located(result, path)

    def noted(self, result: ValidationResult) -> ValidationResult:
        """``result`` with the status notes of the resources it used (d5)."""
        return self.engine.with_status_notes(result, self.resource, self.first, self.per_valueset)

    # --- many codes ---------------------------------------------------------------------

    def plain_members(self) -> PlainMembers:
        """The value set's plainly valid members under this request's switches, kept with
        the compiled value set (none when it cannot be expanded: every code is then
        decided in full)."""
        if self._plain is None:
            opts, base = self.opts, self.base
            key = ("plain", opts.abstract is False and not opts.membership_only)
            try:
                self._plain = (
                    self.engine.memo(self.first, key, lambda: PlainMembers.of(base, opts))
                    if self.first is not None
                    else PlainMembers.of(base, opts)
                )
            except WorkbenchError:  # not expandable (a grammar, an incomplete code system)
                self._plain = PlainMembers({}, complete=False)
        return self._plain

    def codes(self, system: str | None, codes: np.ndarray) -> Decided:
        """The answers of distinct codes (an object array of str, none missing) of
        ``system`` (None: codes given without a system, inferred from the value set),
        without display or version: each as ``answer`` would give it."""
        n = len(codes)
        outside: Outside | None = None
        rest = np.arange(n)
        if system is not None and n and self.missing is None:
            hit, displays, versions, out = self.plain_members().lookup(system, codes)
            outside = self._outside(system, codes, np.flatnonzero(out & ~hit))
            rest = np.flatnonzero(~hit)
            if outside is not None:
                rest = np.setdiff1d(rest, outside.at, assume_unique=True)
        else:
            hit = np.zeros(n, dtype=bool)
            displays, versions = np.empty(n, dtype=object), np.empty(n, dtype=object)
        full = {
            int(i): self.settled({"code": str(codes[i]), "system": system}, "", False) for i in rest
        }
        return Decided(self, system, codes, hit, displays, versions, full, outside)

    def _outside(self, system: str, codes: np.ndarray, at: np.ndarray) -> Outside | None:
        """The codes at ``at``, no member of the value set, answered at once: what
        ``validate_in_valueset`` says of each (``why_not_members`` then ``non_member``, as
        its refusal of a non-member does), for a code system that matches codes exactly and
        has no grammar of expressions for them; None leaves them to ``coding``."""
        base = self.base
        drawn = base.included_versions(system)
        cs = self.engine.codesystem(system, drawn[0] if len(drawn) == 1 else None)
        if (
            not len(at)
            or self.opts.membership_only
            or cs is None
            or not cs.case_sensitive
            or cs.synonymous_codes
            or not cs.is_complete
            or cs.content in (*UNUSABLE_CONTENT, "fragment")
        ):
            return None
        asked = [str(c) for c in codes[at]]
        if cs.expressions:  # a post-coordinated expression is checked in full
            kept = [i for i, code in enumerate(asked) if not cs.is_expression(code)]
            at, asked = at[kept], [asked[i] for i in kept]
        where = where_of(base)
        reasons, causes, shown = why_not_members(where, cs, system, asked, base.inactive_allowed)
        messages = non_member_messages(reasons, causes, asked, system, where)
        return Outside(at, asked, reasons, causes, messages, shown, cs, system, where)


@dataclass
class Outside:
    """Codes surely outside the value set, answered at once (see ``CodingCheck._outside``):
    their columns as lists; the whole answer of one (``non_member``'s, noted) made when
    asked."""

    at: np.ndarray
    codes: list[str]
    reasons: list[str]
    causes: list[str]
    messages: list[str]
    displays: list[str | None]
    cs: CodeSystemProvider
    system: str
    where: str

    def column(self, name: str) -> list[Any] | None:
        """One field of every answer, when it is one of the columns kept (else None)."""
        n = len(self.codes)
        found: dict[str, Any] = {
            "result": [False] * n,
            "message": self.messages,
            "display": self.displays,
            "issue": self.reasons,
            "code": self.codes,
            "system": [self.system] * n,
            "version": [self.cs.version] * n,
        }
        return found.get(name)

    def result(self, k: int, check: CodingCheck) -> ValidationResult:
        """The whole answer of the ``k``-th code."""
        found = non_member(
            self.reasons[k],
            self.causes[k],
            self.cs,
            self.codes[k],
            self.system,
            self.displays[k],
            self.where,
        )
        return check.noted(found)


@dataclass
class Decided:
    """The answers of ``CodingCheck.codes``: the plainly valid codes as arrays (their
    answers share everything but the code, display and version), the others in full."""

    check: CodingCheck
    system: str | None
    codes: np.ndarray
    plain: np.ndarray
    displays: np.ndarray
    versions: np.ndarray
    full: dict[int, ValidationResult]
    outside: Outside | None = None
    _shared: dict[str | None, ValidationResult] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.codes)

    def shared(self, version: str | None) -> ValidationResult:
        """What every plainly valid answer of ``version`` says besides its code and display
        (its status notes included)."""
        found = self._shared.get(version)
        if found is None:
            plain = plain_result(Plain(None, version), "", str(self.system))
            found = self._shared[version] = self.check.noted(plain)
        return found

    def result(self, i: int) -> ValidationResult:
        """The answer of ``codes[i]``."""
        found = self.full.get(i)
        if found is not None:
            return found
        if self.outside is not None and not self.plain[i]:
            k = int(np.searchsorted(self.outside.at, i))
            return self.outside.result(k, self.check)
        shared = self.shared(self.versions[i])
        return replaced(shared, code=str(self.codes[i]), display=self.displays[i])

    def column(self, name: str) -> np.ndarray:
        """One field of every answer (a ``ValidationResult`` attribute), as an object
        array."""
        out = np.empty(len(self.codes), dtype=object)
        for i, found in self.full.items():
            out[i] = getattr(found, name)
        if self.outside is not None and len(self.outside.at):
            kept = self.outside.column(name)
            if kept is None:  # another field: the whole answers, one by one
                kept = [getattr(self.result(int(i)), name) for i in self.outside.at]
            out[self.outside.at] = np.array(kept, dtype=object)
        if name in ("code", "display"):
            out[self.plain] = (self.codes if name == "code" else self.displays)[self.plain]
            return out
        at = np.flatnonzero(self.plain)
        versions = self.versions[at].tolist()
        distinct = list(dict.fromkeys(versions))
        for version in distinct:  # (one, unless the value set draws on several versions)
            value = getattr(self.shared(version), name)
            if len(distinct) == 1:
                out[at] = value
            else:
                out[at[np.fromiter((v == version for v in versions), bool, len(at))]] = value
        return out


def _import_missing(exc: ImportedValueSetNotFoundError, parts: Parts) -> ValidationResult:
    """The answer when a value set that the value set imports cannot be found: result=false
    with a ``not-found`` issue about no input element (a11)."""
    return failure(
        "unknown-valueset",
        f"A definition for the value set '{exc.reference}' could not be found ("
        + (exc.detail or f"imported by {exc.importer}")
        + "), so the code cannot be validated",
        code=parts.get("code"),
        system=parts.get("system"),
        version=parts.get("version"),
    )
