"""ValueSet compose filters: every operator, property and hierarchy source, as tables."""

from __future__ import annotations

from typing import Any

import pytest

from workbench import UnsupportedFilterError, Workbench

URL = "http://example.org/fhir/CodeSystem/filters"
DEMO = "http://example.org/fhir/CodeSystem/workbench-demo"
PROPS = "http://hl7.org/fhir/concept-properties#"

TREE = {"r": None, "a": "r", "a1": "a", "a2": "a", "b": "r", "b1": "b", "b1x": "b1", "x": None}
ALL_TREE = list(TREE)


def prop(code: str, value: Any) -> dict[str, Any]:
    key = {bool: "valueBoolean", int: "valueInteger"}.get(type(value), "valueCode")
    return {"code": code, key: value}


def codesystem(concepts: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": URL,
        "status": "active",
        "content": "complete",
        "concept": concepts,
        **extra,
    }


def nested_tree() -> dict[str, Any]:
    def node(code: str) -> dict[str, Any]:
        kids = [node(k) for k, p in TREE.items() if p == code]
        return {"code": code, **({"concept": kids} if kids else {})}

    return codesystem([node(c) for c, p in TREE.items() if p is None])


def tree_by_property(name: str, uri: str | None = None) -> dict[str, Any]:
    declared = {"code": name, "type": "code", **({"uri": uri} if uri else {})}
    concepts = []
    for code, parent in TREE.items():
        if name == "child":
            links = [k for k, p in TREE.items() if p == code]
        else:
            links = [parent] if parent else []
        concept: dict[str, Any] = {"code": code}
        if links:
            concept["property"] = [prop(name, v) for v in links]
        concepts.append(concept)
    return codesystem(concepts, property=[declared])


HIERARCHIES = [
    pytest.param(nested_tree, id="nested"),
    pytest.param(lambda: tree_by_property("parent"), id="parent-property"),
    pytest.param(lambda: tree_by_property("child"), id="child-property"),
    pytest.param(lambda: tree_by_property("subsumedBy"), id="subsumedBy"),
    pytest.param(lambda: tree_by_property("subsumedBy", PROPS + "parent"), id="subsumedBy-uri"),
]


def rich() -> dict[str, Any]:
    """Animals and plants with abstract, inactive, status and custom properties."""
    return codesystem(
        [
            {
                "code": "A",
                "display": "Animal",
                "property": [prop("notSelectable", True)],
                "concept": [
                    {
                        "code": "A1",
                        "display": "Mammal",
                        "property": [prop("legs", 4)],
                        "concept": [
                            {
                                "code": "A1a",
                                "display": "Dog",
                                "property": [
                                    prop("legs", 4),
                                    {"code": "habitat", "valueString": "land"},
                                    prop("colour", "brown"),
                                    prop("predator-of", "A1b"),
                                ],
                            },
                            {
                                "code": "A1b",
                                "display": "Cat",
                                "property": [
                                    prop("legs", 4),
                                    {"code": "habitat", "valueString": "land"},
                                    prop("colour", "black"),
                                    prop("status", "retired"),
                                    prop("predator-of", "A2"),
                                ],
                            },
                        ],
                    },
                    {
                        "code": "A2",
                        "display": "Bird",
                        "property": [
                            prop("legs", 2),
                            {"code": "habitat", "valueString": "air"},
                            prop("inactive", True),
                            prop("status", "deprecated"),
                        ],
                    },
                ],
            },
            {
                "code": "B",
                "display": "Plant",
                "property": [prop("notSelectable", True)],
                "concept": [
                    {
                        "code": "B1",
                        "display": "Oak tree",
                        "property": [{"code": "habitat", "valueString": "land"}],
                    }
                ],
            },
            {"code": "C"},
        ],
        property=[
            {"code": "notSelectable", "uri": PROPS + "notSelectable", "type": "boolean"},
            {"code": "inactive", "uri": PROPS + "inactive", "type": "boolean"},
            {"code": "status", "uri": PROPS + "status", "type": "code"},
            {"code": "legs", "type": "integer"},
            {"code": "habitat", "type": "string"},
            {"code": "colour", "type": "code"},
            {"code": "predator-of", "type": "code"},
        ],
    )


ALL_RICH = ["A", "A1", "A1a", "A1b", "A2", "B", "B1", "C"]


def apply(cs: dict[str, Any], *filters: tuple[str, str, str]) -> list[str]:
    """Expand one filtered include, and check membership (no expansion) agrees."""
    wb = Workbench()
    wb.load(cs)
    vs = {
        "resourceType": "ValueSet",
        "compose": {
            "include": [
                {
                    "system": cs["url"],
                    "filter": [{"property": p, "op": o, "value": v} for p, o, v in filters],
                }
            ]
        },
    }
    found = wb.expand(vs).frame["code"].tolist()
    members = [
        c
        for c in wb.concepts(cs["url"])["code"]
        if wb.validate_code(valueset=vs, code=c, system=cs["url"], abstract=True).result
    ]
    assert members == found
    return found


@pytest.mark.parametrize("make", HIERARCHIES)
@pytest.mark.parametrize(
    ("prop_name", "op", "value", "expected"),
    [
        pytest.param("concept", "is-a", "a", ["a", "a1", "a2"], id="is-a"),
        pytest.param("concept", "is-a", "r", ALL_TREE[:-1], id="is-a-root"),
        pytest.param("concept", "is-a", "a1", ["a1"], id="is-a-leaf"),
        pytest.param("code", "is-a", "b", ["b", "b1", "b1x"], id="code-is-a"),
        pytest.param("concept", "descendent-of", "a", ["a1", "a2"], id="descendent-of"),
        pytest.param("concept", "descendent-of", "r", ALL_TREE[1:-1], id="descendent-of-root"),
        pytest.param("concept", "descendent-of", "a1", [], id="descendent-of-leaf"),
        pytest.param("concept", "is-not-a", "a", ["r", "b", "b1", "b1x", "x"], id="is-not-a"),
        pytest.param("concept", "generalizes", "b1x", ["r", "b", "b1", "b1x"], id="generalizes"),
        pytest.param("concept", "generalizes", "x", ["x"], id="generalizes-root"),
        pytest.param("concept", "child-of", "r", ["a", "b"], id="child-of"),
        pytest.param("concept", "child-of", "b1x", [], id="child-of-leaf"),
        pytest.param("concept", "descendent-leaf", "r", ["a1", "a2", "b1x"], id="leaf"),
        pytest.param("concept", "descendent-leaf", "b", ["b1x"], id="leaf-deep"),
        pytest.param("concept", "descendent-leaf", "a2", [], id="leaf-of-leaf"),
        pytest.param("concept", "=", "b1", ["b1"], id="equals"),
        pytest.param("concept", "=", "zz", [], id="equals-unknown"),
        pytest.param("concept", "in", "a1, b1,zz", ["a1", "b1"], id="in"),
        pytest.param("concept", "not-in", "a,b,r", ["a1", "a2", "b1", "b1x", "x"], id="not-in"),
        pytest.param("concept", "regex", r"a\d", ["a1", "a2"], id="regex"),
        pytest.param("concept", "regex", "a.", ["a1", "a2"], id="regex-whole-value"),
        pytest.param("concept", "regex", "b", ["b"], id="regex-anchored"),
        pytest.param("concept", "exists", "true", ALL_TREE, id="exists-true"),
        pytest.param("concept", "exists", "false", [], id="exists-false"),
        pytest.param("parent", "=", "a", ["a1", "a2"], id="parent-equals"),
        pytest.param("parent", "in", "a,b1", ["a1", "a2", "b1x"], id="parent-in"),
        pytest.param("parent", "regex", "b.*", ["b1", "b1x"], id="parent-regex"),
        pytest.param("parent", "is-a", "b", ["b1", "b1x"], id="parent-is-a"),
        pytest.param("parent", "exists", "false", ["r", "x"], id="parent-missing"),
        pytest.param("parent", "exists", "true", ALL_TREE[1:-1], id="parent-present"),
        pytest.param(
            "parent", "not-in", "a", ["r", "a", "b", "b1", "b1x", "x"], id="parent-not-in"
        ),
        pytest.param("child", "=", "a1", ["a"], id="child-equals"),
        pytest.param("child", "is-a", "b1", ["b", "b1"], id="child-is-a"),
        pytest.param("child", "exists", "false", ["a1", "a2", "b1x", "x"], id="child-missing"),
        pytest.param("child", "in", "a,b", ["r"], id="child-in"),
    ],
)
def test_hierarchy_filters(
    make: Any, prop_name: str, op: str, value: str, expected: list[str]
) -> None:
    assert apply(make(), (prop_name, op, value)) == expected


@pytest.mark.parametrize("make", HIERARCHIES)
@pytest.mark.parametrize("op", ["is-a", "is-not-a", "descendent-of", "generalizes", "child-of"])
def test_hierarchy_filter_on_an_unknown_code_is_an_error(make: Any, op: str) -> None:
    """Never an empty (or whole) expansion for a code the code system does not have."""
    with pytest.raises(UnsupportedFilterError, match="the code 'zz' is not in the code system"):
        apply(make(), ("concept", op, "zz"))


@pytest.mark.parametrize(
    ("prop_name", "op", "value", "expected"),
    [
        pytest.param("display", "=", "Dog", ["A1a"], id="display-equals"),
        pytest.param("display", "=", "dog", [], id="display-case-sensitive"),
        pytest.param("display", "in", "Dog,Bird", ["A1a", "A2"], id="display-in"),
        pytest.param("display", "regex", "(Dog|Cat)", ["A1a", "A1b"], id="display-regex"),
        pytest.param("display", "regex", "Do", [], id="display-regex-whole-value"),
        pytest.param("display", "regex", ".* tree", ["B1"], id="display-regex-suffix"),
        pytest.param("display", "exists", "false", ["C"], id="display-missing"),
        pytest.param(
            "display", "not-in", "Dog,Cat", ["A", "A1", "A2", "B", "B1", "C"], id="display-not-in"
        ),
        pytest.param("inactive", "=", "true", ["A1b", "A2"], id="inactive-true"),
        pytest.param(
            "inactive", "=", "false", ["A", "A1", "A1a", "B", "B1", "C"], id="inactive-false"
        ),
        pytest.param("notSelectable", "=", "true", ["A", "B"], id="abstract-true"),
        pytest.param(  # a1: no concept carries notSelectable=false; none lacking it matches
            "notSelectable",
            "=",
            "false",
            [],
            id="abstract-false-only-where-the-property-is-false",
        ),
        pytest.param("status", "=", "retired", ["A1b"], id="status-equals"),
        pytest.param("status", "in", "retired,deprecated", ["A1b", "A2"], id="status-in"),
        pytest.param(
            "status", "exists", "false", ["A", "A1", "A1a", "B", "B1", "C"], id="status-missing"
        ),
        pytest.param("legs", "=", "4", ["A1", "A1a", "A1b"], id="integer-equals"),
        pytest.param("legs", "in", "2,4", ["A1", "A1a", "A1b", "A2"], id="integer-in"),
        pytest.param("legs", "not-in", "4", ["A", "A2", "B", "B1", "C"], id="integer-not-in"),
        pytest.param("legs", "regex", "[0-3]", ["A2"], id="integer-regex"),
        pytest.param("legs", "exists", "false", ["A", "B", "B1", "C"], id="integer-missing"),
        pytest.param("legs", "exists", "true", ["A1", "A1a", "A1b", "A2"], id="integer-present"),
        pytest.param("habitat", "=", "land", ["A1a", "A1b", "B1"], id="string-equals"),
        pytest.param("habitat", "=", "Land", [], id="string-case-sensitive"),
        pytest.param("habitat", "regex", "l.*", ["A1a", "A1b", "B1"], id="string-regex"),
        pytest.param("habitat", "not-in", "land", ["A", "A1", "A2", "B", "C"], id="string-not-in"),
        pytest.param("colour", "=", "brown", ["A1a"], id="code-equals"),
        pytest.param("colour", "in", "black,white", ["A1b"], id="code-in"),
        pytest.param("colour", "exists", "true", ["A1a", "A1b"], id="code-present"),
        pytest.param("predator-of", "=", "A2", ["A1b"], id="code-ref-equals"),
        pytest.param("predator-of", "is-a", "A1", ["A1a"], id="code-ref-is-a"),
        pytest.param("predator-of", "is-a", "A", ["A1a", "A1b"], id="code-ref-is-a-root"),
        pytest.param("predator-of", "descendent-of", "A1", ["A1a"], id="code-ref-descendent-of"),
        pytest.param("predator-of", "generalizes", "A1", [], id="code-ref-generalizes"),
        pytest.param("concept", "is-a", "A1", ["A1", "A1a", "A1b"], id="concept-is-a"),
    ],
)
def test_property_filters(prop_name: str, op: str, value: str, expected: list[str]) -> None:
    assert apply(rich(), (prop_name, op, value)) == expected


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        pytest.param(
            [("concept", "is-a", "A"), ("legs", "=", "4")],
            ["A1", "A1a", "A1b"],
            id="is-a-and-value",
        ),
        pytest.param(
            [("habitat", "=", "land"), ("inactive", "=", "false")], ["A1a", "B1"], id="two-values"
        ),
        pytest.param(
            [("concept", "descendent-of", "A"), ("concept", "is-not-a", "A1")],
            ["A2"],
            id="two-hierarchy",
        ),
        pytest.param([("concept", "is-a", "A"), ("concept", "is-a", "B")], [], id="disjoint"),
    ],
)
def test_filters_are_anded(filters: list[tuple[str, str, str]], expected: list[str]) -> None:
    assert apply(rich(), *filters) == expected


def test_regex_cannot_backtrack_catastrophically() -> None:
    cs = codesystem([{"code": "a" * 5000 + "b"}, {"code": "aaaa"}, {"code": "b"}])
    assert apply(cs, ("concept", "regex", "(a+)+$")) == ["aaaa"]


@pytest.mark.parametrize(
    ("prop_name", "op", "value", "expected"),
    [
        pytest.param(
            "concept",
            "is-a",
            "office",
            ["office", "office-new", "office-followup", "office-procedure"],
            id="is-a-nested-and-parent-property",
        ),
        pytest.param(
            "concept", "is-a", "home", ["home", "home-hospital"], id="is-a-parent-property"
        ),
        pytest.param(
            "concept",
            "descendent-of",
            "remote",
            ["video", "phone", "phone-triage", "e-visit", "fax-consult"],
            id="descendent-of",
        ),
        pytest.param(
            "concept",
            "descendent-leaf",
            "in-person",
            [
                "office-new",
                "office-followup",
                "walk-in",
                "group",
                "home-hospital",
                "office-procedure",
            ],
            id="descendent-leaf",
        ),
        pytest.param("concept", "child-of", "phone", ["phone-triage"], id="child-of"),
        pytest.param(
            "concept",
            "generalizes",
            "home-hospital",
            ["in-person", "home", "home-hospital"],
            id="generalizes",
        ),
        pytest.param(
            "parent",
            "=",
            "office",
            ["office-new", "office-followup", "office-procedure"],
            id="parent",
        ),
        pytest.param("status", "=", "retired", ["group", "fax-consult"], id="status"),
        pytest.param("inactive", "=", "true", ["group", "fax-consult"], id="inactive"),
        pytest.param("notSelectable", "=", "true", ["in-person", "remote"], id="notSelectable"),
        pytest.param(
            "duration-minutes", "=", "15", ["office-followup", "walk-in"], id="integer-property"
        ),
        pytest.param("display", "regex", "Tele.*", ["phone"], id="display-regex"),
    ],
)
def test_demo_codesystem(
    default_wb: Workbench, prop_name: str, op: str, value: str, expected: list[str]
) -> None:
    vs = {
        "resourceType": "ValueSet",
        "compose": {
            "include": [
                {"system": DEMO, "filter": [{"property": prop_name, "op": op, "value": value}]}
            ]
        },
    }
    assert default_wb.expand(vs).frame["code"].tolist() == expected


@pytest.mark.parametrize(
    ("prop_name", "op", "value", "message"),
    [
        pytest.param(
            "concept",
            "~",
            "A",
            f"Filter 'concept ~ A' on {URL}: the operator '~' is not supported (supported: "
            "=, is-a, descendent-of, is-not-a, regex, in, not-in, generalizes, exists, child-of, "
            "descendent-leaf)",
            id="unknown-operator",
        ),
        pytest.param(
            "weight",
            "=",
            "3",
            f"Filter 'weight = 3' on {URL} is not supported: the code system defines no "
            "property 'weight'",
            id="undefined-property",
        ),
        pytest.param(
            "weight",
            "exists",
            "true",
            f"Filter 'weight exists true' on {URL} is not supported: the code system defines no "
            "property 'weight'",
            id="undefined-property-exists",
        ),
        pytest.param(
            "display",
            "is-a",
            "Dog",
            f"Filter 'display is-a Dog' on {URL} is not supported: 'is-a' needs a hierarchy, and "
            "'display' is not a code property",
            id="is-a-on-display",
        ),
        pytest.param(
            "legs",
            "descendent-of",
            "4",
            f"Filter 'legs descendent-of 4' on {URL} is not supported: 'descendent-of' needs a "
            "hierarchy, and 'legs' is not a code property",
            id="descendent-of-on-integer",
        ),
        pytest.param(
            "habitat",
            "generalizes",
            "land",
            f"Filter 'habitat generalizes land' on {URL} is not supported: 'generalizes' needs "
            "a hierarchy, and 'habitat' is not a code property",
            id="generalizes-on-string",
        ),
        pytest.param(
            "concept",
            "regex",
            "(",
            f"Filter 'concept regex (' on {URL} is not supported: the regex cannot be compiled",
            id="bad-regex",
        ),
        pytest.param(
            "display",
            "regex",
            r"(a)\1",
            f"Filter 'display regex (a)\\1' on {URL} is not supported: the regex cannot be "
            "compiled",
            id="backreference-regex",
        ),
        pytest.param(
            "concept",
            "exists",
            "yes",
            f"Filter 'concept exists yes' on {URL} is not supported: 'exists' takes the value "
            "true or false",
            id="exists-not-boolean",
        ),
        pytest.param(
            "legs",
            "exists",
            "1",
            f"Filter 'legs exists 1' on {URL} is not supported: 'exists' takes the value true "
            "or false",
            id="exists-not-boolean-on-property",
        ),
    ],
)
def test_unsupported_filters(prop_name: str, op: str, value: str, message: str) -> None:
    with pytest.raises(UnsupportedFilterError) as info:
        apply(rich(), (prop_name, op, value))
    assert str(info.value).startswith(message)
    assert info.value.code == "not-supported"


def case_insensitive() -> dict[str, Any]:
    return codesystem(
        [{"code": "Alpha", "concept": [{"code": "Beta"}]}, {"code": "Gamma"}],
        caseSensitive=False,
    )


@pytest.mark.parametrize(
    ("prop_name", "op", "value", "expected"),
    [
        pytest.param("concept", "=", "alpha", ["Alpha"], id="equals"),
        pytest.param("concept", "in", "alpha,GAMMA", ["Alpha", "Gamma"], id="in"),
        pytest.param("concept", "is-a", "ALPHA", ["Alpha", "Beta"], id="is-a"),
        pytest.param("concept", "is-not-a", "alpha", ["Gamma"], id="is-not-a"),
        pytest.param("concept", "child-of", "alpha", ["Beta"], id="child-of"),
        pytest.param(
            "concept",
            "not-in",
            "alpha",
            ["Beta", "Gamma"],
            id="not-in",
        ),
        pytest.param(
            "parent",
            "=",
            "alpha",
            ["Beta"],
            id="parent-equals",
        ),
        pytest.param(
            "parent",
            "in",
            "alpha",
            ["Beta"],
            id="parent-in",
        ),
    ],
)
def test_case_insensitive_codesystem(
    prop_name: str, op: str, value: str, expected: list[str]
) -> None:
    assert apply(case_insensitive(), (prop_name, op, value)) == expected
