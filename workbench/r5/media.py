"""The ``fhirVersion`` parameter of a FHIR media type (FHIR R5 http.html, "FHIR Version
parameter"): ``application/fhir+json; fhirVersion=5.0`` names the release a body is in, or
the one a client wants back. Its value is the release's major.minor version (``4.0``,
``5.0``); a full version (``5.0.0``, ``4.0.1``) is read as its major.minor, as HAPI's
``EncodingEnum`` and the HL7 validator's client send either."""

from __future__ import annotations

R4 = "4.0"
R5 = "5.0"
#: The releases this server speaks, by their major.minor version.
KNOWN = (R4, R5)
#: The full version each release's CapabilityStatement.fhirVersion states.
FULL = {R4: "4.0.1", R5: "5.0.0"}


def _major_minor(value: str) -> str:
    parts = value.strip().strip('"').split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else value.strip()


def fhir_version(header: str | None) -> str | None:
    """The ``fhirVersion`` a Content-Type or Accept header names (major.minor, e.g. ``5.0``),
    or None when it names none. Of an Accept listing several media types, the first that
    names a version wins (a client asks for one release).

    >>> fhir_version("application/fhir+json; fhirVersion=5.0.0")
    '5.0'
    >>> fhir_version("application/fhir+json;q=0.9, application/json") is None
    True
    """
    if not header or "fhirversion" not in header.lower():
        return None
    for item in header.split(","):
        for param in item.split(";")[1:]:
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "fhirversion":
                return _major_minor(value)
    return None
