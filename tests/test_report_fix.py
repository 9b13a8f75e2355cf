"""``ValidationFrame.fix``: the safe kinds only, an audit of every cell changed, a new
validation, the data given never changed in place, and clear errors for bad input."""

from __future__ import annotations

import pickle
from typing import Any

import pandas as pd
import pytest

from workbench import Workbench
from workbench.bulk.fix import KINDS, needed_kinds
from workbench.bulk.suggest import Suggestion
from workbench.errors import InvalidRequestError

GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
GENDER_CS = "http://hl7.org/fhir/administrative-gender"
V2 = "http://terminology.hl7.org/CodeSystem/v2-0001"
GENDER_MAP = "http://example.org/fhir/ConceptMap/gender-to-v2"
ICD = "http://example.org/icd-like"
ICD_VS = "http://example.org/icd-like-vs"


@pytest.fixture(scope="module")
def fix_wb() -> Workbench:
    """The shipped content, an ICD-like case-sensitive code system, and a map from FHIR
    gender to v2 table 0001 (equal for male/female, wider for other)."""
    from tests.conftest import VALUESETS

    wb = Workbench()
    wb.load(VALUESETS, progress=False)
    wb.load(
        [
            {
                "resourceType": "CodeSystem",
                "url": ICD,
                "status": "active",
                "content": "complete",
                "caseSensitive": True,
                "concept": [
                    {"code": "E11.9", "display": "Type 2 diabetes mellitus without complications"},
                    {"code": "I10", "display": "Essential (primary) hypertension"},
                ],
            },
            {
                "resourceType": "ValueSet",
                "url": ICD_VS,
                "status": "active",
                "compose": {"include": [{"system": ICD}]},
            },
            {
                "resourceType": "ConceptMap",
                "url": GENDER_MAP,
                "version": "1",
                "status": "active",
                "group": [
                    {
                        "source": GENDER_CS,
                        "target": V2,
                        "element": [
                            {"code": "male", "target": [{"code": "M", "equivalence": "equal"}]},
                            {"code": "female", "target": [{"code": "F", "equivalence": "equal"}]},
                            {"code": "other", "target": [{"code": "A", "equivalence": "wider"}]},
                        ],
                    }
                ],
            },
        ],
        progress=False,
    )
    return wb


GENDERS = pd.Series(
    [" male", "male", "Female", "  Female", "femal", None, "x", " male"],
    index=[f"p{i}" for i in range(8)],
    name="gender",
)

KIND_CASES = [
    pytest.param(
        ("whitespace", "case", "dotted", "map"),
        ["male", "male", "female", "female", "femal", None, "x", "male"],
        {"whitespace": 3, "case": 2},
        id="every-kind",
    ),
    pytest.param(
        ["whitespace"],
        ["male", "male", "Female", "  Female", "femal", None, "x", "male"],
        {"whitespace": 2},
        id="whitespace-only",
    ),
    pytest.param(
        "case",  # "  Female" needs whitespace too: left as it is
        [" male", "male", "female", "  Female", "femal", None, "x", " male"],
        {"case": 1},
        id="case-only",
    ),
]


@pytest.mark.parametrize(("kinds", "expected", "counts"), KIND_CASES)
def test_fix_applies_only_the_kinds_asked_for(
    fix_wb: Workbench, kinds: Any, expected: list[Any], counts: dict[str, int]
) -> None:
    original = GENDERS.copy()
    report = fix_wb.validate_column(GENDERS, GENDER)
    fixed = report.fix(kinds=kinds)
    assert fixed.data.index.equals(GENDERS.index)
    assert fixed.data.name == "gender"
    got = [None if pd.isna(v) else v for v in fixed.data]
    assert got == expected
    assert {k: v for k, v in fixed.fixed.items() if v} == counts
    assert GENDERS.equals(original)  # never changed in place
    # the new report validated the fixed data: the fixed rows are now valid
    changed = fixed.audit["row"].tolist()
    assert fixed.report.loc[changed, "result"].tolist() == [True] * len(changed)
    assert fixed.report.index.equals(GENDERS.index)


def test_the_audit_names_row_column_before_after_why_and_map(fix_wb: Workbench) -> None:
    fixed = fix_wb.validate_column(GENDERS, GENDER).fix()
    audit = fixed.audit.sort_values("row").reset_index(drop=True)
    assert list(audit.columns) == ["before", "after", "kind", "row", "column", "why", "map"]
    assert audit[["row", "before", "after", "kind"]].values.tolist() == [
        ["p0", " male", "male", "whitespace"],
        ["p2", "Female", "female", "case"],
        ["p3", "  Female", "female", "case+whitespace"],
        ["p7", " male", "male", "whitespace"],
    ]
    assert set(audit["column"]) == {"gender"}
    assert audit["why"].tolist()[:2] == ["without the surrounding whitespace", "case variant"]
    assert audit["map"].isna().all()
    # what remains: the edit-distance guess is never applied, the unknown and missing stay
    still = fixed.remaining
    assert sorted(still["code"].dropna()) == ["femal", "x"]
    assert still.set_index("code").loc["femal", "suggestion"] == "female"
    assert repr(fixed) == (
        "<Fixed 4 of 8 rows (whitespace 3, case 2); 3 rows still fail (unknown-code 2, missing 1)>"
    )
    assert "␣male" in fixed.audit.to_string()  # the audit prints whitespace visibly
    assert fixed.audit.loc[0, "before"] in (" male", "Female", "  Female")  # data exact


def test_dotted_and_undotted_forms(fix_wb: Workbench) -> None:
    codes = pd.Series(["E119", "e11.9", "I10 ", "I10", "E11"], name="dx")
    fixed = fix_wb.validate_column(codes, ICD_VS).fix(kinds=["dotted", "whitespace"])
    assert fixed.data.tolist() == ["E11.9", "e11.9", "I10", "I10", "E11"]
    assert fixed.audit["kind"].tolist() == ["dotted", "whitespace"]
    both = fix_wb.validate_column(codes, ICD_VS).fix()
    assert both.data.tolist()[:2] == ["E11.9", "E11.9"]
    assert both.fixed["case"] == 1 and both.fixed["dotted"] == 1


def test_a_map_match_at_equal_strength_fixes_code_and_system(fix_wb: Workbench) -> None:
    frame = pd.DataFrame(
        {
            "sex": ["F", "M", "A", "male", "F"],
            "sex_system": [V2, V2, V2, GENDER_CS, V2],
            "age": [30, 40, 50, 60, 70],
        },
        index=[10, 11, 12, 13, 14],
    )
    before = frame.copy()
    report = fix_wb.validate_column(frame, GENDER, code="sex", system_column="sex_system")
    assert report.by_code().set_index("code").loc["F", "suggestion"] == "female"
    fixed = report.fix(kinds=["map"])
    assert fixed.data["sex"].tolist() == ["female", "male", "A", "male", "female"]
    assert fixed.data["sex_system"].tolist() == [GENDER_CS, GENDER_CS, V2, GENDER_CS, GENDER_CS]
    assert fixed.data["age"].tolist() == [30, 40, 50, 60, 70]
    assert fixed.data.index.tolist() == [10, 11, 12, 13, 14]
    assert frame.equals(before)
    audit = fixed.audit
    assert sorted(set(audit["column"])) == ["sex", "sex_system"]
    assert set(audit["map"]) == {f"{GENDER_MAP}|1"}
    assert audit[audit["column"] == "sex"]["row"].tolist() == [10, 11, 14]
    assert fixed.fixed["map"] == 3
    # "A" maps only at wider strength: suggested, never applied
    assert fixed.report["result"].tolist() == [True, True, False, True, True]


def test_a_map_to_another_system_needs_a_system_column(fix_wb: Workbench) -> None:
    codes = pd.Series(["F", "M"])
    report = fix_wb.validate_column(codes, GENDER, system=V2)
    fixed = report.fix()
    assert fixed.data.tolist() == ["F", "M"]
    assert fixed.audit.empty
    assert fixed.rows_fixed == 0


def test_a_categorical_column_stays_categorical(fix_wb: Workbench) -> None:
    codes = pd.Series([" male", "female", " male"], dtype="category")
    fixed = fix_wb.validate_column(codes, GENDER).fix()
    assert isinstance(fixed.data.dtype, pd.CategoricalDtype)
    assert fixed.data.tolist() == ["male", "female", "male"]


def test_data_given_explicitly_is_fixed_when_its_index_matches(fix_wb: Workbench) -> None:
    report = fix_wb.validate_column(GENDERS, GENDER)
    same = GENDERS.copy()
    fixed = report.fix(same, kinds="whitespace")
    assert fixed.data.tolist()[0] == "male"
    assert same.tolist()[0] == " male"


BAD_INPUT = [
    pytest.param(
        {"kinds": ["nearest code"]}, "does not know the kind 'nearest code'", id="unknown-kind"
    ),
    pytest.param({"kinds": ["case", "typo", "x"]}, "kinds 'typo', 'x'", id="unknown-kinds"),
    pytest.param({"kinds": []}, "needs at least one kind", id="no-kinds"),
    pytest.param(
        {"data": GENDERS.reset_index(drop=True)}, "index differs from the report's", id="index"
    ),
    pytest.param({"data": GENDERS.iloc[:3]}, "index differs from the report's", id="shorter"),
    pytest.param({"data": GENDERS.to_frame()}, "takes a pandas Series", id="shape"),
]


@pytest.mark.parametrize(("kwargs", "text"), BAD_INPUT)
def test_bad_input_gets_a_clear_error(fix_wb: Workbench, kwargs: dict[str, Any], text: str) -> None:
    report = fix_wb.validate_column(GENDERS, GENDER)
    with pytest.raises(InvalidRequestError, match=text.replace("(", r"\(").replace(")", r"\)")):
        report.fix(**kwargs)


def test_a_frame_report_refuses_a_frame_without_its_column(fix_wb: Workbench) -> None:
    frame = GENDERS.to_frame()
    report = fix_wb.validate_column(frame, GENDER, code="gender")
    with pytest.raises(InvalidRequestError, match="DataFrame with the column 'gender'"):
        report.fix(frame.rename(columns={"gender": "g"}))


def test_an_unpickled_report_says_it_cannot_fix(fix_wb: Workbench) -> None:
    report = pickle.loads(pickle.dumps(fix_wb.validate_column(GENDERS, GENDER)))
    with pytest.raises(InvalidRequestError, match="cannot fix its data"):
        report.fix()


NEEDED = [
    (" male", Suggestion("male", None, "without the surrounding whitespace"), {"whitespace"}),
    ("Female", Suggestion("female", None, "case variant"), {"case"}),
    (" Female", Suggestion("female", None, "case variant"), {"case", "whitespace"}),
    ("E119", Suggestion("E11.9", None, "dotted/undotted variant"), {"dotted"}),
    ("e119", Suggestion("E11.9", None, "dotted/undotted variant"), {"dotted", "case"}),
    ("femal", Suggestion("female", None, "nearest code"), None),
    ("Female", Suggestion("female", None, "nearest display"), None),
    ("F", Suggestion("female", None, "ConceptMap x (equal)", GENDER_CS, "m", "equal"), {"map"}),
    ("A", Suggestion("other", None, "ConceptMap x (wider)", GENDER_CS, "m", "wider"), None),
]


@pytest.mark.parametrize(("before", "found", "kinds"), NEEDED)
def test_the_kinds_a_suggestion_needs(
    before: str, found: Suggestion, kinds: set[str] | None
) -> None:
    need = needed_kinds(before, found)
    assert (None if need is None else set(need)) == kinds
    assert need is None or need <= set(KINDS)


def test_fixed_html_shows_the_changes_and_what_remains(fix_wb: Workbench) -> None:
    fixed = fix_wb.validate_column(GENDERS, GENDER).fix()
    html = fixed._repr_html_()
    assert "Fixed 4 of 8 rows (whitespace 3, case 2)" in html
    assert "<td>␣male</td>" in html  # the changes, whitespace visible
    assert html.count("<td>␣male</td>") == 1  # distinct changes, not one per row
    assert "Still failing" in html and "<td>femal</td>" in html
    assert "␣male" in fixed.audit._repr_html_()
