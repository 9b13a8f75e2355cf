"""FHIR R5 beside R4: resources and operation Parameters converted both ways.

The engine speaks R4. An R5 request is converted to R4, answered by the same operation code,
and its answer converted back to R5 (``workbench.server.r5`` does this around the app): one
implementation of each operation, two wire forms.

- ``convert``: ``to_r4`` / ``to_r5`` of a resource (ConceptMap, ValueSet, CodeSystem,
  CapabilityStatement, TerminologyCapabilities, and the resources nested in Parameters,
  Bundles and ``contained``); any other element passes unchanged, so nothing is lost.
- ``conceptmap``: ConceptMap's R4/R5 differences (equivalence / relationship, source /
  sourceScope, dependsOn / attribute), as HL7's version convertors (``ConceptMap40_50`` of
  org.hl7.fhir.core) and FHIRsmith's ``xv-conceptmap.js`` do them.
- ``xver``: R5-only elements, carried in R4 as the cross-version extensions
  ``http://hl7.org/fhir/5.0/StructureDefinition/extension-{path}`` (what the tx ecosystem's
  R4 page shows for ``ValueSet.expansion.property``).
- ``operations``: R5's operation parameters (``$translate``'s ``sourceScope``,
  ``targetCodeableConcept``, ``dependency.attribute``; ``match.relationship`` out).
- ``media``: the ``fhirVersion`` parameter of a media type (FHIR http.html, "FHIR Version
  parameter").
"""

from __future__ import annotations

from workbench.r5.convert import to_r4, to_r5
from workbench.r5.media import R4, R5, fhir_version

__all__ = ["R4", "R5", "fhir_version", "to_r4", "to_r5"]
