"""Operation parameters that R5 names or shapes differently from R4.

Only ``$translate`` differs among the operations served here (R5's ConceptMap-translate
OperationDefinition): its inputs ``sourceScope``/``targetScope`` are R4's
``source``/``target``, ``targetCodeableConcept`` is a CodeableConcept translated in reverse,
``dependency`` has ``attribute`` and ``value[x]`` where R4 has ``element`` and ``concept``;
its ``match`` answers ``relationship`` (of the source) where R4 answers ``equivalence``,
``originMap`` where R4 answers ``source``, and ``product.attribute``/``value[x]`` where R4
answers ``element``/``concept``. R4's own translate already takes R5's ``sourceCode``,
``sourceCoding``, ``targetCode``… (as tx.fhir.org's R4 endpoint does), so they pass as they
are. The other operations ($lookup, $validate-code, $expand, $subsumes, $batch-validate-code,
$compare, $closure, $cache-control) have the same parameters in both releases; their
resources (``tx-resource``, ``valueSet``, ``conceptMap``, the answers) are converted by
``convert``.
"""

from __future__ import annotations

from typing import Any

from workbench.r5.conceptmap import TO_RELATIONSHIP, NotRepresentableError
from workbench.r5.convert import Resource, to_r4, to_r5

#: Query and body parameter names: R5's -> R4's, per operation code.
RENAMED = {"translate": {"sourceScope": "source", "targetScope": "target"}}


def query_to_r4(operation: str | None, items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """An operation's query parameters with R5's names as R4 names them."""
    names = RENAMED.get(operation or "")
    if not names:
        return items
    return [(names.get(name, name), value) for name, value in items]


def inputs_to_r4(operation: str | None, body: Resource) -> Resource:
    """An R5 request body (a Parameters, or a resource for an instance write) in R4, in
    place."""
    to_r4(body, in_place=True)
    if operation != "translate" or body.get("resourceType") != "Parameters":
        return body
    names = RENAMED["translate"]
    params = [p for p in body.get("parameter") or () if isinstance(p, dict)]
    extra: list[dict[str, Any]] = []
    for param in params:
        name = param.get("name")
        if name in names:
            param["name"] = names[name]
        elif name == "targetCodeableConcept":
            param["name"] = "codeableConcept"
            extra.append({"name": "reverse", "valueBoolean": True})
        elif name == "dependency":
            _dependency_to_r4(param)
    if extra and not any(p.get("name") == "reverse" for p in params):
        body["parameter"] = [*params, *extra]
    return body


def _dependency_to_r4(param: dict[str, Any]) -> None:
    for part in [p for p in param.get("part") or () if isinstance(p, dict)]:
        if part.get("name") == "attribute":
            part["name"] = "element"
        elif part.get("name") == "value":
            kind = next((k for k in part if k.startswith("value")), None)
            value = part.pop(kind) if kind else None
            part["name"] = "concept"
            if kind == "valueCoding":
                part["valueCodeableConcept"] = {"coding": [value]}
            elif kind == "valueCodeableConcept":
                part["valueCodeableConcept"] = value
            elif kind in ("valueCode", "valueString"):
                part["valueCodeableConcept"] = {"coding": [{"code": value}]}
            else:
                raise NotRepresentableError(
                    f"$translate dependency.value of type {kind or 'none'} cannot be stated in "
                    "R4 (its dependency holds a concept): send a Coding, code or string"
                )


def outputs_to_r5(operation: str | None, body: Resource) -> Resource:
    """An operation's R4 answer in R5, in place."""
    if operation == "translate" and body.get("resourceType") == "Parameters":
        for param in body.get("parameter") or ():
            if isinstance(param, dict) and param.get("name") == "match":
                _match_to_r5(param)
    return to_r5(body, in_place=True)


def _match_to_r5(match: dict[str, Any]) -> None:
    parts = [p for p in match.get("part") or () if isinstance(p, dict)]
    has_origin = any(p.get("name") == "originMap" for p in parts)
    out: list[dict[str, Any]] = []
    for part in parts:
        name = part.get("name")
        if name == "equivalence":
            code = str(part.get("valueCode"))
            out.append({"name": "relationship", "valueCode": TO_RELATIONSHIP.get(code, code)})
        elif name == "source":
            if not has_origin:
                out.append({"name": "originMap", "valueCanonical": part.get("valueUri")})
        elif name == "product":
            for sub in part.get("part") or ():
                if sub.get("name") == "element":
                    sub["name"] = "attribute"
                elif sub.get("name") == "concept":
                    sub["name"] = "value"
            out.append(part)
        else:
            out.append(part)
    match["part"] = out
