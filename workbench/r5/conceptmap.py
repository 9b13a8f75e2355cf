"""ConceptMap between R4 and R5, as HL7's version convertors (org.hl7.fhir.core
``ConceptMap40_50``) and FHIRsmith (``tx/xversion/xv-conceptmap.js``) convert it:

- ``identifier``: one in R4, a list in R5 (the second and later travel in R4 as the
  cross-version extension ``extension-ConceptMap.identifier``);
- ``source[x]`` / ``target[x]`` are R5's ``sourceScope[x]`` / ``targetScope[x]``;
- ``group.unmapped``: mode ``provided`` is ``use-source-code``, ``url`` is ``otherMap``;
- ``target.equivalence`` (R4, of the target) is ``target.relationship`` (R5, of the source):
  ``wider``/``subsumes`` -> ``source-is-narrower-than-target``, ``narrower``/``specializes``
  -> ``source-is-broader-than-target``, ``equal``/``equivalent`` -> ``equivalent``,
  ``relatedto``/``inexact`` -> ``related-to``, ``disjoint`` -> ``not-related-to``; an
  equivalence the relationship does not give back is kept on ``_relationship`` in the
  convertors' extension ``EXT_OLD_CONCEPTMAP_EQUIVALENCE`` and restored from it;
- an R4 target ``unmatched`` without a code is R5's ``element.noMap`` (its comment in the
  convertors' ``EXT_CM_NOMAP_COMMENT``);
- ``dependsOn``/``product``: R4's ``property`` (uri) with ``system``/``value``/``display`` is
  R5's ``attribute`` with ``valueCoding`` (or ``valueString`` for a value alone).

An R5 map that R4 cannot state (a ``dependsOn`` whose value is a Quantity or boolean, or
names a value set only) raises ``NotRepresentableError``.
"""

from __future__ import annotations

from typing import Any

from workbench.errors import StructureError, WorkbenchError
from workbench.r5.xver import BASE

OLD_EQUIVALENCE = (
    "http://hl7.org/fhir/1.0/StructureDefinition/extension-ConceptMap.element.target.equivalence"
)
NOMAP_COMMENT = (
    "http://hl7.org/fhir/4.0/StructureDefinition/extension-ConceptMap.group.element.target.comment"
)
MORE_IDENTIFIERS = BASE + "ConceptMap.identifier"

TO_RELATIONSHIP = {
    "relatedto": "related-to",
    "equivalent": "equivalent",
    "equal": "equivalent",
    "wider": "source-is-narrower-than-target",
    "subsumes": "source-is-narrower-than-target",
    "narrower": "source-is-broader-than-target",
    "specializes": "source-is-broader-than-target",
    "inexact": "related-to",
    "unmatched": "not-related-to",
    "disjoint": "not-related-to",
}
TO_EQUIVALENCE = {
    "related-to": "relatedto",
    "equivalent": "equivalent",
    "source-is-narrower-than-target": "wider",
    "source-is-broader-than-target": "narrower",
    "not-related-to": "disjoint",
}


class NotRepresentableError(WorkbenchError):
    """An R5 resource or parameter states something R4 cannot (the server answers R5
    requests through its R4 operations)."""

    code = "not-supported"
    status = 422
    msg_id = "WB-R5-001"


def _scopes(cm: dict[str, Any], old: tuple[str, str], new: tuple[str, str]) -> None:
    """Rename the choice elements ``old`` to ``new`` (their type suffix kept)."""
    for was, now in zip(old, new, strict=True):
        for key in [k for k in cm if k.startswith(was) and k[len(was) :][:1].isupper()]:
            cm[now + key[len(was) :]] = cm.pop(key)


def _groups(cm: dict[str, Any]) -> list[dict[str, Any]]:
    groups = cm.get("group")
    return [g for g in groups if isinstance(g, dict)] if isinstance(groups, list) else []


def _list(node: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = node.get(key)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def conceptmap_to_r5(cm: dict[str, Any]) -> None:
    """Convert an R4 ConceptMap to R5, in place."""
    exts = cm.get("extension") or []
    more = [e.get("valueIdentifier") for e in exts if e.get("url") == MORE_IDENTIFIERS]
    if isinstance(cm.get("identifier"), dict) or more:
        first = cm.get("identifier")
        cm["identifier"] = [first, *more] if isinstance(first, dict) else more
        rest = [e for e in exts if e.get("url") != MORE_IDENTIFIERS]
        _set_extensions(cm, rest)
    _scopes(cm, ("source", "target"), ("sourceScope", "targetScope"))
    for group in _groups(cm):
        unmapped = group.get("unmapped")
        if isinstance(unmapped, dict):
            if unmapped.get("mode") == "provided":
                unmapped["mode"] = "use-source-code"
            if "url" in unmapped:
                unmapped["otherMap"] = unmapped.pop("url")
        for element in _list(group, "element"):
            _element_to_r5(element)


def _element_to_r5(element: dict[str, Any]) -> None:
    targets = _list(element, "target")
    no_map = [
        t
        for t in targets
        if t.get("equivalence") == "unmatched" and set(t) <= {"equivalence", "comment"}
    ]
    if no_map and len(no_map) == len(targets):
        element["noMap"] = True
        del element["target"]
        comment = next((t["comment"] for t in no_map if "comment" in t), None)
        if comment is not None:
            element.setdefault("extension", []).append(
                {"url": NOMAP_COMMENT, "valueString": comment}
            )
        return
    for target in targets:
        equivalence = target.pop("equivalence", None)
        if isinstance(equivalence, str):
            relationship = TO_RELATIONSHIP.get(equivalence, "related-to")
            target["relationship"] = relationship
            if TO_EQUIVALENCE.get(relationship) != equivalence:
                old = {"url": OLD_EQUIVALENCE, "valueCode": equivalence}
                target.setdefault("_relationship", {}).setdefault("extension", []).append(old)
        elif equivalence is not None:
            target["equivalence"] = equivalence  # not a code: left for the reader to refuse
        for key in ("dependsOn", "product"):
            for other in _list(target, key):
                _other_to_r5(other)


def _other_to_r5(other: dict[str, Any]) -> None:
    if "property" in other:
        other["attribute"] = other.pop("property")
    system, display = other.pop("system", None), other.pop("display", None)
    value = other.pop("value", None)
    if system is None and display is None:
        if value is not None:
            other["valueString"] = value
        return
    coding = {"system": system, "code": value, "display": display}
    other["valueCoding"] = {k: v for k, v in coding.items() if v is not None}


def conceptmap_to_r4(cm: dict[str, Any]) -> None:
    """Convert an R5 ConceptMap to R4, in place (``NotRepresentableError`` for what R4
    cannot state; ``StructureError`` for a target without its required relationship)."""
    identifiers = cm.get("identifier")
    if isinstance(identifiers, list):
        if identifiers:
            cm["identifier"] = identifiers[0]
            more = [{"url": MORE_IDENTIFIERS, "valueIdentifier": i} for i in identifiers[1:]]
            if more:
                cm["extension"] = [*(cm.get("extension") or []), *more]
        else:
            del cm["identifier"]
    _scopes(cm, ("sourceScope", "targetScope"), ("source", "target"))
    for g, group in enumerate(_groups(cm)):
        unmapped = group.get("unmapped")
        if isinstance(unmapped, dict):
            if unmapped.get("mode") == "use-source-code":
                unmapped["mode"] = "provided"
            if "otherMap" in unmapped:
                unmapped["url"] = unmapped.pop("otherMap")
        for e, element in enumerate(_list(group, "element")):
            _element_to_r4(element, f"ConceptMap.group[{g}].element[{e}]")


def _element_to_r4(element: dict[str, Any], where: str) -> None:
    if element.pop("noMap", None) is True:
        target: dict[str, Any] = {"equivalence": "unmatched"}
        exts = element.get("extension") or []
        comment = next((x.get("valueString") for x in exts if x.get("url") == NOMAP_COMMENT), None)
        if comment is not None:
            target["comment"] = comment
            _set_extensions(element, [x for x in exts if x.get("url") != NOMAP_COMMENT])
        element["target"] = [target, *_list(element, "target")]
        return
    for t, target in enumerate(_list(element, "target")):
        at = f"{where}.target[{t}]"
        relationship = target.pop("relationship", None)
        if "equivalence" not in target:
            if not isinstance(relationship, str):
                raise StructureError(f"{at}.relationship is required", expression=[at])
            target["equivalence"] = _old_equivalence(target) or TO_EQUIVALENCE.get(
                relationship, "relatedto"
            )
        for key in ("dependsOn", "product"):
            for o, other in enumerate(_list(target, key)):
                _other_to_r4(other, f"{at}.{key}[{o}]")


def _old_equivalence(target: dict[str, Any]) -> str | None:
    meta = target.get("_relationship")
    if not isinstance(meta, dict):
        return None
    exts = meta.get("extension") or []
    found = next((x.get("valueCode") for x in exts if x.get("url") == OLD_EQUIVALENCE), None)
    rest = [x for x in exts if x.get("url") != OLD_EQUIVALENCE]
    if rest:
        meta["extension"] = rest
    else:
        meta.pop("extension", None)
        if not meta:
            del target["_relationship"]
    return found if isinstance(found, str) else None


def _other_to_r4(other: dict[str, Any], where: str) -> None:
    if "attribute" in other:
        other["property"] = other.pop("attribute")
    if "valueCoding" in other and isinstance(other["valueCoding"], dict):
        coding = other.pop("valueCoding")
        for key, r4 in (("system", "system"), ("code", "value"), ("display", "display")):
            if key in coding:
                other[r4] = coding[key]
        return
    for key in ("valueString", "valueCode"):
        if key in other:
            other["value"] = other.pop(key)
            return
    kinds = [k for k in other if k.startswith("value")] or ["valueSet"]
    raise NotRepresentableError(
        f"{where}: a {kinds[0]} cannot be stated in R4 (its dependsOn and product hold a "
        "code or a string); send this map to an R5 server or state the value as a Coding",
        expression=[where],
    )


def _set_extensions(node: dict[str, Any], exts: list[Any]) -> None:
    if exts:
        node["extension"] = exts
    else:
        node.pop("extension", None)
