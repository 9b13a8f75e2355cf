"""Code systems FHIR binds to that no package ships, built in: BCP-47 language tags,
BCP-13 media types, ISO 3166 countries and subdivisions, ISO 4217 currencies."""
