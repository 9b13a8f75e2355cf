"""What the OpenAPI document states beyond an input's FHIR type: the constraints JSON Schema
can state (enumerations, bounds, the language list's grammar), and in words the rules
between inputs it cannot, each of which the server enforces with a 400 ``required``.

>>> between_inputs("translate", "type")["sourceCode"].startswith("At most one of")
True
"""

from __future__ import annotations

from typing import Any

from workbench.operations.cache_control import MODES as CACHE_MODES
from workbench.operations.client_inputs import MODES
from workbench.operations.conceptmap_translate import R5_NAMES
from workbench.operations.valueset_expand import NON_NEGATIVE_INPUTS
from workbench.terminology.client_caches import CACHE_ID
from workbench.terminology.languages import LIST_FORM

# What the operations refuse beyond an input's FHIR type, by operation code and input name:
# the values of ``mode``; $expand's paging inputs are never negative.
INPUT_RULES: dict[tuple[str, str], dict[str, Any]] = {
    ("validate-code", "mode"): {"enum": list(MODES)},
    ("cache-control", "mode"): {"enum": list(CACHE_MODES)},
    **{("expand", name): {"minimum": 0} for name in NON_NEGATIVE_INPUTS},
}
# The same, by input name on every operation: a display language is a language list, a
# cache id the form of the ids the server makes.
NAMED_RULES: dict[str, dict[str, Any]] = {
    "displayLanguage": {"pattern": f"^(?:{LIST_FORM})$"},
    "cache-id": {"pattern": f"^{CACHE_ID.pattern}$"},
}
REFUSED = "400 `required` otherwise"


def input_rule(code: str, name: str) -> dict[str, Any]:
    """The JSON Schema keywords the input ``name`` of the operation ``code`` adds to its type."""
    return {**NAMED_RULES.get(name, {}), **INPUT_RULES.get((code, name), {})}


def _translate_rules() -> dict[str, str]:
    """$translate: each input under R4's name or one of R5's, not both (nor two R5 names
    of one R4 input: ``sourceCode`` and ``targetCode`` both stand for ``code``)."""
    groups: dict[str, list[str]] = {}
    for r5, r4 in R5_NAMES.items():
        groups.setdefault(r4, [r4]).append(r5)
    out = {}
    for r4, names in groups.items():
        listed = ", ".join(f"`{n}`" for n in names)
        for name in names:
            out[name] = f"At most one of {listed} (R5's names of R4's `{r4}`): {REFUSED}."
    return out


_CACHE_RULES = {
    "mode": f"`start` makes a new cache: send no cache id with it (neither `cache-id` nor the "
    f"X-Cache-Id header): {REFUSED}.",
    "cache-id": "Not with mode=start; with check or end, the same cache as the X-Cache-Id "
    f"header when both are sent: {REFUSED}.",
}


def _instance_rules(rtype: str) -> dict[str, str]:
    out = {"url": f"At instance level, when given, the {rtype} instance's own url: {REFUSED}."}
    if rtype == "ValueSet":
        out["valueSet"] = f"Not with `url`, nor at instance level: {REFUSED}."
    return out


_CODED = ("code", "coding", "codeableConcept")
# The inputs of which a request gives exactly one (``base.one_of``; $translate and $compare:
# at least one), and the inputs one needs, by operation code: (inputs, what to say).
_ONE_OF: dict[str, list[tuple[tuple[str, ...], str]]] = {
    "lookup": [
        (("code", "coding"), "Exactly one of {names}"),
        (("code", "system"), "`code` needs `system`"),
    ],
    "validate-code": [(_CODED, "Exactly one of {names}")],
    "translate": [(_CODED, "One of {names} (or their R5 names)")],
    "subsumes": [
        (("codeA", "codingA"), "Exactly one of {names}"),
        (("codeB", "codingB"), "Exactly one of {names}"),
    ],
    "compare": [
        (("thisUrl", "thisValueSet"), "One of {names}"),
        (("otherUrl", "otherValueSet"), "One of {names}"),
    ],
    "batch-validate-code": [(("validation",), "At least one {names}")],
}
# The same, by operation code, resource type and level (an instance names its target).
_NEEDED: dict[tuple[str, str, str], list[tuple[tuple[str, ...], str]]] = {
    ("validate-code", "ValueSet", "type"): [
        (("url", "valueSet"), "One of {names} (or call it on a ValueSet instance)"),
        (("system", "code"), "`code` needs `system` unless inferSystem=true"),
    ],
    ("validate-code", "ValueSet", "instance"): [
        (("system", "code"), "`code` needs `system` unless inferSystem=true")
    ],
    ("expand", "ValueSet", "type"): [
        (("url", "valueSet"), "One of {names} (or call it on a ValueSet instance)")
    ],
    ("validate-code", "CodeSystem", "type"): [
        (
            ("url",),
            "{names} is needed, unless the input names its system (coding.system, or `system`)",
        )
    ],
    ("subsumes", "CodeSystem", "type"): [
        (("system",), "{names} is needed, unless called on a CodeSystem instance")
    ],
}
_CACHE_MODE = f"Needed, in the query or the body: {REFUSED}."


def _one_of(rules: list[tuple[tuple[str, ...], str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for names, text in rules:
        said = text.format(names=", ".join(f"`{n}`" for n in names)) + f": {REFUSED}."
        for name in names:
            out[name] = f"{out[name]} {said}" if name in out else said
    return out


def between_inputs(code: str, level: str, rtype: str | None = None) -> dict[str, str]:
    """The rules between the inputs of the operation ``code`` at ``level`` (``system``,
    ``type``, ``instance``) that OpenAPI cannot state, by input: what the input's
    description says (the server answers a request that breaks one with 400 ``required``)."""
    rules = _one_of([*_ONE_OF.get(code, ()), *_NEEDED.get((code, rtype or "", level), ())])
    more: dict[str, str] = {}
    if code == "translate":
        more = _translate_rules()
    elif code == "cache-control":
        more = {**_CACHE_RULES, "mode": f"{_CACHE_MODE} {_CACHE_RULES['mode']}"}
    elif code in ("validate-code", "expand") and rtype is not None:
        more = _instance_rules(rtype)
        if level != "instance":
            more.pop("url")
        if rtype != "ValueSet" and level != "instance":
            more = {}
    for name, text in more.items():
        rules[name] = f"{rules[name]} {text}" if name in rules else text
    return rules


SAME_ID = (
    "The body's `id` is this id (FHIR http.html#update): a body with another id is refused "
    "with a 400 `required`."
)


def update_body(rtype: str, schema_ref: dict[str, str], media_type: str) -> dict[str, Any]:
    """The body of an update: the resource (``schema_ref``), with its ``id`` (the URL's)."""
    return {
        "required": True,
        "description": f"The {rtype}, with its id. {SAME_ID}",
        "content": {media_type: {"schema": {"allOf": [schema_ref, {"required": ["id"]}]}}},
    }
