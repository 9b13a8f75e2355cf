"""SQL on FHIR v2 ViewDefinitions, compiled into vectorised column operations."""
