"""Small, pure helpers about FHIR resources: canonicals, versions, codings.

Version ordering (used whenever a canonical URL is asked for without a version, so that
"the latest version wins"):

1. If every version of the URL parses as semantic versioning (``1.2``, ``1.2.3``,
   ``1.2.3-ballot``), the highest semantic version wins; a pre-release sorts before its
   release.
2. Otherwise, if every version's resource has a ``date``, the latest ``date`` wins (ties broken
   by the version string).
3. Otherwise the lexically greatest version string wins.

A resource without a version sorts below every versioned one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

Resource = dict[str, Any]

_SEMVER = re.compile(
    r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$"
)


def split_canonical(canonical: str) -> tuple[str, str | None]:
    """Split ``url|version`` into ``(url, version)``.

    >>> split_canonical("http://hl7.org/fhir/ValueSet/administrative-gender|4.0.1")
    ('http://hl7.org/fhir/ValueSet/administrative-gender', '4.0.1')
    >>> split_canonical("http://example.org/vs")
    ('http://example.org/vs', None)

    An implicit ECL value set keeps its ECL whole, ``|term|`` pairs included (its edition
    goes before the ``?``, not after a ``|``):

    >>> split_canonical("http://snomed.info/sct?fhir_vs=ecl/<< 64572001 |Disease|")
    ('http://snomed.info/sct?fhir_vs=ecl/<< 64572001 |Disease|', None)
    """
    if "?fhir_vs=ecl/" in canonical:
        return canonical, None
    url, sep, version = canonical.partition("|")
    return url, (version or None) if sep else None


def canonical_of(resource: Mapping[str, Any]) -> str:
    """Return ``url|version`` of a resource (or just ``url`` when it has no version)."""
    url = str(resource.get("url", ""))
    version = resource.get("version")
    return f"{url}|{version}" if version else url


def semver_key(version: str) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]] | None:
    """Return a sort key for a semantic version, or None when it does not parse.

    >>> semver_key("1.0.0-ballot") < semver_key("1.0.0") < semver_key("1.10.0")
    True
    """
    match = _SEMVER.match(version.strip())
    if match is None:
        return None
    major, minor, patch, pre = match.groups()
    release = (int(major), int(minor or 0), int(patch or 0))
    if pre is None:
        return (*release, 1, ())
    parts = tuple((0, int(p)) if p.isdigit() else (1, p) for p in pre.split("."))
    return (*release, 0, parts)


def latest(resources: Iterable[Resource]) -> Resource | None:
    """Pick the latest version among resources that share a canonical URL.

    See the module docstring for the ordering rules.
    """
    items = list(resources)
    if not items:
        return None
    versioned = [r for r in items if r.get("version")]
    if not versioned:
        return items[-1]
    declared = {version_algorithm(r) for r in versioned}
    algorithm = declared.pop() if len(declared) == 1 else None
    if algorithm in _ALGORITHMS:
        return max(versioned, key=lambda r: _ALGORITHMS[algorithm](str(r["version"])))
    versions = [str(r["version"]) for r in versioned]
    semvers = [semver_key(v) for v in versions]
    if all(k is not None for k in semvers):
        best = max(range(len(versioned)), key=lambda i: semvers[i])  # type: ignore[arg-type,return-value]
        return versioned[best]
    if all(r.get("date") for r in versioned):
        return max(versioned, key=lambda r: (str(r["date"]), str(r["version"])))
    return max(versioned, key=lambda r: str(r["version"]))


VERSION_ALGORITHM_EXTENSIONS = tuple(
    f"http://hl7.org/fhir/5.0/StructureDefinition/extension-{t}.versionAlgorithm"
    for t in ("CodeSystem", "ValueSet", "ConceptMap")
)


def version_algorithm(resource: Mapping[str, Any]) -> str | None:
    """The declared version algorithm (``semver``, ``integer``, ``alpha``, ``date``,
    ``natural``): R5's ``versionAlgorithm[x]`` or its R4 cross-version extension."""
    for key in ("versionAlgorithmString", "versionAlgorithmCoding"):
        if key in resource:
            value = resource[key]
            return str(value.get("code") if isinstance(value, Mapping) else value)
    for ext in resource.get("extension", ()) or ():
        if isinstance(ext, Mapping) and ext.get("url") in VERSION_ALGORITHM_EXTENSIONS:
            value = ext.get("valueCoding") or ext.get("valueString")
            return str(value.get("code") if isinstance(value, Mapping) else value)
    return None


def _natural_key(version: str) -> tuple[tuple[int, int | str], ...]:
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.findall(r"\d+|\D+", version)
    )


def _integer_key(version: str) -> tuple[int, int | str]:
    return (0, int(version)) if version.strip().lstrip("-").isdigit() else (1, version)


def _semver_or_natural(version: str) -> tuple[int, Any]:
    key = semver_key(version)
    return (1, key) if key is not None else (0, _natural_key(version))


_ALGORITHMS: dict[str, Any] = {
    "semver": _semver_or_natural,
    "integer": _integer_key,
    "alpha": str,
    "date": str,  # ISO dates (and partial ones) sort as text
    "natural": _natural_key,
}
