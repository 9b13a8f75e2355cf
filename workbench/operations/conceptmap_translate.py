"""ConceptMap/$translate (type and instance level, GET and POST)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import RequiredError
from workbench.operations.base import ACCEPT_LANGUAGE, Inputs, Operation, honoured
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.conceptmap import check_conceptmap
from workbench.terminology.requests import TranslateRequest

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-ConceptMap-translate.json")


#: R5's input names, as tx.fhir.org's R4 endpoint takes them, with the R4 input each
#: stands for; a target code or Coding is translated in reverse (to its source codes).
R5_NAMES = {
    "sourceCode": "code",
    "sourceSystem": "system",
    "sourceCoding": "coding",
    "sourceCodeableConcept": "codeableConcept",
    "targetSystem": "targetsystem",
    "targetCode": "code",
    "targetCoding": "coding",
}


#: The inputs the operation consumes itself (``version``, the source code system's
#: version, is accepted and not used); the others are fields of TranslateRequest.
OWN: tuple[str, ...] = (
    "conceptMap",
    "coding",
    "codeableConcept",
    "version",
    ACCEPT_LANGUAGE,
    *R5_NAMES,
)


def with_r4_names(inputs: Inputs) -> Inputs:
    """The inputs with R5's names read as R4's; one input given under both names, or a
    source and a target code together, is refused."""
    given = [name for name in R5_NAMES if inputs.get(name) is not None]
    if not given:
        return inputs
    out = {k: v for k, v in inputs.items() if k not in R5_NAMES}
    for name in given:
        r4 = R5_NAMES[name]
        if out.get(r4) is not None:
            raise RequiredError(  # (a rule between inputs: the document states it)
                f"'{name}' stands for '{r4}', which another input already gives: send the "
                "source (or target) code once, under one name"
            )
        out[r4] = inputs[name]
    if {"targetCode", "targetCoding"} & set(given):
        out["reverse"] = True
    return out


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """Translate code+system, a Coding or a CodeableConcept with R4 semantics (R5's input
    names taken too)."""
    inputs = with_r4_names(inputs)
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
    url, maps = inputs.get("url"), None
    inline = inputs.get("conceptMap")
    if inline is not None:
        check_conceptmap(inline)
        maps, url = (inline,), None
    elif resource is not None:
        maps, url = (resource,), None
    found = svc.translate(
        TranslateRequest.from_inputs(
            inputs, own=OWN, code=str(code), system=system, url=url, maps=maps
        )
    )
    params = found.to_parameters()["parameter"]
    return {
        "result": found.result,
        "message": found.message,
        "match": [_parts(p["part"]) for p in params if p["name"] == "match"],
    }


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


OPERATION = Operation(DEFINITION, run, honoured(DEFINITION, TranslateRequest, OWN), memo=True)
