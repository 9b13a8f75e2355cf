"""FHIRPath: the expressions of SQL on FHIR views, parsed with lark into ``nodes``."""
