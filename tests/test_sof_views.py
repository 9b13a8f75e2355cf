"""SQL on FHIR v2 views: the spec's kinds of cases (basic columns, forEach, forEachOrNull,
unionAll, nested selects and column order, collection, where, constants, %rowIndex,
repeat, the required functions and FHIRPath operators), each a view over a few resources
with the rows the spec's algorithm emits; and the errors, each naming its place."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from workbench.views import ViewDefinitionError, view

PATIENTS: list[dict[str, Any]] = [
    {
        "resourceType": "Patient",
        "id": "pt1",
        "active": True,
        "gender": "female",
        "birthDate": "1970-06",
        "name": [
            {"use": "official", "family": "Smith", "given": ["John", "James"]},
            {"family": "Jones", "given": ["Jane"]},
        ],
        "identifier": [{"system": "ssn", "value": "s1"}],
        "telecom": [{"system": "phone", "value": "t11"}, {"system": "email", "value": "e11"}],
        "contact": [
            {"telecom": [{"system": "phone", "value": "t12"}, {"system": "email", "value": "e12"}]},
            {"telecom": [{"system": "phone", "value": "t13"}]},
        ],
        "managingOrganization": {"reference": "Organization/o1"},
        "generalPractitioner": [
            {"reference": "Practitioner/pr1"},
            {"reference": "http://example.org/fhir/Organization/o2/_history/3"},
        ],
        "extension": [
            {
                "url": "http://hl7.org/fhir/us/core/StructureDefinition/us-core-race",
                "extension": [
                    {"url": "ombCategory", "valueCoding": {
                        "system": "urn:oid:2.16.840.1.113883.6.238", "code": "2106-3",
                        "display": "White"}},
                    {"url": "text", "valueString": "White"},
                ],
            }
        ],
        "deceasedBoolean": False,
    },
    {
        "resourceType": "Patient",
        "id": "pt2",
        "active": False,
        "gender": "male",
        "identifier": [{"system": "ssn", "value": "s2"}],
        "telecom": [{"system": "phone", "value": "t21"}],
        "deceasedDateTime": "2020-05-17T18:19:43.6789Z",
    },
    {"resourceType": "Patient", "id": "pt3"},
]  # fmt: skip


def columns(*pairs: tuple[str, str], **options: Any) -> dict[str, Any]:
    """A select of columns, each (name, path)."""
    return {"column": [{"name": n, "path": p} for n, p in pairs], **options}


def patients(*selects: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"resourceType": "ViewDefinition", "resource": "Patient", "select": list(selects),
            **extra}  # fmt: skip


ROWS = [
    pytest.param(
        patients(columns(("id", "getResourceKey()"), ("gender", "gender"), ("active", "active"))),
        [("pt1", "female", True), ("pt2", "male", False), ("pt3", None, None)],
        id="basic columns, a missing element is null",
    ),
    pytest.param(
        patients(columns(("id", "id")), {"forEach": "name", **columns(("family", "family"))}),
        [("pt1", "Smith"), ("pt1", "Jones")],
        id="forEach drops a resource with no items",
    ),
    pytest.param(
        patients(columns(("id", "id")), {"forEachOrNull": "name", **columns(("family", "family"))}),
        [("pt1", "Smith"), ("pt1", "Jones"), ("pt2", None), ("pt3", None)],
        id="forEachOrNull keeps a row of nulls",
    ),
    pytest.param(
        patients(
            columns(("id", "id"), ("ssn", "identifier.where(system='ssn').value")),
            {"unionAll": [
                {"forEach": "telecom.where(system='phone')", **columns(("phone", "value"))},
                {"forEach": "contact.telecom.where(system='phone')", **columns(("phone", "value"))},
            ]},
        ),
        [("pt1", "s1", "t11"), ("pt1", "s1", "t12"), ("pt1", "s1", "t13"),
         ("pt2", "s2", "t21")],
        id="the functional model's example: unionAll of two forEach",
    ),
    pytest.param(
        patients(
            columns(("id", "id")),
            {"forEach": "contact", **columns(("contact_index", "%rowIndex")),
             "select": [{"forEach": "telecom", **columns(("telecom_index", "%rowIndex"),
                                                         ("system", "system"))}]},
        ),
        [("pt1", 0, 0, "phone"), ("pt1", 0, 1, "email"), ("pt1", 1, 0, "phone")],
        id="nested iteration with independent row indexes",
    ),
    pytest.param(
        patients(
            columns(("id", "id")),
            {"forEach": "name", **columns(("name_index", "%rowIndex")),
             "select": [{"unionAll": [
                 {"forEach": "given", **columns(("given_index", "%rowIndex"), ("value", "$this"))},
                 columns(("given_index", "%rowIndex"), ("value", "family")),
             ]}]},
        ),
        [("pt1", 0, 0, "John"), ("pt1", 0, 1, "James"), ("pt1", 0, 0, "Smith"),
         ("pt1", 1, 0, "Jane"), ("pt1", 1, 1, "Jones")],
        id="row index with unionAll: a branch without iteration inherits it",
    ),
    pytest.param(
        patients(columns(("id", "id"), ("i", "%rowIndex")), where=[{"path": "id = 'pt3'"}]),
        [("pt3", 0)],
        id="row index at the top level is 0",
    ),
    pytest.param(
        patients(columns(("id", "id")), {"forEachOrNull": "name", **columns(("i", "%rowIndex"),
                                                                             ("f", "family"))}),
        [("pt1", 0, "Smith"), ("pt1", 1, "Jones"), ("pt2", 0, None), ("pt3", 0, None)],
        id="row index of an empty forEachOrNull is 0",
    ),
    pytest.param(
        patients(columns(("id", "id")), {"forEachOrNull": "managingOrganization",
                                         **columns(("org", "reference"))}),
        [("pt1", "Organization/o1"), ("pt2", None), ("pt3", None)],
        id="forEachOrNull over an absent single element keeps a row of nulls",
    ),
    pytest.param(
        patients(
            {**columns(("a", "'A'"), ("b", "'B'")),
             "select": [{"forEach": "name", **columns(("c", "'C'"), ("d", "'D'"))}],
             "unionAll": [columns(("e", "'E1'"), ("f", "'F1'")),
                          columns(("e", "'E2'"), ("f", "'F2'"))]},
            columns(("g", "'G'"), ("h", "'H'")),
            where=[{"path": "id = 'pt1'"}],
        ),
        [("A", "B", "C", "D", "E1", "F1", "G", "H"), ("A", "B", "C", "D", "E2", "F2", "G", "H"),
         ("A", "B", "C", "D", "E1", "F1", "G", "H"), ("A", "B", "C", "D", "E2", "F2", "G", "H")],
        id="the spec's column ordering example",
    ),
    pytest.param(
        patients(columns(("id", "id")), {"column": [{"name": "given", "path": "name.given",
                                                      "collection": True}]}),
        [("pt1", ["John", "James", "Jane"]), ("pt2", []), ("pt3", [])],
        id="a collection column, [] where the array is absent",
    ),
    pytest.param(
        patients(columns(("id", "id")), where=[{"path": "name.where(use = 'official').exists()"}]),
        [("pt1",)],
        id="where keeps the resources it is true for",
    ),
    pytest.param(
        patients(columns(("id", "id")), where=[{"path": "active"}, {"path": "gender = %g"}],
                 constant=[{"name": "g", "valueCode": "female"}]),
        [("pt1",)],
        id="several where paths and a constant",
    ),
    pytest.param(
        patients(columns(("id", "id"), ("second", "name[%i].family"), ("none", "name[%neg].family"),
                         ("org", "managingOrganization[1].reference")),
                 constant=[{"name": "i", "valueInteger": 1}, {"name": "neg", "valueInteger": -1}]),
        [("pt1", "Jones", None, None), ("pt2", None, None, None), ("pt3", None, None, None)],
        id="an index given by an integer constant; no item at a negative or missing position",
    ),
    pytest.param(
        patients(columns(("id", "id")), where=[{"path": "name.where(family = 'Smith').empty()"}]),
        [("pt2",), ("pt3",)],
        id="where empty() is true for a resource without the element",
    ),
    pytest.param(
        patients(columns(
            ("id", "id"), ("first", "name.first().family"), ("last", "name.last().family"),
            ("given", "name.given.join(', ')"), ("n", "name.count()"), ("no", "name.empty()"),
            ("official", "name.exists(use = 'official')"), ("inactive", "active.not()"),
        )),
        [("pt1", "Smith", "Jones", "John, James, Jane", 2, False, True, False),
         ("pt2", None, None, "", 0, True, False, True),
         ("pt3", None, None, "", 0, True, False, None)],
        id="first, last, join, count, empty, exists with criteria, not",
    ),
    pytest.param(
        patients(columns(
            ("id", "id"), ("dead", "deceased.ofType(boolean)"),
            ("died", "deceased.ofType(dateTime)"), ("known", "deceased.exists()"),
            ("is_bool", "deceased is boolean"),
        )),
        [("pt1", False, None, True, True), ("pt2", None, "2020-05-17T18:19:43.6789Z", True, False),
         ("pt3", None, None, False, None)],
        id="a choice element by ofType, exists and is",
    ),
    pytest.param(
        patients(columns(
            ("id", "id"),
            ("race", "extension('http://hl7.org/fhir/us/core/StructureDefinition/us-core-race')"
                     ".extension('ombCategory').value.ofType(Coding).code"),
            ("text", "extension('http://hl7.org/fhir/us/core/StructureDefinition/us-core-race')"
                     ".extension('text').value.ofType(string)"),
        ), where=[{"path": "id = 'pt1'"}]),
        [("pt1", "2106-3", "White")],
        id="extension(url), nested, with a choice value",
    ),
    pytest.param(
        patients(columns(
            ("id", "getResourceKey()"), ("org", "managingOrganization.getReferenceKey()"),
            ("org_typed", "managingOrganization.getReferenceKey(Organization)"),
            ("not_patient", "managingOrganization.getReferenceKey(Patient)"),
        ), {"forEach": "generalPractitioner", **columns(("gp", "getReferenceKey()"))},
            where=[{"path": "id = 'pt1'"}]),
        [("pt1", "o1", "o1", None, "pr1"), ("pt1", "o1", "o1", None, "o2")],
        id="resource and reference keys",
    ),
    pytest.param(
        patients(columns(
            ("id", "id"), ("low", "birthDate.lowBoundary()"), ("high", "birthDate.highBoundary()"),
            ("died_low", "deceased.ofType(dateTime).lowBoundary()"),
        ), where=[{"path": "id != 'pt3'"}]),
        [("pt1", "1970-06-01", "1970-06-30", None),
         ("pt2", None, None, "2020-05-17T18:19:43.678900000Z")],
        id="boundaries of a partial date and a dateTime",
    ),
    pytest.param(
        patients(columns(
            ("id", "id"), ("sum", "1 + 2 * 3"), ("div", "7 div 2"), ("mod", "7 mod 2"),
            ("ratio", "1 / 4"), ("concat", "'a' & {} & 'b'"), ("text", "'x' + 'y'"),
            ("cmp", "2 > 1 and 1 <= 1.0"), ("eq", "gender = 'female'"),
            ("ne", "gender != 'female'"), ("equiv", "'Ab  c' ~ 'ab c'"),
            ("xor", "true xor active"), ("imp", "active implies false"),
            ("member", "gender in ('male' | 'other')"), ("neg", "-(2)"),
        ), where=[{"path": "id = 'pt1' or id = 'pt3'"}]),
        [("pt1", 7, 3, 1, 0.25, "ab", "xy", True, True, False, True, False, False, False, -2),
         ("pt3", 7, 3, 1, 0.25, "ab", "xy", True, None, None, True, None, None, None, -2)],
        id="FHIRPath operators and three-valued logic",
    ),
]  # fmt: skip


def _rows(found: Any) -> list[tuple[Any, ...]]:
    def plain(value: Any) -> Any:
        return None if value is None or value != value else value  # NaN -> None

    return [tuple(plain(v) for v in row) for row in found.itertuples(index=False)]


@pytest.mark.parametrize(("definition", "expected"), ROWS)
def test_view_rows(definition: dict[str, Any], expected: list[tuple[Any, ...]]) -> None:
    assert _rows(view(definition, PATIENTS)) == expected


@pytest.mark.parametrize(("definition", "expected"), ROWS[:6])
def test_polars_engine_gives_the_same_rows(
    definition: dict[str, Any], expected: list[tuple[Any, ...]]
) -> None:
    found = view(definition, PATIENTS, engine="polars")
    assert [tuple(r) for r in found.iter_rows()] == expected


EMPTY_COLLECTIONS = [
    ("name.family", "an absent array"),
    ("gender", "an absent single element"),
    ("name.where(use = 'nickname').given", "nothing kept by where"),
    ("telecom.value | name.family", "a union with an absent side"),
]


@pytest.mark.parametrize("engine", ["pandas", "polars"])
@pytest.mark.parametrize(
    "path", [pytest.param(p, id=i) for p, i in EMPTY_COLLECTIONS]
)  # fmt: skip
def test_a_collection_column_of_nothing_is_an_empty_list(path: str, engine: str) -> None:
    """SQL on FHIR: a ``collection: true`` column is ``[]`` (never null) when nothing is
    found, whichever way nothing is found; ``in`` over nothing is false."""
    definition = patients({"column": [{"name": "v", "path": path, "collection": True},
                                      {"name": "has", "path": "'x' in name.family"}]})  # fmt: skip
    found = view(definition, [{"resourceType": "Patient", "id": "p"}], engine=engine)
    rows = found.to_dict("records") if engine == "pandas" else found.to_dicts()
    assert rows == [{"v": [], "has": False}]


JOINS = [
    ("name.given.join(', ')", ["John, James, Jane", "", ""], "items of every name"),
    ("name.given.join()", ["JohnJamesJane", "", ""], "the default separator"),
    ("gender.join('-')", ["female", "male", ""], "a single element"),
    ("name.where(use = 'nickname').given.join('+')", ["", "", ""], "nothing kept by where"),
]


@pytest.mark.parametrize("engine", ["pandas", "polars"])
@pytest.mark.parametrize(("path", "expected"), [pytest.param(p, e, id=i) for p, e, i in JOINS])
def test_join_of_nothing_is_the_empty_text(path: str, expected: list[str], engine: str) -> None:
    """As the SQL on FHIR suite has it (fhirpath.json "string join"): ``''``, not null, for
    a resource without the items (pt2 has no name, pt3 nothing)."""
    found = view(patients(columns(("v", path))), PATIENTS, engine=engine)
    assert list(found["v"]) == expected


QUESTIONNAIRE = {
    "resourceType": "QuestionnaireResponse", "id": "qr1", "status": "completed",
    "item": [
        {"linkId": "1", "text": "Demographics", "item": [{"linkId": "1.1", "text": "Age"}]},
        {"linkId": "2", "text": "Medical History", "answer": [{"item": [
            {"linkId": "2.1", "text": "Conditions", "answer": [{"item": [
                {"linkId": "2.1.1", "text": "Diabetes Type", "item": [
                    {"linkId": "2.1.1.1", "item": [{"linkId": "2.1.1.1.1", "item": [
                        {"linkId": "2.1.1.1.1.1"}]}]}]}]}]}]}]},
    ],
}  # fmt: skip


def test_repeat_flattens_every_depth_in_document_order() -> None:
    definition = {
        "resource": "QuestionnaireResponse",
        "select": [
            columns(("id", "id")),
            {"repeat": ["item", "answer.item"], **columns(("link", "linkId"), ("i", "%rowIndex"))},
        ],
    }
    found = _rows(view(definition, [QUESTIONNAIRE]))
    links = ["1", "1.1", "2", "2.1", "2.1.1", "2.1.1.1", "2.1.1.1.1", "2.1.1.1.1.1"]
    assert found == [("qr1", link, i) for i, link in enumerate(links)]


def _answered(link: str, depth: int) -> dict[str, Any]:
    """An item answered ``A<linkId>`` (a third child unanswered), with three children each
    down to ``depth``."""
    found: dict[str, Any] = {"linkId": link}
    if not link.endswith(".3"):
        found["answer"] = [{"valueString": f"A{link}"}]
    if depth:
        found["item"] = [_answered(f"{link}.{i}", depth - 1) for i in range(1, 4)]
    return found


def _depth_first(resource_id: str, items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The rows a repeat over ``item`` with a nested forEachOrNull over ``answer`` emits."""
    rows: list[tuple[Any, ...]] = []
    for item in items:
        answers = [a["valueString"] for a in item.get("answer", [])] or [None]
        rows += [(resource_id, item["linkId"], answer) for answer in answers]
        rows += _depth_first(resource_id, item.get("item", []))
    return rows


ANSWERED = [
    {"resourceType": "QuestionnaireResponse", "id": f"qr{n}", "status": "completed",
     "item": [_answered(str(i), 2) for i in range(1, 4)]}
    for n in range(3)
]  # fmt: skip
SMALL = {"resourceType": "QuestionnaireResponse", "id": "qr1", "status": "completed",
         "item": [{"linkId": "1", "item": [{"linkId": "1.1", "answer": [{"valueString": "A1.1"}]},
                                            {"linkId": "1.2"}]}]}  # fmt: skip


@pytest.mark.parametrize(
    ("resources", "runs", "size"),
    [pytest.param([SMALL], 30, 3, id="the suite's case, 30 runs"),
     pytest.param(ANSWERED, 5, 117, id="3 resources of 39 items, 5 runs")],
)  # fmt: skip
def test_repeat_with_a_nested_for_each_or_null_keeps_each_answer_on_its_item(
    resources: list[dict[str, Any]], runs: int, size: int
) -> None:
    """Every run, each item's answer (or null) is on its own row, items in document order:
    the items' keys are the same however often the frame is read."""
    definition = {"resource": "QuestionnaireResponse", "select": [{"repeat": ["item"], "select": [
        columns(("id", "getResourceKey()"), ("link", "linkId")),
        {"forEachOrNull": "answer", **columns(("answer", "value.ofType(string)"))},
    ]}]}  # fmt: skip
    expected = [row for r in resources for row in _depth_first(r["id"], r["item"])]
    assert len(expected) == size
    for _ in range(runs):
        found = view(definition, resources, engine="polars")
        assert [tuple(row) for row in found.iter_rows()] == expected


ERRORS = [
    pytest.param({}, "resource", id="no resource"),
    pytest.param({"resource": "Patient"}, "at least one 'select'", id="no select"),
    pytest.param({"resource": "Patientx", "select": [columns(("id", "id"))]},
                 "not a FHIR R4 resource type", id="unknown resource type"),
    pytest.param(patients({"forEach": "@@", **columns(("id", "id"))}), "select[0].forEach",
                 id="a path that is not FHIRPath"),
    pytest.param(patients({"forEach": 1, **columns(("id", "id"))}), "forEach",
                 id="forEach not text"),
    pytest.param(patients(columns(("id", "name.nickname"))), "HumanName has no element 'nickname'",
                 id="an element the type does not have"),
    pytest.param(patients(columns(("id", "name.family.foo"))), "a string has no element 'foo'",
                 id="a step into a primitive"),
    pytest.param(patients(columns(("id", "name.soundex()"))), "soundex() is not a function",
                 id="an unknown function"),
    pytest.param(patients(columns(("id", "deceased"))), "choice of boolean, dateTime",
                 id="a choice without ofType"),
    pytest.param(patients(columns(("id", "id"), ("id", "gender"))), "'id' is already defined",
                 id="a column defined twice"),
    pytest.param(patients({"unionAll": [columns(("a", "id")), columns(("b", "id"))]}),
                 "different columns", id="unionAll branches that differ"),
    pytest.param(patients({"forEach": "name", "forEachOrNull": "name", **columns(("a", "id"))}),
                 "only one of forEach", id="forEach and forEachOrNull"),
    pytest.param(patients(columns(("id", "id")), where=[{"path": "name.family"}]),
                 "not a boolean", id="a where path that is not boolean"),
    pytest.param(patients(columns(("id", "%missing"))), "%missing is not a constant",
                 id="an unknown constant"),
    pytest.param(patients(columns(("id", "id")), constant=[{"name": "n", "valueInteger": "x"}]),
                 "constant[0]: the constant 'n' (valueInteger)", id="a constant of the wrong type"),
    pytest.param(patients(columns(("f", "name[%s].family")),
                          constant=[{"name": "s", "valueString": "1"}]),
                 "column 'f' (select[0].column[0]): in 'name[%s].family': the index %s is a "
                 "string constant ('1'); an index must be an integer",
                 id="a string constant as an index"),
    pytest.param(patients(columns(("f", "name[%x].family"))),
                 "in 'name[%x].family': the index %x is not a constant of the view",
                 id="an unknown constant as an index"),
    pytest.param(patients(columns(("f", "name[id].family"))),
                 "an index must be an integer literal or an integer constant",
                 id="an index computed from the data"),
    pytest.param(patients(columns(("1id", "id"))), "is not a name", id="a column name"),
    pytest.param(patients(columns(("family", "name.family"))),
                 "column 'family' (select[0].column[0]): several values found",
                 id="collection false meeting several values"),
]  # fmt: skip


@pytest.mark.parametrize(("definition", "message"), ERRORS)
def test_view_errors_name_the_place(definition: dict[str, Any], message: str) -> None:
    with pytest.raises(ViewDefinitionError, match=None) as raised:
        view(definition, PATIENTS)
    assert message in str(raised.value)
    assert isinstance(raised.value, ValueError)


def test_a_resource_with_a_wrong_json_type_is_skipped_and_named() -> None:
    bad = [{"resourceType": "Patient", "id": "x", "gender": 1}, *PATIENTS]
    with pytest.warns(UserWarning, match="Patient/x: the element \\(gender\\)"):
        found = view(patients(columns(("id", "id"), ("g", "gender"))), bad)
    assert list(found["id"]) == ["pt1", "pt2", "pt3"]
    assert [s.index for s in found.attrs["skipped"]] == [0]


def test_a_view_definition_loaded_from_a_file_runs_by_its_url(tmp_path: Any) -> None:
    from workbench import Workbench

    definition = {
        **patients(columns(("id", "id"), ("gender", "gender"))),
        "url": "http://example.org/ViewDefinition/genders",
        "name": "genders",
    }
    folder = tmp_path / "views"
    folder.mkdir()
    (folder / "ViewDefinition-genders.json").write_bytes(orjson.dumps(definition))
    wb = Workbench()
    summary = wb.load(folder)
    assert "1 ViewDefinition" in summary.counts() and not summary.skipped
    found = wb.view("http://example.org/ViewDefinition/genders", PATIENTS)
    assert _rows(found) == [("pt1", "female"), ("pt2", "male"), ("pt3", None)]
    assert _rows(wb.view(str(folder / "ViewDefinition-genders.json"), PATIENTS)) == _rows(found)
    with pytest.raises(ViewDefinitionError, match="neither a ViewDefinition loaded"):
        wb.view("http://example.org/ViewDefinition/none", PATIENTS)


@pytest.mark.parametrize("path", ["$this", "where(status = 'completed')"])
def test_a_repeat_that_does_not_go_down_is_refused(path: str) -> None:
    definition = {"resource": "QuestionnaireResponse",
                  "select": [{"repeat": [path], **columns(("link", "id"))}]}  # fmt: skip
    with pytest.raises(ViewDefinitionError, match="does not go down"):
        view(definition, [QUESTIONNAIRE])


def test_bad_data_is_named_and_the_rest_is_read(tmp_path: Any) -> None:
    good = [orjson.dumps(p) for p in PATIENTS]
    lines = [good[0], b'{"resourceType": "Patient", "id": ', good[1],
             b'{"resourceType": "Nonsense", "id": "n"}', b"[" * 1000 + b"]" * 1000,
             orjson.dumps({"resourceType": "Observation", "id": "o", "status": "final",
                           "code": {"text": "x"}}), good[2]]  # fmt: skip
    (tmp_path / "Patient.ndjson").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "empty.ndjson").write_bytes(b"")
    (tmp_path / "notes.json").write_bytes(b"this is not JSON")
    with pytest.warns(UserWarning, match="problem\\(s\\) reading the data"):
        found = view(patients(columns(("id", "id"))), tmp_path)
    assert list(found["id"]) == ["pt1", "pt2", "pt3"]
    named = {(e.source.rsplit("/", 1)[-1], e.line) for e in found.attrs["read_errors"]}
    assert {("Patient.ndjson", 2), ("Patient.ndjson", 4), ("Patient.ndjson", 5)} <= named
    assert ("notes.json", None) in named


def test_a_file_read_in_one_parse_names_the_lines_it_cannot_read(tmp_path: Any) -> None:
    """Clean chunks go to the view as read (one parse): a malformed line, a Patient whose
    gender is a number, are named by file and line; an Observation whose elements clash
    with the Patient view's schema is none of the view's business."""
    lines = [orjson.dumps({**PATIENTS[0], "id": f"p{i}"}) for i in range(50)]
    lines[10] = b'{"resourceType": "Patient", "id": "broken"'
    lines[20] = orjson.dumps({"resourceType": "Patient", "id": "g", "gender": 1})
    lines[30] = orjson.dumps({"resourceType": "Observation", "id": "o", "name": "clash"})
    (tmp_path / "Patient.ndjson").write_bytes(b"\n".join(lines) + b"\n")
    with pytest.warns(UserWarning, match="2 problem"):
        found = view(
            patients(columns(("id", "id"), ("g", "gender"), ("family", "name.first().family"))),
            tmp_path,
        )
    assert len(found) == 47 and set(found["family"]) == {"Smith"}
    named = [(e.source.rsplit("/", 1)[-1], e.line) for e in found.attrs["read_errors"]]
    assert named == [("Patient.ndjson", 11), ("Patient.ndjson", 21)]
    assert "Patient/g: the element (gender)" in found.attrs["read_errors"][1].reason
    assert found.attrs["skipped"] == []


DECIMALS = [
    ("1.0", "1.00000000", "1.09999999"),
    ("1.587", "1.58700000", "1.58799999"),
    ("15.080", "15.08000000", "15.08099999"),
    ("-353600.89123", "-353600.89123000", "-353600.89123999"),
    ("0.1", "0.10000000", "0.19999999"),
    ("0.007", "0.00700000", "0.00799999"),
    ("123456789123.1234", None, None),
]


def test_decimals_are_read_as_written_and_their_boundaries_exact(tmp_path: Any) -> None:
    """A decimal column is the text written (1.50 stays 1.50, as the SQL on FHIR type
    mapping has it), compared and computed as a number; its boundaries follow the precision
    it was written with."""
    lines = [
        f'{{"resourceType": "Observation", "id": "o{i}", "status": "final", "code": {{}}, '
        f'"valueQuantity": {{"value": {text}, "unit": "mg"}}}}'
        for i, (text, _, _) in enumerate(DECIMALS)
    ]
    (tmp_path / "Observation.ndjson").write_text("\n".join(lines) + "\n")
    path = "value.ofType(Quantity).value"
    definition = {"resource": "Observation", "select": [{"column": [
        {"name": "value", "path": path},
        {"name": "low", "path": f"{path}.lowBoundary()"},
        {"name": "high", "path": f"{path}.highBoundary()"},
        {"name": "big", "path": f"{path} > 1.5"},
        {"name": "doubled", "path": f"{path} * 2"},
    ]}]}  # fmt: skip
    found = view(definition, tmp_path, engine="polars")
    assert found["value"].to_list() == [text for text, _, _ in DECIMALS]
    assert found["low"].to_list() == [low for _, low, _ in DECIMALS]
    assert found["high"].to_list() == [high for _, _, high in DECIMALS]
    assert found["big"].to_list() == [False, True, True, False, False, False, True]
    assert found["doubled"].to_list()[:2] == [2.0, 3.174]
