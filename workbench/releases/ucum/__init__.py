"""UCUM (http://unitsofmeasure.org): always available, by its grammar and unit table."""
