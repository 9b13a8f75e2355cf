"""``EngineService``: the terminology calls, one typed method per request object.

It holds the Registry and the Terminology engine and answers what the operations (and so
the server) and the ``Workbench`` facade ask, given the request they built once at their
edge (``workbench.terminology.requests``). It implements ``workbench.service.
TerminologyService``; no web or widget import reaches it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench.errors import WorkbenchError
from workbench.registry import Registry
from workbench.resources import Resource
from workbench.terminology.compare.engine import compare
from workbench.terminology.compare.result import Comparison
from workbench.terminology.conceptmap import Translation, translate
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
from workbench.terminology.subsumption import subsumes
from workbench.terminology.validate.coding import ValidationResult


class EngineService:
    """The terminology calls over one Registry and its Terminology engine."""

    def __init__(self, registry: Registry, terminology: Terminology) -> None:
        self.registry = registry
        self.terminology = terminology

    @property
    def service(self) -> EngineService:
        """This service (what the server asks of whatever it is given to serve)."""
        return self

    def engine(self, tx_resources: Sequence[Mapping[str, Any]] = ()) -> Terminology:
        """The engine, or a view of it that sees ``tx_resources`` first (for one call:
        nothing is stored, nothing leaks into other calls)."""
        if not tx_resources:
            return self.terminology
        return self.terminology.with_resources(tx_resources)

    def validate(self, req: ValidateRequest) -> ValidationResult:
        """ValueSet ``$validate-code``: a failing code is ``result=False``, not an error."""
        return self.engine(req.tx_resources).validate_code(req)

    def validate_in_codesystem(self, req: CodeSystemValidateRequest) -> ValidationResult:
        """CodeSystem ``$validate-code`` of one code."""
        return self.engine(req.tx_resources).validate_in_codesystem(
            req.system,
            code=req.code,
            version=req.version,
            display=req.display,
            abstract=req.abstract,
            display_language=req.display_language,
            lenient_display=req.lenient_display,
        )

    def expand(self, req: ExpandRequest) -> Expansion:
        """ValueSet ``$expand``."""
        return self.engine(req.tx_resources).expand(req)

    def compare(self, req: CompareRequest) -> Comparison:
        """ValueSet ``$compare``: ``same``, ``subset``, ... or ``indeterminate``."""
        return compare(self.engine(req.tx_resources), req)

    def lookup(self, req: LookupRequest) -> LookupResult:
        """CodeSystem ``$lookup``: the display in the first wanted language the code system
        or its supplements have (else the concept's own: $lookup's display is required),
        designations and properties. Raises CodeSystemNotFoundError, UnknownCodeError or
        SupplementNotFoundError."""
        engine = self.engine(req.tx_resources)
        found = engine.require_codesystem(req.system, req.version)
        if req.use_supplements:
            engine.require_supplements(req.use_supplements, "$lookup")
        wanted = req.display_language or req.accept_language
        every = req.properties is None or "*" in req.properties  # ``property=*``: all of them
        properties = None if every else req.properties
        return found.lookup(req.code, properties=properties, display_language=wanted)

    def subsumes(self, req: SubsumesRequest) -> str:
        """CodeSystem ``$subsumes``: equivalent, subsumes, subsumed-by or not-subsumed."""
        found = self.engine(req.tx_resources).require_codesystem(req.system, req.version)
        return subsumes(found, req.code_a, req.code_b)

    def translate(self, req: TranslateRequest) -> Translation:
        """ConceptMap ``$translate`` through ``req.maps``, else the loaded maps."""
        return translate(
            self.conceptmaps_for(req.url) if req.maps is None else req.maps,
            code=req.code,
            system=req.system,
            url=req.url,
            source=req.source,
            target=req.target,
            conceptmap_version=req.conceptmap_version,
            target_system=req.target_system,
            reverse=req.reverse,
            dependencies=req.dependencies,
            display_of=self.display_of,
        )

    def conceptmaps_for(self, url: str | None = None) -> list[Resource]:
        """The loaded ConceptMaps, with the implicit one ``url`` names when it is not stored
        (``http://snomed.info/sct?fhir_cm={refsetId}`` of a loaded SNOMED CT release)."""
        stored = self.registry.all("ConceptMap")
        if url is None:
            return stored
        plain = url.partition("|")[0]
        if any(m.get("url") == plain for m in stored):
            return stored
        implicit = self.terminology.implicit_conceptmap(plain)
        return stored if implicit is None else [*stored, implicit]

    def display_of(self, system: str, code: str) -> str | None:
        """The display of ``code`` in the loaded code system ``system`` (None when either
        is unknown): what ``$translate`` shows for a target code."""
        try:
            return self.lookup(LookupRequest(system=system, code=code)).display
        except WorkbenchError:
            return None
