"""SNOMED CT from its RF2 release files: reader, store, closure, ECL and expressions."""
