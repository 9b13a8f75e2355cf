"""ConceptMap/$translate (type and instance level, GET and POST)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import RequiredError
from workbench.operations.base import Inputs, Operation
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.conceptmap import check_conceptmap

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-ConceptMap-translate.json")


def run(wb: TerminologyService, inputs: Inputs, resource: Resource | None = None) -> dict[str, Any]:
    """Translate code+system, a Coding or a CodeableConcept with R4 semantics."""
    code, system = inputs.get("code"), inputs.get("system")
    codings: list[dict[str, Any]] = []
    if inputs.get("coding") is not None:
        codings.append(inputs["coding"])
    if inputs.get("codeableConcept") is not None:
        codings.extend(inputs["codeableConcept"].get("coding", []))
    if code is None and codings:
        code, system = codings[0].get("code"), codings[0].get("system")
    if not code:
        raise RequiredError("$translate needs a code (code, coding or codeableConcept)")
    url = inputs.get("url")
    maps = wb.conceptmaps_for(url)
    inline = inputs.get("conceptMap")
    if inline is not None:
        check_conceptmap(inline)
        maps, url = [inline], None
    elif resource is not None:
        maps, url = [resource], None
    found = wb.translate(
        str(code),
        system=system,
        url=url,
        target_system=inputs.get("targetsystem"),
        reverse=bool(inputs.get("reverse")),
        maps=maps,
        source=inputs.get("source"),
        target=inputs.get("target"),
        conceptmap_version=inputs.get("conceptMapVersion"),
        dependencies=dependencies(inputs.get("dependency") or []),
    )
    params = found.to_parameters()["parameter"]
    return {
        "result": found.result,
        "message": found.message,
        "match": [_parts(p["part"]) for p in params if p["name"] == "match"],
    }


def dependencies(given: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The ``dependency`` parameters as (element, codings): ``element`` and ``concept`` (a
    CodeableConcept) are both required for a dependency to mean something."""
    out = []
    for i, dep in enumerate(given):
        element, concept = dep.get("element"), dep.get("concept")
        if element is None or concept is None:
            missing = "element" if element is None else "concept"
            raise RequiredError(
                f"Parameter 'dependency' (#{i + 1}) needs both element and concept; "
                f"{missing} is missing",
                expression=[f"dependency[{i}].{missing}"],
            )
        codings = concept.get("coding", [])
        if not codings:
            raise RequiredError(
                f"Parameter 'dependency' (#{i + 1}): concept has no coding",
                expression=[f"dependency[{i}].concept"],
            )
        out.append((element, list(codings)))
    return out


def _parts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in parts:
        name = part["name"]
        if name == "product":
            element, concept = part["part"]
            out.setdefault("product", []).append(
                {"element": element["valueUri"], "concept": concept["valueCoding"]}
            )
        else:
            out[name] = next(v for k, v in part.items() if k.startswith("value"))
    return out


OPERATION = Operation(
    DEFINITION,
    run,
    frozenset(
        {
            "url",
            "conceptMap",
            "conceptMapVersion",
            "code",
            "system",
            "version",
            "source",
            "coding",
            "codeableConcept",
            "target",
            "targetsystem",
            "reverse",
            "dependency",
        }
    ),
)
