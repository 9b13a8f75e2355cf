"""CodeSystem supplements (``content = supplement``): designations and properties that a
supplement adds to the concepts of the code system it names in ``supplements``
(``url`` for every version, or ``url|version`` for that version or version pattern).

A supplement is never a code system itself. Its additions are part of the supplemented code
system's index, so displays in other languages, designations and properties come from it in
expansions and $lookup. ValueSet/$validate-code takes a supplement's designations only when
the supplement is in scope: asked for by ``useSupplement`` or by the value set's
``valueset-supplement`` extension (issue 22, a7).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from workbench.resources import Resource, split_canonical
from workbench.terminology.versions import matches

SUPPLEMENT_EXTENSION = "http://hl7.org/fhir/StructureDefinition/valueset-supplement"


def is_supplement(resource: Mapping[str, Any]) -> bool:
    """True for a CodeSystem with ``content = supplement``."""
    return resource.get("content") == "supplement"


def supplements_of(base: Mapping[str, Any], candidates: Iterable[Resource]) -> list[Resource]:
    """The supplements among ``candidates`` that apply to the code system ``base``."""
    url, version = str(base.get("url", "")), base.get("version")
    found = []
    for candidate in candidates:
        if not is_supplement(candidate):
            continue
        target, wanted = split_canonical(str(candidate.get("supplements", "")))
        if target != url:
            continue
        if wanted is None or (version is not None and matches(wanted, str(version))):
            found.append(candidate)
    return found


def applies_to(supplement: Mapping[str, Any], base: Mapping[str, Any]) -> bool:
    """True when ``supplement`` supplements the code system ``base`` (url and version)."""
    return bool(supplements_of(base, [dict(supplement)]))


def in_scope(canonical: str, wanted: Iterable[str]) -> bool:
    """True when a supplement (``url|version``) is one of those ``wanted`` (``url`` or
    ``url|version``, a version pattern too)."""
    url, version = split_canonical(canonical)
    for asked in wanted:
        asked_url, asked_version = split_canonical(asked)
        if asked_url != url:
            continue
        if asked_version is None or version is None or matches(asked_version, version):
            return True
    return False


def valueset_supplements(valueset: Mapping[str, Any]) -> list[str]:
    """The supplements a value set asks for with the ``valueset-supplement`` extension."""
    return [
        str(ext.get("valueCanonical") or ext.get("valueUri") or "")
        for ext in valueset.get("extension", ()) or ()
        if isinstance(ext, Mapping) and ext.get("url") == SUPPLEMENT_EXTENSION
    ]
