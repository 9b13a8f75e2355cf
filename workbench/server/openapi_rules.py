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
from workbench.terminology.languages import LIST_FORM

# What the operations refuse beyond an input's FHIR type, by operation code and input name:
# the values of ``mode``; $expand's paging inputs are never negative.
INPUT_RULES: dict[tuple[str, str], dict[str, Any]] = {
    ("validate-code", "mode"): {"enum": list(MODES)},
    ("cache-control", "mode"): {"enum": list(CACHE_MODES)},
    **{("expand", name): {"minimum": 0} for name in NON_NEGATIVE_INPUTS},
}
# The same, by input name on every operation: a display language is a language list.
NAMED_RULES: dict[str, dict[str, Any]] = {
    "displayLanguage": {"pattern": f"^(?:{LIST_FORM})$"},
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


def between_inputs(code: str, level: str, rtype: str | None = None) -> dict[str, str]:
    """The rules between the inputs of the operation ``code`` at ``level`` (``system``,
    ``type``, ``instance``) that OpenAPI cannot state, by input: what the input's
    description says (the server answers a request that breaks one with 400 ``required``)."""
    if code == "translate":
        return _translate_rules()
    if code == "cache-control":
        return dict(_CACHE_RULES)
    if code in ("validate-code", "expand") and rtype is not None:
        rules = _instance_rules(rtype)
        if level != "instance":
            rules.pop("url")
        return rules if rtype == "ValueSet" or level == "instance" else {}
    return {}


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
