"""ValueSet expansion: compose semantics, versions, the Expansion object, errors and caches."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from workbench import (
    CodeSystemNotFoundError,
    ImportCycleError,
    TooCostlyError,
    ValueSetNotFoundError,
    Workbench,
)
from workbench.errors import InvalidResourceError

SHAPE = "http://example.org/fhir/CodeSystem/shape"
COLOUR = "http://example.org/fhir/CodeSystem/colour"
VER = "http://example.org/fhir/CodeSystem/versioned"
VS = "http://example.org/fhir/ValueSet/"
DEMO = "http://example.org/fhir/CodeSystem/workbench-demo"
PROPS = "http://hl7.org/fhir/concept-properties#"
ALL_SHAPES = [
    "polygon",
    "triangle",
    "quad",
    "square",
    "rect",
    "hexagon",
    "curve",
    "circle",
    "ellipse",
]


def concept(code: str, display: str, *children: dict[str, Any], **props: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"code": code, "display": display}
    keys = {bool: "valueBoolean", int: "valueInteger"}
    if props:
        c["property"] = [{"code": k, keys[type(v)]: v} for k, v in props.items()]
    if children:
        c["concept"] = list(children)
    return c


def codesystem(url: str, concepts: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "resourceType": "CodeSystem",
        "url": url,
        "status": "active",
        "content": "complete",
        "concept": concepts,
        **extra,
    }


def valueset(
    name: str | None,
    *include: dict[str, Any],
    exclude: tuple[dict[str, Any], ...] = (),
    **extra: Any,
) -> dict[str, Any]:
    compose: dict[str, Any] = {"include": list(include)}
    if exclude:
        compose["exclude"] = list(exclude)
    vs: dict[str, Any] = {"resourceType": "ValueSet", "status": "active"}
    if name is not None:
        vs["url"] = VS + name
    inactive = extra.pop("inactive", None)
    if inactive is not None:
        compose["inactive"] = inactive
    vs.update(extra)
    vs["compose"] = compose
    return vs


def isa(code: str, system: str = SHAPE) -> dict[str, Any]:
    return {"system": system, "filter": [{"property": "concept", "op": "is-a", "value": code}]}


def listed(*codes: str, system: str = SHAPE) -> dict[str, Any]:
    return {"system": system, "concept": [{"code": c} for c in codes]}


SHAPES = codesystem(
    SHAPE,
    [
        concept(
            "polygon",
            "Polygon",
            concept("triangle", "Triangle", sides=3),
            concept(
                "quad",
                "Quadrilateral",
                concept("square", "Square", sides=4),
                concept("rect", "Rectangle", sides=4),
                sides=4,
            ),
            concept("hexagon", "Hexagon", sides=6, inactive=True),
            notSelectable=True,
        ),
        concept(
            "curve",
            "Curve",
            concept("circle", "Circle"),
            concept("ellipse", "Ellipse"),
            notSelectable=True,
        ),
    ],
    version="1.0.0",
    property=[
        {"code": "notSelectable", "uri": PROPS + "notSelectable", "type": "boolean"},
        {"code": "inactive", "uri": PROPS + "inactive", "type": "boolean"},
        {"code": "sides", "type": "integer"},
    ],
)
COLOURS = codesystem(
    COLOUR, [concept("red", "Red"), concept("green", "Green"), concept("blue", "Blue")]
)
STORED = [
    valueset("polygons", isa("polygon")),
    valueset(
        "four-sided",
        {"system": SHAPE, "filter": [{"property": "sides", "op": "=", "value": "4"}]},
    ),
    valueset("mixed", listed("square", "circle"), listed("red", system=COLOUR)),
]


def make_wb(*extra: dict[str, Any], max_expansion: int = 10_000) -> Workbench:
    wb = Workbench(max_expansion=max_expansion)
    wb.load([SHAPES, COLOURS, *STORED, *extra])
    return wb


def pairs(wb: Workbench, vs: str | dict[str, Any], **kwargs: Any) -> list[tuple[str, str]]:
    frame = wb.expand(vs, **kwargs).frame
    return [(s.rsplit("/", 1)[-1], c) for s, c in zip(frame["system"], frame["code"], strict=True)]


def shapes(*codes: str) -> list[tuple[str, str]]:
    return [("shape", c) for c in codes]


@pytest.mark.parametrize(
    ("compose", "expected"),
    [
        pytest.param(valueset(None, {"system": SHAPE}), shapes(*ALL_SHAPES), id="whole-system"),
        pytest.param(
            valueset(None, {"system": SHAPE}, exclude=(listed("polygon", "curve"),)),
            shapes("triangle", "quad", "square", "rect", "hexagon", "circle", "ellipse"),
            id="whole-minus-concepts",
        ),
        pytest.param(
            valueset(None, isa("polygon"), exclude=(isa("quad"),)),
            shapes("polygon", "triangle", "hexagon"),
            id="filter-minus-filter",
        ),
        pytest.param(
            valueset(None, {"system": SHAPE}, exclude=({"valueSet": [VS + "polygons"]},)),
            shapes("curve", "circle", "ellipse"),
            id="exclude-valueset",
        ),
        pytest.param(
            valueset(None, listed("square", "circle", "triangle")),
            shapes("square", "circle", "triangle"),
            id="concept-list-in-listed-order",
        ),
        pytest.param(
            valueset(None, listed("square", "nope")), shapes("square"), id="unknown-listed-code"
        ),
        pytest.param(
            valueset(
                None,
                {
                    "system": SHAPE,
                    "filter": [
                        {"property": "concept", "op": "is-a", "value": "polygon"},
                        {"property": "sides", "op": "=", "value": "4"},
                        {"property": "concept", "op": "is-not-a", "value": "rect"},
                    ],
                },
            ),
            shapes("quad", "square"),
            id="filters-anded",
        ),
        pytest.param(
            valueset(None, {"valueSet": [VS + "polygons"]}),
            shapes("polygon", "triangle", "quad", "square", "rect", "hexagon"),
            id="import",
        ),
        pytest.param(
            valueset(None, {"system": SHAPE, "valueSet": [VS + "mixed"]}),
            shapes("square", "circle"),
            id="system-and-import-intersected",
        ),
        pytest.param(
            valueset(None, {"system": COLOUR, "valueSet": [VS + "mixed"]}),
            [("colour", "red")],
            id="other-system-and-import-intersected",
        ),
        pytest.param(
            valueset(
                None,
                {**listed("square", "circle", "triangle"), "valueSet": [VS + "polygons"]},
            ),
            shapes("square", "triangle"),
            id="concepts-and-import-intersected",
        ),
        pytest.param(
            valueset(None, {**isa("curve"), "valueSet": [VS + "mixed"]}),
            shapes("circle"),
            id="filter-and-import-intersected",
        ),
        pytest.param(
            valueset(None, {"valueSet": [VS + "polygons", VS + "four-sided"]}),
            shapes("quad", "square", "rect"),
            id="two-imports-intersected",
        ),
        pytest.param(
            valueset(None, {"valueSet": [VS + "four-sided", VS + "mixed"]}),
            shapes("square"),
            id="two-imports-intersected-across-systems",
        ),
        pytest.param(
            valueset(None, {"valueSet": [VS + "polygons"]}, {"valueSet": [VS + "mixed"]}),
            [
                *shapes("polygon", "triangle", "quad", "square", "rect", "hexagon", "circle"),
                ("colour", "red"),
            ],
            id="two-includes-united-without-duplicates",
        ),
        pytest.param(
            valueset(None, listed("square"), {"system": COLOUR}),
            [("shape", "square"), ("colour", "red"), ("colour", "green"), ("colour", "blue")],
            id="two-systems",
        ),
        pytest.param(
            valueset(None, {"system": COLOUR}, exclude=(listed("red"),)),
            [("colour", "red"), ("colour", "green"), ("colour", "blue")],
            id="exclude-other-system-has-no-effect",
        ),
        pytest.param(
            valueset(None, isa("polygon"), inactive=False),
            shapes("polygon", "triangle", "quad", "square", "rect"),
            id="compose-inactive-false",
        ),
        pytest.param(
            valueset(None, isa("polygon"), inactive=True),
            shapes("polygon", "triangle", "quad", "square", "rect", "hexagon"),
            id="compose-inactive-true",
        ),
    ],
)
def test_compose(compose: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert pairs(make_wb(), compose) == expected


def test_value_set_display_overrides() -> None:
    vs = valueset(
        None,
        {
            "system": SHAPE,
            "concept": [{"code": "square", "display": "Box"}, {"code": "circle"}],
        },
    )
    frame = make_wb().expand(vs).frame
    assert frame[["code", "display"]].values.tolist() == [["square", "Box"], ["circle", "Circle"]]


VERSIONS = [
    codesystem(VER, [concept("a", "A 1.9")], version="1.9.0"),
    codesystem(VER, [concept("a", "A 1.10"), concept("b", "B")], version="1.10.0"),
    codesystem(VER, [concept("a", "A 1.2"), concept("c", "C")], version="1.2.0"),
    valueset("imp", listed("a", system=VER), version="1.0.0"),
    valueset("imp", listed("a", "b", system=VER), version="2.0.0"),
    valueset("imp", listed("b", system=VER), version="1.5.0"),
]


@pytest.mark.parametrize(
    ("vs", "expected"),
    [
        pytest.param(
            valueset(None, {"system": VER}),
            [("1.10.0", "a", "A 1.10"), ("1.10.0", "b", "B")],
            id="latest-by-semver",
        ),
        pytest.param(
            valueset(None, {"system": VER, "version": "1.9.0"}),
            [("1.9.0", "a", "A 1.9")],
            id="system-pinned",
        ),
        pytest.param(
            valueset(None, {"system": VER, "version": "1.2.0"}),
            [("1.2.0", "a", "A 1.2"), ("1.2.0", "c", "C")],
            id="system-pinned-other",
        ),
        pytest.param(
            valueset(None, {"system": VER, "version": "1.2.x"}),
            [("1.2.0", "a", "A 1.2"), ("1.2.0", "c", "C")],
            id="system-pinned-pattern",
        ),
        pytest.param(
            valueset(None, {"valueSet": [VS + "imp|1.0.0"]}),
            [("1.10.0", "a", "A 1.10")],
            id="import-pinned",
        ),
        pytest.param(
            valueset(None, {"valueSet": [VS + "imp"]}),
            [("1.10.0", "a", "A 1.10"), ("1.10.0", "b", "B")],
            id="import-latest",
        ),
        pytest.param(VS + "imp|1.5.0", [("1.10.0", "b", "B")], id="expand-url-pipe-version"),
        pytest.param(
            VS + "imp", [("1.10.0", "a", "A 1.10"), ("1.10.0", "b", "B")], id="expand-url"
        ),
    ],
)
def test_versions(vs: str | dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    frame = make_wb(*VERSIONS).expand(vs).frame
    assert list(zip(frame["version"], frame["code"], frame["display"], strict=True)) == expected


def test_expand_version_argument() -> None:
    wb = make_wb(*VERSIONS)
    assert wb.expand(VS + "imp", version="1.0.0").frame["code"].tolist() == ["a"]


def test_frame_columns_and_flags() -> None:
    frame = make_wb().expand(valueset(None, isa("polygon"))).frame
    assert list(frame.columns) == ["code", "display", "system", "version", "abstract", "inactive"]
    assert frame.dtypes[["abstract", "inactive"]].tolist() == [bool, bool]
    rows = {r[0]: r for r in frame.itertuples(index=False, name=None)}
    assert rows["polygon"] == ("polygon", "Polygon", SHAPE, "1.0.0", True, False)
    assert rows["hexagon"] == ("hexagon", "Hexagon", SHAPE, "1.0.0", False, True)
    assert rows["square"] == ("square", "Square", SHAPE, "1.0.0", False, False)


@pytest.mark.parametrize(
    ("kwargs", "expected", "param"),
    [
        pytest.param({}, ALL_SHAPES, None, id="all"),
        pytest.param(
            {"active_only": True},
            [c for c in ALL_SHAPES if c != "hexagon"],
            {"name": "activeOnly", "valueBoolean": True},
            id="active-only",
        ),
        pytest.param(
            {"filter": "angle"},
            ["triangle", "rect"],
            {"name": "filter", "valueString": "angle"},
            id="text-filter",
        ),
        pytest.param(
            {"filter": "QUAD lat"},
            ["quad"],
            {"name": "filter", "valueString": "QUAD lat"},
            id="text-filter-words-anded",
        ),
        pytest.param(
            {"filter": "ell", "active_only": True},
            ["ellipse"],
            {"name": "activeOnly", "valueBoolean": True},
            id="text-filter-and-active",
        ),
        pytest.param(
            {"filter": "zzz"}, [], {"name": "filter", "valueString": "zzz"}, id="no-match"
        ),
    ],
)
def test_expand_options(
    kwargs: dict[str, Any], expected: list[str], param: dict[str, Any] | None
) -> None:
    expansion = make_wb().expand(valueset(None, {"system": SHAPE}), **kwargs)
    assert expansion.frame["code"].tolist() == expected
    assert expansion.total == len(expected)
    fhir = expansion.to_fhir()
    if param is not None:
        assert param in fhir["parameter"]
    assert ("contains" in fhir) is bool(expected)


def test_to_fhir_unpaged_shape() -> None:
    fhir = make_wb().expand(valueset(None, isa("quad"), listed("red", system=COLOUR))).to_fhir()
    assert list(fhir) == ["identifier", "timestamp", "total", "parameter", "contains"]
    assert fhir["identifier"].startswith("urn:uuid:")
    assert datetime.fromisoformat(fhir["timestamp"]).tzinfo is not None
    assert fhir["total"] == 4
    assert fhir["parameter"] == [  # the assumed defaults echoed, then what was used
        {"name": "activeOnly", "valueBoolean": False},
        {"name": "includeDesignations", "valueBoolean": False},
        {"name": "includeDefinition", "valueBoolean": False},
        {"name": "used-codesystem", "valueUri": COLOUR},
        {"name": "used-codesystem", "valueUri": SHAPE + "|1.0.0"},
    ]
    # one version of each system: used-codesystem names it, no item repeats it (as
    # tx.fhir.org's expansions; an item names its version when there are several)
    assert fhir["contains"] == [
        {"system": SHAPE, "code": "quad", "display": "Quadrilateral"},
        {"system": SHAPE, "code": "square", "display": "Square"},
        {"system": SHAPE, "code": "rect", "display": "Rectangle"},
        {"system": COLOUR, "code": "red", "display": "Red"},
    ]


def test_to_fhir_flags() -> None:
    fhir = make_wb().expand(valueset(None, listed("polygon", "hexagon"))).to_fhir()
    assert fhir["contains"] == [
        {"system": SHAPE, "abstract": True, "code": "polygon", "display": "Polygon"},
        {"system": SHAPE, "inactive": True, "code": "hexagon", "display": "Hexagon"},
    ]


@pytest.mark.parametrize(
    ("offset", "count", "expected"),
    [
        pytest.param(0, 3, ["polygon", "triangle", "quad"], id="first-page"),
        pytest.param(3, 3, ["square", "rect", "hexagon"], id="second-page"),
        pytest.param(8, 3, ["ellipse"], id="last-short-page"),
        pytest.param(9, 3, [], id="past-the-end"),
        pytest.param(2, None, ALL_SHAPES[2:], id="offset-only"),
        pytest.param(0, 0, [], id="count-zero"),
    ],
)
def test_paging(offset: int, count: int | None, expected: list[str]) -> None:
    expansion = make_wb().expand(valueset(None, {"system": SHAPE}), offset=offset, count=count)
    assert expansion.total == 9
    assert expansion.frame["code"].tolist() == expected
    fhir = expansion.to_fhir()
    assert fhir["total"] == 9
    assert fhir["offset"] == offset
    assert [c["code"] for c in fhir.get("contains", [])] == expected
    assert {"name": "offset", "valueInteger": offset} in fhir["parameter"]
    if count is not None:
        assert {"name": "count", "valueInteger": count} in fhir["parameter"]


def test_include_designations(default_wb: Workbench) -> None:
    vs = valueset(None, {"system": DEMO, "concept": [{"code": "video"}]})
    expansion = default_wb.expand(vs, include_designations=True)
    frame = expansion.frame
    assert list(frame.columns)[-1] == "designations"
    values = [(d["language"], d["value"]) for d in frame["designations"][0]]
    assert values == [("de", "Videosprechstunde"), ("fr", "Téléconsultation vidéo")]
    fhir = expansion.to_fhir()
    assert [d["value"] for d in fhir["contains"][0]["designation"]] == [
        "Videosprechstunde",
        "Téléconsultation vidéo",
    ]
    assert {"name": "includeDesignations", "valueBoolean": True} in fhir["parameter"]
    plain = default_wb.expand(vs).to_fhir()
    assert "designation" not in plain["contains"][0]


def test_display_language(default_wb: Workbench) -> None:
    vs = valueset(None, {"system": DEMO, "concept": [{"code": "video"}, {"code": "phone"}]})
    frame = default_wb.expand(vs, display_language="fr").frame
    assert frame["display"].tolist() == ["Téléconsultation vidéo", "Consultation téléphonique"]


@pytest.mark.parametrize(
    ("offset", "count", "size"),
    [
        pytest.param(0, 5, 5, id="page-of-limit"),
        pytest.param(6, 5, 3, id="short-page"),
        pytest.param(0, 2, 2, id="small-page"),
    ],
)
def test_too_costly_pages_are_fine(offset: int, count: int, size: int) -> None:
    wb = make_wb(max_expansion=5)
    fhir = wb.expand(valueset("big", {"system": SHAPE}), offset=offset, count=count).to_fhir()
    assert len(fhir["contains"]) == size
    assert fhir["total"] == 9


def test_too_costly_unpaged() -> None:
    wb = make_wb(max_expansion=5)
    expansion = wb.expand(valueset("big", {"system": SHAPE}))
    with pytest.raises(TooCostlyError) as info:
        expansion.to_fhir()
    assert str(info.value) == (
        f"The expansion of {VS}big has 9 codes, more than the limit of 5; "
        "ask for a page with offset and count"
    )
    assert len(expansion.frame) == 9
    assert wb.expand(valueset(None, listed("square", "rect"))).to_fhir()["total"] == 2


FRAGMENT = "http://example.org/fhir/CodeSystem/fragment"


@pytest.mark.parametrize(
    ("extra", "target", "error", "message"),
    [
        pytest.param(
            [],
            VS + "nope",
            ValueSetNotFoundError,
            f"A definition for the value Set '{VS}nope' could not be found",
            id="unknown-valueset",
        ),
        pytest.param(
            [],
            VS + "polygons|9.9",
            ValueSetNotFoundError,
            f"A definition for the value Set '{VS}polygons|9.9' could not be found",
            id="unknown-valueset-version",
        ),
        pytest.param(
            [],
            valueset(None, {"valueSet": [VS + "nope"]}),
            ValueSetNotFoundError,
            f"A definition for the value Set '{VS}nope' could not be found",
            id="unknown-import",
        ),
        pytest.param(
            [],
            valueset(None, isa("x", system="http://nope")),
            CodeSystemNotFoundError,
            "A definition for CodeSystem 'http://nope' could not be found, so the value set "
            "cannot be expanded",
            id="filter-on-unknown-system",
        ),
        pytest.param(
            [],
            valueset(None, {"system": "http://nope"}),
            CodeSystemNotFoundError,
            "A definition for CodeSystem 'http://nope' could not be found, so the value set "
            "cannot be expanded",
            id="whole-unknown-system",
        ),
        pytest.param(
            [],
            valueset(None, {"system": SHAPE, "version": "9.9"}),
            CodeSystemNotFoundError,
            f"A definition for CodeSystem '{SHAPE}' version '9.9' could not be found, so the "
            "value set cannot be expanded. Valid versions: 1.0.0",
            id="unknown-system-version",
        ),
        pytest.param(
            [],
            valueset(None, {"system": SHAPE, "version": "1"}),
            CodeSystemNotFoundError,
            f"A definition for CodeSystem '{SHAPE}' version '1' could not be found, so the "
            "value set cannot be expanded. Valid versions: 1.0.0",
            id="a-partial-version-is-no-prefix",
        ),
        pytest.param(
            [
                valueset("A", {"valueSet": [VS + "B"]}),
                valueset("B", {"valueSet": [VS + "A"]}),
            ],
            VS + "A",
            ImportCycleError,
            f"The value sets import each other in a cycle: {VS}A -> {VS}B -> {VS}A",
            id="import-cycle",
        ),
        pytest.param(
            [valueset("self", listed("square"), {"valueSet": [VS + "self"]})],
            VS + "self",
            ImportCycleError,
            f"The value sets import each other in a cycle: {VS}self -> {VS}self",
            id="self-import",
        ),
    ],
)
def test_errors(
    extra: list[dict[str, Any]],
    target: str | dict[str, Any],
    error: type[Exception],
    message: str,
) -> None:
    wb = make_wb(*extra)
    with pytest.raises(error) as info:
        wb.expand(target)
    assert str(info.value) == message


def test_listed_codes_of_an_unloaded_system_are_taken_as_listed() -> None:
    vs = valueset(None, {"system": "http://nope", "concept": [{"code": "x", "display": "X"}]})
    assert make_wb().expand(vs).frame.values.tolist() == [
        ["x", "X", "http://nope", None, False, False]
    ]


def test_cache_sees_a_changed_codesystem() -> None:
    wb = make_wb(valueset("colours", {"system": COLOUR}))
    assert wb.expand(VS + "colours").frame["code"].tolist() == ["red", "green", "blue"]
    wb.load(codesystem(COLOUR, [concept("red", "Red"), concept("cyan", "Cyan")]))
    assert wb.expand(VS + "colours").frame["code"].tolist() == ["red", "cyan"]


def test_cache_sees_a_new_version_and_a_delete() -> None:
    wb = make_wb(valueset("squares", isa("quad")))
    assert wb.expand(VS + "squares").frame["code"].tolist() == ["quad", "square", "rect"]
    newer = codesystem(
        SHAPE, [concept("quad", "Quad", concept("rhombus", "Rhombus"))], version="2.0.0", id="v2"
    )
    wb.load(newer)
    frame = wb.expand(VS + "squares").frame
    assert frame[["version", "code"]].values.tolist() == [["2.0.0", "quad"], ["2.0.0", "rhombus"]]
    wb.registry.delete("CodeSystem", "v2")
    assert wb.expand(VS + "squares").frame["code"].tolist() == ["quad", "square", "rect"]


def test_cache_sees_a_changed_import() -> None:
    wb = make_wb(valueset("outer", {"valueSet": [VS + "mixed"]}))
    assert wb.expand(VS + "outer").frame["code"].tolist() == ["square", "circle", "red"]
    wb.load(valueset("mixed", listed("triangle")))
    assert wb.expand(VS + "outer").frame["code"].tolist() == ["triangle"]


def test_remembered_membership_sees_each_change() -> None:
    """A compiled value set remembers its membership answers; a change to its code system,
    to itself or to what it imports forgets them with it."""
    wb = make_wb(
        valueset("colours", {"system": COLOUR}), valueset("outer", {"valueSet": [VS + "mixed"]})
    )

    def valid(vs: str, code: str, system: str) -> bool:
        return bool(wb.validate_code(VS + vs, code=code, system=system))

    assert [valid("colours", "cyan", COLOUR) for _ in range(2)] == [False, False]
    wb.load(codesystem(COLOUR, [concept("red", "Red"), concept("cyan", "Cyan")]))
    assert valid("colours", "cyan", COLOUR)
    wb.load(valueset("colours", listed("red", system=COLOUR)))
    assert not valid("colours", "cyan", COLOUR)
    assert [valid("outer", "triangle", SHAPE) for _ in range(2)] == [False, False]
    wb.load(valueset("mixed", listed("triangle")))
    assert valid("outer", "triangle", SHAPE)


def test_cache_sees_deleted_resources() -> None:
    wb = make_wb(valueset("colours", {"system": COLOUR}))
    assert len(wb.expand(VS + "colours")) == 3
    colour_id = next(r["id"] for r in wb.registry.all("CodeSystem") if r["url"] == COLOUR)
    wb.registry.delete("CodeSystem", colour_id)
    with pytest.raises(CodeSystemNotFoundError) as info:
        wb.expand(VS + "colours")
    assert str(info.value) == (
        f"A definition for CodeSystem '{COLOUR}' could not be found, so the value set cannot be "
        "expanded"
    )
    vs_id = next(r["id"] for r in wb.registry.all("ValueSet") if r["url"] == VS + "colours")
    wb.registry.delete("ValueSet", vs_id)
    with pytest.raises(ValueSetNotFoundError):
        wb.expand(VS + "colours")


@pytest.mark.parametrize(
    ("url", "total"),
    [
        pytest.param("workbench-demo-all", 15, id="all"),
        pytest.param("workbench-demo-in-person", 9, id="in-person"),
        pytest.param("workbench-demo-remote-live", 3, id="remote-live"),
        pytest.param("workbench-demo-bookable", 9, id="bookable"),
    ],
)
def test_demo_value_sets(default_wb: Workbench, url: str, total: int) -> None:
    assert default_wb.expand(VS + url).total == total


@pytest.mark.parametrize(
    ("include", "rule"),
    [
        ({}, "vsd-1"),
        ({"valueSet": [VS + "shapes"], "concept": [{"code": "a"}]}, "vsd-2"),
        (
            {
                "system": "http://hl7.org/fhir/administrative-gender",
                "concept": [{"code": "male"}],
                "filter": [{"property": "concept", "op": "is-a", "value": "male"}],
            },
            "vsd-3",
        ),
    ],
)
def test_a_given_valueset_that_breaks_an_invariant_is_refused(
    wb: Workbench, include: dict[str, Any], rule: str
) -> None:
    given = {"resourceType": "ValueSet", "status": "draft", "compose": {"include": [include]}}
    with pytest.raises(InvalidResourceError, match=rule):
        wb.expand(given)
    with pytest.raises(InvalidResourceError, match=rule):
        wb.validate_code(given, code="male", system="http://hl7.org/fhir/administrative-gender")
