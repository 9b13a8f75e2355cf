"""What an operation is: its definition, the inputs it honours, and a pure ``run``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.errors import NotSupportedError, RequiredError
from workbench.operations.caching import within_cache
from workbench.operations.codec import IGNORED
from workbench.operations.definitions import OperationDef
from workbench.resources import Resource
from workbench.terminology.params import parameter_names
from workbench.terminology.requests import ACCEPT_LANGUAGE, Request

if TYPE_CHECKING:
    from workbench.service import TerminologyService
    from workbench.terminology.client_caches import ClientCaches
    from workbench.terminology.closure import ClosureTables

__all__ = [
    "ACCEPT_LANGUAGE",
    "Inputs",
    "NothingGivenError",
    "Operation",
    "honoured",
    "one_of",
    "target_valueset",
]

Inputs = dict[str, Any]
Runner = Callable[["TerminologyService", Inputs, "Resource | None"], dict[str, Any]]
#: Where the client caches and the ``X-Cache-Id`` header reach a ``with_caches`` operation.
CACHES = "#caches"
CACHE_HEADER = "X-Cache-Id"
#: Where the server's closure tables reach a ``with_closures`` operation (``$closure``).
CLOSURES = "#closures"


@dataclass(frozen=True)
class Operation:
    """An operation: run(workbench, inputs, resource) returns the output values by name.

    ``resource`` is the instance an instance-level call names. ``supported`` lists the
    inputs the operation honours; a defined input outside it is refused as not-supported
    rather than silently ignored. ``blocking`` operations may take long (an expansion), so
    the server runs them off the event loop. A ``cached`` operation runs within the
    client cache its call names (``caching.within_cache``); a ``with_caches`` one (such
    as ``$cache-control``) is given the caches and the header id as ``inputs[CACHES]``
    and ``inputs[CACHE_HEADER]``. A ``many`` operation (``$batch-validate-code``) is many
    cheap calls whose engine caches later calls use: the server runs it in its own process
    (a worker thread), never in a forked child, even when its body is large. A
    ``with_closures`` one (``$closure``) is given the server's closure tables as
    ``inputs[CLOSURES]``; it changes them, so it too runs in the server's process. A
    ``memo`` operation reads and answers from the request and the loaded content alone
    (no time, no identifiers made per call), so the server may give the body of an answer
    again to the same GET while the content is unchanged (``server.answer_memo``).
    """

    definition: OperationDef
    runner: Runner
    supported: frozenset[str]
    blocking: bool = False
    cached: bool = False
    with_caches: bool = False
    many: bool = False
    with_closures: bool = False
    memo: bool = False

    def run(
        self,
        workbench: TerminologyService,
        inputs: Inputs,
        resource: Resource | None = None,
        *,
        accept_language: str | None = None,
        caches: ClientCaches | None = None,
        cache_id: str | None = None,
        closures: ClosureTables | None = None,
    ) -> dict[str, Any]:
        """Check the inputs against what is supported, then run. ``accept_language`` is the
        HTTP Accept-Language header, which the runner reads as ``inputs[ACCEPT_LANGUAGE]``;
        ``caches`` the server's client caches, ``cache_id`` the ``X-Cache-Id`` header,
        ``closures`` its closure tables.
        Unknown inputs a lenient read ignored (``codec.IGNORED``) are named in an
        information issue of the answer (``note_ignored``)."""
        ignored: tuple[str, ...] = ()
        if IGNORED in inputs:
            inputs = dict(inputs)
            ignored = inputs.pop(IGNORED)
        if self.cached:
            workbench, inputs = within_cache(workbench, inputs, caches, cache_id)
        if not self.supported.issuperset(inputs):
            unsupported = sorted(set(inputs) - self.supported)
            raise NotSupportedError(
                f"${self.definition.code}: parameter(s) {', '.join(unsupported)} are defined "
                "by FHIR but not supported by this server"
            )
        if accept_language:
            inputs = {**inputs, ACCEPT_LANGUAGE: accept_language}
        if self.with_caches:
            inputs = {**inputs, CACHES: caches, CACHE_HEADER: cache_id}
        if self.with_closures:
            inputs = {**inputs, CLOSURES: closures}
        outputs = self.runner(workbench, inputs, resource)
        return note_ignored(self.definition, outputs, ignored) if ignored else outputs


#: R4's ValueSet extension for a warning about the value set's use: where an ``$expand``
#: answer (a bare ValueSet) names the parameters it ignored.
VALUESET_WARNING = "http://hl7.org/fhir/StructureDefinition/valueset-warning"


def ignored_issue(definition: OperationDef, names: Iterable[str]) -> dict[str, Any]:
    """The information issue naming the unknown parameters a request sent."""
    listed = ", ".join(f"'{n}'" for n in names)
    return {
        "severity": "information",
        "code": "not-supported",
        "details": {
            "text": f"${definition.code} ignored the unknown parameter(s) {listed} (send "
            "'Prefer: handling=strict' to have them refused)"
        },
    }


def note_ignored(
    definition: OperationDef, outputs: dict[str, Any], names: tuple[str, ...]
) -> dict[str, Any]:
    """The outputs with an information issue that names the ignored parameters: in the
    ``issues`` OperationOutcome of a Parameters answer, or as a ``valueset-warning`` of an
    ``$expand`` ValueSet."""
    issue = ignored_issue(definition, names)
    if "issues" not in definition.outputs and "return" not in definition.outputs:
        return outputs  # (every definition of this server declares one of the two)
    returned = outputs.get("return")
    if isinstance(returned, Mapping) and returned.get("resourceType") == "ValueSet":
        text = issue["details"]["text"]
        extension = [
            *returned.get("extension", []),
            {"url": VALUESET_WARNING, "valueMarkdown": text},
        ]
        return {**outputs, "return": {**returned, "extension": extension}}
    existing = outputs.get("issues")
    if isinstance(existing, Mapping):
        outcome = {**existing, "issue": [*existing.get("issue", []), issue]}
    else:
        outcome = {"resourceType": "OperationOutcome", "issue": [issue]}
    return {**outputs, "issues": outcome}


def honoured(
    definition: OperationDef, request: type[Request], own: Iterable[str]
) -> frozenset[str]:
    """The inputs an operation supports: those its request object reads and those it
    consumes itself (``own``), as far as its definition defines them."""
    return (parameter_names(request) | frozenset(own)) & frozenset(definition.inputs)


def target_valueset(inputs: Mapping[str, Any], resource: Resource | None) -> Any:
    """The value set an operation works on: inline ``valueSet``, ``url``, or the instance.

    When both ``url`` and an instance are given they must agree.
    """
    url = inputs.get("url")
    if inputs.get("valueSet") is not None:
        if url is not None or resource is not None:
            raise RequiredError("Give the value set once: 'valueSet', 'url' or an instance")
        return inputs["valueSet"]
    if resource is not None:
        if url is not None and url != resource.get("url"):
            raise RequiredError(  # (a rule between inputs: the document states it)
                f"The 'url' parameter ({url}) does not match the ValueSet instance "
                f"({resource.get('url')})"
            )
        return resource
    if url is None:
        raise RequiredError(
            "Parameter 'url' is required when the operation is not called on a ValueSet "
            "instance (or give 'valueSet')"
        )
    return url


class NothingGivenError(RequiredError):
    """A call names none of the inputs it works on (no code, Coding or CodeableConcept):
    a ``$batch-validate-code`` entry of that kind answers an OperationOutcome in its place."""


def one_of(inputs: Mapping[str, Any], names: tuple[str, ...], what: str) -> str:
    """Return the single name of ``names`` present in inputs; NothingGivenError when none,
    RequiredError when several."""
    given = [n for n in names if inputs.get(n) is not None]
    if not given:
        raise NothingGivenError(f"Nothing to {what}: give {', '.join(names[:-1])} or {names[-1]}")
    if len(given) > 1:  # (a rule between inputs: the document states it)
        raise RequiredError(f"Give only one of {', '.join(given)}")
    return given[0]
