"""A resource from R4 to R5 and back (``to_r5``, ``to_r4``).

What differs between the releases for the resources a terminology server reads and writes:
ConceptMap (``conceptmap``), the R5-only elements that R4 carries as cross-version
extensions (``xver``), ``CapabilityStatement.fhirVersion``; the resources nested in
Parameters (``parameter.resource``, ``part``), Bundles (``entry.resource``) and
``contained`` are converted too. Every other element passes unchanged both ways, so an R4
resource converted to R5 and back is the one it was (the order of its extensions aside), and
so is an R5 one that R4 can state.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from workbench.r5 import xver
from workbench.r5.conceptmap import conceptmap_to_r4, conceptmap_to_r5
from workbench.r5.media import FULL, R4, R5

Resource = dict[str, Any]


def nested(resource: Resource) -> Iterator[Resource]:
    """The resources inside ``resource``: its ``contained``, a Parameters' parameter (and
    part) resources, a Bundle's entry resources (and their outcomes)."""
    for item in resource.get("contained") or ():
        if isinstance(item, dict):
            yield item
    kind = resource.get("resourceType")
    if kind == "Parameters":
        todo = list(resource.get("parameter") or ())
        while todo:
            param = todo.pop()
            if not isinstance(param, dict):
                continue
            if isinstance(param.get("resource"), dict):
                yield param["resource"]
            todo += param.get("part") or ()
    elif kind == "Bundle":
        for entry in resource.get("entry") or ():
            if not isinstance(entry, dict):
                continue
            for found in (entry.get("resource"), (entry.get("response") or {}).get("outcome")):
                if isinstance(found, dict):
                    yield found


def _walk(resource: Resource, step: Callable[[Resource], None]) -> None:
    todo = [resource]
    while todo:
        current = todo.pop()
        step(current)
        todo += nested(current)


def _step_r5(resource: Resource) -> None:
    kind = resource.get("resourceType")
    xver.lift(resource)
    if kind == "ConceptMap":
        conceptmap_to_r5(resource)
    elif kind == "CapabilityStatement" and str(resource.get("fhirVersion", "")).startswith(R4):
        resource["fhirVersion"] = FULL[R5]


def _step_r4(resource: Resource) -> None:
    kind = resource.get("resourceType")
    if kind == "ConceptMap":
        conceptmap_to_r4(resource)
    elif kind == "CapabilityStatement" and str(resource.get("fhirVersion", "")).startswith(R5):
        resource["fhirVersion"] = FULL[R4]
    xver.lower(resource)


def to_r5(resource: Resource, *, in_place: bool = False) -> Resource:
    """The R5 form of an R4 resource (a copy unless ``in_place``).

    >>> cm = {"resourceType": "ConceptMap", "sourceUri": "http://a", "group": [{"element": [
    ...     {"code": "x", "target": [{"code": "y", "equivalence": "wider"}]}]}]}
    >>> r5 = to_r5(cm)
    >>> r5["sourceScopeUri"], r5["group"][0]["element"][0]["target"][0]["relationship"]
    ('http://a', 'source-is-narrower-than-target')
    >>> to_r4(r5) == cm
    True
    """
    out = resource if in_place else copy.deepcopy(resource)
    _walk(out, _step_r5)
    return out


def to_r4(resource: Resource, *, in_place: bool = False) -> Resource:
    """The R4 form of an R5 resource (a copy unless ``in_place``); NotRepresentableError
    (422) for what R4 cannot state, StructureError (400) for an R5 element missing that R4
    needs."""
    out = resource if in_place else copy.deepcopy(resource)
    _walk(out, _step_r4)
    return out
