"""ICD-10-CM from the CMS tabular XML release (``icd10cm_tabular_*.xml`` or a zip of it)."""
