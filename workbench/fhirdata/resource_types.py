"""The FHIR R4 (4.0.1) resource types: every StructureDefinition of kind ``resource`` that is
not abstract (``Resource`` and ``DomainResource`` are), 146 names.

``tests/test_fhirdata_types.py`` checks the tuple against the StructureDefinitions of the
``hl7.fhir.r4.examples`` package.

>>> is_resource_type("Observation"), is_resource_type("Observations")
(True, False)
"""

from __future__ import annotations

# fmt: off
R4_RESOURCE_TYPES: tuple[str, ...] = (
    "Account", "ActivityDefinition", "AdverseEvent", "AllergyIntolerance", "Appointment",
    "AppointmentResponse", "AuditEvent", "Basic", "Binary", "BiologicallyDerivedProduct",
    "BodyStructure", "Bundle", "CapabilityStatement", "CarePlan", "CareTeam", "CatalogEntry",
    "ChargeItem", "ChargeItemDefinition", "Claim", "ClaimResponse", "ClinicalImpression",
    "CodeSystem", "Communication", "CommunicationRequest", "CompartmentDefinition",
    "Composition", "ConceptMap", "Condition", "Consent", "Contract", "Coverage",
    "CoverageEligibilityRequest", "CoverageEligibilityResponse", "DetectedIssue", "Device",
    "DeviceDefinition", "DeviceMetric", "DeviceRequest", "DeviceUseStatement",
    "DiagnosticReport", "DocumentManifest", "DocumentReference", "EffectEvidenceSynthesis",
    "Encounter", "Endpoint", "EnrollmentRequest", "EnrollmentResponse", "EpisodeOfCare",
    "EventDefinition", "Evidence", "EvidenceVariable", "ExampleScenario",
    "ExplanationOfBenefit", "FamilyMemberHistory", "Flag", "Goal", "GraphDefinition", "Group",
    "GuidanceResponse", "HealthcareService", "ImagingStudy", "Immunization",
    "ImmunizationEvaluation", "ImmunizationRecommendation", "ImplementationGuide",
    "InsurancePlan", "Invoice", "Library", "Linkage", "List", "Location", "Measure",
    "MeasureReport", "Media", "Medication", "MedicationAdministration", "MedicationDispense",
    "MedicationKnowledge", "MedicationRequest", "MedicationStatement", "MedicinalProduct",
    "MedicinalProductAuthorization", "MedicinalProductContraindication",
    "MedicinalProductIndication", "MedicinalProductIngredient", "MedicinalProductInteraction",
    "MedicinalProductManufactured", "MedicinalProductPackaged",
    "MedicinalProductPharmaceutical", "MedicinalProductUndesirableEffect", "MessageDefinition",
    "MessageHeader", "MolecularSequence", "NamingSystem", "NutritionOrder", "Observation",
    "ObservationDefinition", "OperationDefinition", "OperationOutcome", "Organization",
    "OrganizationAffiliation", "Parameters", "Patient", "PaymentNotice",
    "PaymentReconciliation", "Person", "PlanDefinition", "Practitioner", "PractitionerRole",
    "Procedure", "Provenance", "Questionnaire", "QuestionnaireResponse", "RelatedPerson",
    "RequestGroup", "ResearchDefinition", "ResearchElementDefinition", "ResearchStudy",
    "ResearchSubject", "RiskAssessment", "RiskEvidenceSynthesis", "Schedule", "SearchParameter",
    "ServiceRequest", "Slot", "Specimen", "SpecimenDefinition", "StructureDefinition",
    "StructureMap", "Subscription", "Substance", "SubstanceNucleicAcid", "SubstancePolymer",
    "SubstanceProtein", "SubstanceReferenceInformation", "SubstanceSourceMaterial",
    "SubstanceSpecification", "SupplyDelivery", "SupplyRequest", "Task",
    "TerminologyCapabilities", "TestReport", "TestScript", "ValueSet", "VerificationResult",
    "VisionPrescription",
)
# fmt: on

_TYPES = frozenset(R4_RESOURCE_TYPES)


def is_resource_type(name: object) -> bool:
    """Whether ``name`` is the name of a FHIR R4 resource type (case matters)."""
    return isinstance(name, str) and name in _TYPES
