"""The typed interface through which the operations and the server use the engine.

``workbench.terminology.service.EngineService`` implements it; the ``Workbench`` facade
holds one (``Workbench.service``) and calls it too. ``workbench.operations`` and
``workbench.server`` depend on this protocol only, never on ``workbench.workbench``, so the
facade can import the server (lazily, in ``Workbench.serve``) without an import cycle, and
a request goes from the operation straight to the engine. Each method takes the request
object the caller built once (``workbench.terminology.requests``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from workbench.registry import Registry
    from workbench.resources import Resource
    from workbench.terminology.compare.result import Comparison
    from workbench.terminology.conceptmap import Translation
    from workbench.terminology.engine import Terminology
    from workbench.terminology.expand.expansion import Expansion
    from workbench.terminology.lookup import LookupResult
    from workbench.terminology.requests import (
        CodeSystemValidateRequest,
        CompareRequest,
        ExpandRequest,
        LookupRequest,
        SubsumesRequest,
        TranslateRequest,
        ValidateRequest,
    )
    from workbench.terminology.validate.coding import ValidationResult


class TerminologyService(Protocol):
    """What an operation or the server asks of the engine."""

    @property
    def registry(self) -> Registry:
        """The stored resources."""

    @property
    def terminology(self) -> Terminology:
        """The terminology engine (code systems from release files, caches)."""

    def engine(self, tx_resources: Sequence[Mapping[str, Any]] = ()) -> Terminology:
        """The engine, or a view of it that sees ``tx_resources`` first (one call's)."""

    def validate(self, req: ValidateRequest) -> ValidationResult:
        """ValueSet ``$validate-code``."""

    def validate_in_codesystem(self, req: CodeSystemValidateRequest) -> ValidationResult:
        """CodeSystem ``$validate-code`` of one code."""

    def expand(self, req: ExpandRequest) -> Expansion:
        """ValueSet ``$expand``."""

    def compare(self, req: CompareRequest) -> Comparison:
        """ValueSet ``$compare``."""

    def lookup(self, req: LookupRequest) -> LookupResult:
        """CodeSystem ``$lookup``."""

    def subsumes(self, req: SubsumesRequest) -> str:
        """CodeSystem ``$subsumes``: the outcome code."""

    def translate(self, req: TranslateRequest) -> Translation:
        """ConceptMap ``$translate``."""

    def conceptmaps_for(self, url: str | None = None) -> list[Resource]:
        """The loaded ConceptMaps, with the implicit one ``url`` names."""


@runtime_checkable
class ServiceHolder(Protocol):
    """Something that holds a service (a ``Workbench``: what ``create_app`` is often
    given)."""

    @property
    def service(self) -> TerminologyService:
        """The service it holds."""


def service_of(given: TerminologyService | ServiceHolder) -> TerminologyService:
    """The service itself, or the one ``given`` holds (the server is handed either)."""
    return given.service if isinstance(given, ServiceHolder) else given
