"""$validate-code against value sets and code systems, $lookup and $subsumes, as tables."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from workbench import ValidationResult, ValueSetNotFoundError, Workbench
from workbench.errors import UnknownCodeError

DEMO = "http://example.org/fhir/CodeSystem/workbench-demo"
GENDER = "http://hl7.org/fhir/administrative-gender"
VS = "http://example.org/fhir/ValueSet/"
ALL = VS + "workbench-demo-all"
REMOTE_LIVE = VS + "workbench-demo-remote-live"
OVERRIDE = {
    "resourceType": "ValueSet",
    "url": VS + "override",
    "compose": {
        "include": [{"system": DEMO, "concept": [{"code": "video", "display": "Video call"}]}]
    },
}
ACTIVE = {
    "resourceType": "ValueSet",
    "url": VS + "active",
    "compose": {"inactive": False, "include": [{"system": DEMO}]},
}
TWO_SYSTEMS = {
    "resourceType": "ValueSet",
    "url": VS + "two",
    "compose": {"include": [{"system": DEMO}, {"system": GENDER}]},
}
ONE = f"{DEMO}#"
TX = "http://hl7.org/fhir/tools/CodeSystem/tx-issue-type"
INACTIVE = f"The code {ONE}group is inactive (status 'retired'); review its use"


def outcome(r: ValidationResult) -> tuple[Any, ...]:
    return (r.result, r.issue, r.display, r.code, r.system, r.version)


CASES = [
    pytest.param(
        ALL,
        {"code": "video", "system": DEMO},
        (True, None, "Video consultation", "video", DEMO, "1.0.0"),
        None,
        (),
        id="valid",
    ),
    pytest.param(
        ALL,
        {"code": "video", "system": DEMO, "display": "Video consultation"},
        (True, None, "Video consultation", "video", DEMO, "1.0.0"),
        None,
        (),
        id="valid-with-display",
    ),
    pytest.param(
        OVERRIDE,
        {"code": "video", "system": DEMO, "display": "Video call"},
        (True, None, "Video call", "video", DEMO, "1.0.0"),
        None,
        (("information", "status-check"),),  # the demo code system is experimental
        id="value-set-display",
    ),
    pytest.param(
        ALL,
        {"code": "video", "system": DEMO, "display": "Video"},
        (False, "invalid-display", "Video consultation", "video", DEMO, "1.0.0"),
        f"Wrong display 'Video' for {ONE}video. Valid display is one of 3 choices: "
        "'Video consultation', 'Videosprechstunde', 'Téléconsultation vidéo'",
        (("error", "invalid-display"),),
        id="wrong-display",
    ),
    pytest.param(
        OVERRIDE,
        {"code": "video", "system": DEMO, "display": "Video"},
        (False, "invalid-display", "Video call", "video", DEMO, "1.0.0"),
        f"Wrong display 'Video' for {ONE}video. Valid display is one of 4 choices: "
        "'Video call', 'Video consultation', 'Videosprechstunde', 'Téléconsultation vidéo'",
        (("error", "invalid-display"), ("information", "status-check")),
        id="wrong-display-with-override",
    ),
    pytest.param(
        ALL,
        {"code": "video", "system": DEMO, "display": "Videosprechstunde"},
        (True, None, "Video consultation", "video", DEMO, "1.0.0"),
        None,
        (),
        id="german-designation",
    ),
    pytest.param(
        ALL,
        {"code": "phone", "system": DEMO, "display": "Consultation téléphonique"},
        (True, None, "Telephone consultation", "phone", DEMO, "1.0.0"),
        None,
        (),
        id="french-designation",
    ),
    pytest.param(
        ALL,
        {"code": "remote", "system": DEMO, "abstract": False},
        (False, "abstract", "Remote visit", "remote", DEMO, "1.0.0"),
        f"The code {ONE}remote is abstract, and abstract codes are not allowed here "
        f"(set abstract=true to allow them); The code {ONE}remote is not in the value set "
        f"{ALL}|1.0.0",
        (("error", "code-rule"), ("error", "not-in-vs")),
        id="abstract",
    ),
    pytest.param(
        ALL,
        {"code": "remote", "system": DEMO, "abstract": True},
        (True, None, "Remote visit", "remote", DEMO, "1.0.0"),
        None,
        (),
        id="abstract-allowed",
    ),
    pytest.param(
        ALL,
        {"code": "remote", "system": DEMO},
        (True, None, "Remote visit", "remote", DEMO, "1.0.0"),
        None,
        (),
        id="abstract-taken-when-not-refused",
    ),
    pytest.param(
        ALL,
        {"code": "group", "system": DEMO},
        (True, "inactive", "Group visit", "group", DEMO, "1.0.0"),
        f"The code {ONE}group is inactive (status 'retired'); review its use",
        (("warning", "code-comment"),),
        id="inactive",
    ),
    pytest.param(
        ACTIVE,
        {"code": "group", "system": DEMO},
        (False, "inactive", "Group visit", "group", DEMO, "1.0.0"),
        f"The code {ONE}group is valid but not active, and the value set {VS}active excludes "
        f"inactive codes; The code {ONE}group is not in the value set {VS}active",
        (
            ("error", "code-rule"),
            ("error", "not-in-vs"),
            ("warning", "code-comment"),
            ("information", "status-check"),
        ),
        id="inactive-excluded",
    ),
    pytest.param(
        ALL,
        {"code": "nope", "system": DEMO},
        (False, "unknown-code", None, "nope", DEMO, "1.0.0"),
        f"Unknown code 'nope' in the CodeSystem '{DEMO}|1.0.0'; The code {ONE}nope is not in "
        f"the value set {ALL}|1.0.0",
        (("error", "invalid-code"), ("error", "not-in-vs")),
        id="unknown-code",
    ),
    pytest.param(
        ALL,
        {"code": "video", "system": "http://nope"},
        (False, "unknown-system", None, "video", "http://nope", None),
        "A definition for CodeSystem 'http://nope' could not be found, so the code 'video' "
        f"cannot be validated; The code http://nope#video is not in the value set {ALL}|1.0.0",
        (("error", "not-found"), ("error", "not-in-vs")),
        id="unknown-system",
    ),
    pytest.param(
        ALL,
        {"code": "video"},
        (True, None, "Video consultation", "video", DEMO, "1.0.0"),
        None,
        (),
        id="system-inferred",
    ),
    pytest.param(
        TWO_SYSTEMS,
        {"code": "video"},
        (True, None, "Video consultation", "video", DEMO, "1.0.0"),
        None,
        (("information", "status-check"),),
        id="system-inferred-from-the-one-system-with-the-code",
    ),
    pytest.param(
        TWO_SYSTEMS,
        {"code": "nope"},
        (False, "unknown-system", None, "nope", None, None),
        f"The code 'nope' has no system, and it cannot be inferred: the value set {VS}two "
        f"draws on 2 code systems ({DEMO}, {GENDER}); The code 'nope' is not in the value set "
        f"{VS}two",
        (("error", "cannot-infer"), ("error", "not-in-vs")),
        id="system-not-inferable",
    ),
    pytest.param(
        REMOTE_LIVE,
        {"code": "e-visit", "system": DEMO},
        (False, "not-in-vs", "Asynchronous e-visit", "e-visit", DEMO, "1.0.0"),
        f"The code {ONE}e-visit is not in the value set {REMOTE_LIVE}|1.0.0",
        (("error", "not-in-vs"),),
        id="not-in-vs",
    ),
    pytest.param(
        ALL,
        {"code": "", "system": DEMO},
        (False, "missing", None, "", DEMO, None),
        "No code was given",
        (("error", "invalid-code"),),
        id="missing",
    ),
    pytest.param(
        ALL,
        {"coding": {"system": DEMO, "code": "phone", "display": "Telephone consultation"}},
        (True, None, "Telephone consultation", "phone", DEMO, "1.0.0"),
        None,
        (),
        id="coding",
    ),
    pytest.param(
        ALL,
        {"coding": {"system": DEMO, "code": "phone", "display": "Phone"}},
        (False, "invalid-display", "Telephone consultation", "phone", DEMO, "1.0.0"),
        f"Wrong display 'Phone' for {ONE}phone. Valid display is one of 3 choices: "
        "'Telephone consultation', 'Telefonische Beratung', 'Consultation téléphonique'",
        (("error", "invalid-display"),),
        id="coding-wrong-display",
    ),
    pytest.param(
        ALL,
        {
            "codeable_concept": {
                "coding": [{"system": DEMO, "code": "nope"}, {"system": DEMO, "code": "phone"}]
            }
        },
        (False, "unknown-code", "Telephone consultation", "phone", DEMO, "1.0.0"),
        f"Unknown code 'nope' in the CodeSystem '{DEMO}|1.0.0'",
        (("error", "invalid-code"), ("information", "this-code-not-in-vs")),
        id="codeable-concept-unknown-code-beside-a-valid-one",
    ),
    pytest.param(
        ALL,
        {
            "codeable_concept": {
                "coding": [
                    {"system": DEMO, "code": "nope"},
                    {"system": "http://nope", "code": "phone"},
                ]
            }
        },
        (False, "unknown-code", None, "nope", DEMO, "1.0.0"),
        f"None of the 2 codings is valid: coding 1 ({ONE}nope): Unknown code 'nope' in the "
        f"CodeSystem '{DEMO}|1.0.0'; The code {ONE}nope is not in the value set {ALL}|1.0.0; "
        "coding 2 (http://nope#phone): A definition for CodeSystem 'http://nope' could not be "
        "found, so the code 'phone' cannot be validated; The code http://nope#phone is not in "
        f"the value set {ALL}|1.0.0",
        (
            ("error", "not-in-vs"),
            ("error", "invalid-code"),
            ("information", "this-code-not-in-vs"),
            ("error", "not-found"),
            ("information", "this-code-not-in-vs"),
        ),
        id="codeable-concept-none-valid",
    ),
    pytest.param(
        ALL,
        {
            "codeable_concept": {
                "coding": [
                    {"system": DEMO, "code": "video", "display": "Video"},
                    {"system": DEMO, "code": "remote"},
                ]
            },
            "abstract": False,
        },
        (False, "invalid-display", "Video consultation", "video", DEMO, "1.0.0"),
        f"None of the 2 codings is valid: coding 1 ({ONE}video): Wrong display 'Video' for "
        f"{ONE}video. Valid display is one of 3 choices: 'Video consultation', "
        "'Videosprechstunde', 'Téléconsultation vidéo'; coding 2 "
        f"({ONE}remote): The code {ONE}remote is abstract, and abstract codes are not allowed "
        f"here (set abstract=true to allow them); The code {ONE}remote is not in the value set "
        f"{ALL}|1.0.0",
        (
            ("error", "invalid-display"),
            ("error", "code-rule"),
            ("information", "this-code-not-in-vs"),
        ),
        id="codeable-concept-display-and-abstract",
    ),
]


@pytest.mark.parametrize(("vs", "kwargs", "expected", "message", "issues"), CASES)
def test_validate_code(
    default_wb: Workbench,
    vs: str | dict[str, Any],
    kwargs: dict[str, Any],
    expected: tuple[Any, ...],
    message: str | None,
    issues: tuple[tuple[str, str], ...],
) -> None:
    result = default_wb.validate_code(valueset=vs, **kwargs)
    assert outcome(result) == expected
    assert result.message == message
    assert tuple((i.severity, i.code) for i in result.issues) == issues
    assert bool(result) is expected[0]


def test_each_outcome_has_its_own_message(default_wb: Workbench) -> None:
    messages = [
        default_wb.validate_code(valueset=p.values[0], **p.values[1]).message for p in CASES
    ]
    found = [m for m in messages if m is not None]
    assert len(found) == len(set(found)) == 14


def test_validate_by_url_argument(default_wb: Workbench) -> None:
    assert default_wb.validate_code(ALL, code="video", system=DEMO).result is True
    assert default_wb.validate_code(f"{ALL}|1.0.0", code="video").result is True
    result = default_wb.validate_code(ALL, code="video", valueset_version="1.0.0")
    assert result.result is True


@pytest.mark.parametrize(
    ("target", "message"),
    [
        pytest.param(VS + "nope", f"ValueSet {VS}nope not found", id="url"),
        pytest.param(
            f"{ALL}|9.9.9",
            f"ValueSet {ALL}|9.9.9 not found (the loaded versions are '1.0.0')",
            id="url-version",
        ),
    ],
)
def test_unknown_value_set(
    default_wb: Workbench, target: str | dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueSetNotFoundError) as info:
        default_wb.validate_code(valueset=target, code="video", system=DEMO)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        pytest.param(
            {"code": "video", "system": DEMO},
            {
                "resourceType": "Parameters",
                "parameter": [
                    {"name": "result", "valueBoolean": True},
                    {"name": "display", "valueString": "Video consultation"},
                    {"name": "code", "valueCode": "video"},
                    {"name": "system", "valueUri": DEMO},
                    {"name": "version", "valueString": "1.0.0"},
                ],
            },
            id="valid",
        ),
        pytest.param(
            {"code": "nope", "system": DEMO},
            {
                "resourceType": "Parameters",
                "parameter": [
                    {"name": "result", "valueBoolean": False},
                    {
                        "name": "message",
                        "valueString": f"Unknown code 'nope' in the CodeSystem '{DEMO}|1.0.0'; "
                        f"The code {ONE}nope is not in the value set {ALL}|1.0.0",
                    },
                    {"name": "code", "valueCode": "nope"},
                    {"name": "system", "valueUri": DEMO},
                    {"name": "version", "valueString": "1.0.0"},
                    {
                        "name": "issues",
                        "resource": {
                            "resourceType": "OperationOutcome",
                            "issue": [
                                {
                                    "severity": "error",
                                    "code": "code-invalid",
                                    "details": {
                                        "coding": [{"system": TX, "code": "invalid-code"}],
                                        "text": f"Unknown code 'nope' in the CodeSystem "
                                        f"'{DEMO}|1.0.0'",
                                    },
                                    "location": ["code"],
                                    "expression": ["code"],
                                },
                                {
                                    "severity": "error",
                                    "code": "code-invalid",
                                    "details": {
                                        "coding": [{"system": TX, "code": "not-in-vs"}],
                                        "text": f"The code {ONE}nope is not in the value set "
                                        f"{ALL}|1.0.0",
                                    },
                                    "location": ["code"],
                                    "expression": ["code"],
                                },
                            ],
                        },
                    },
                ],
            },
            id="invalid",
        ),
        pytest.param(
            {"code": "group", "system": DEMO},
            {
                "resourceType": "Parameters",
                "parameter": [
                    {"name": "result", "valueBoolean": True},
                    {"name": "message", "valueString": INACTIVE},
                    {"name": "display", "valueString": "Group visit"},
                    {"name": "code", "valueCode": "group"},
                    {"name": "system", "valueUri": DEMO},
                    {"name": "version", "valueString": "1.0.0"},
                    {
                        "name": "issues",
                        "resource": {
                            "resourceType": "OperationOutcome",
                            "issue": [
                                {
                                    "severity": "warning",
                                    "code": "business-rule",
                                    "details": {
                                        "coding": [{"system": TX, "code": "code-comment"}],
                                        "text": INACTIVE,
                                    },
                                    "location": ["code"],
                                    "expression": ["code"],
                                }
                            ],
                        },
                    },
                    {"name": "inactive", "valueBoolean": True},
                    {"name": "status", "valueCode": "retired"},
                ],
            },
            id="warning",
        ),
    ],
)
def test_to_parameters(
    default_wb: Workbench, kwargs: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert default_wb.validate_code(ALL, **kwargs).to_parameters() == expected


def test_validation_result_is_frozen(default_wb: Workbench) -> None:
    result = default_wb.validate_code(ALL, code="video", system=DEMO)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.result = False  # type: ignore[misc]


VER = "http://example.org/fhir/CodeSystem/versioned"


def versioned_wb() -> Workbench:
    wb = Workbench()
    wb.load(
        [
            {
                "resourceType": "CodeSystem",
                "url": VER,
                "version": "1.0.0",
                "content": "complete",
                "concept": [
                    {"code": "a", "display": "Alpha one"},
                    {"code": "old", "display": "Old"},
                ],
            },
            {
                "resourceType": "CodeSystem",
                "url": VER,
                "version": "2.0.0",
                "content": "complete",
                "concept": [{"code": "a", "display": "Alpha two"}],
            },
            {
                "resourceType": "ValueSet",
                "url": VS + "pinned",
                "compose": {"include": [{"system": VER, "version": "1.0.0"}]},
            },
            {
                "resourceType": "ValueSet",
                "url": VS + "latest",
                "compose": {"include": [{"system": VER}]},
            },
        ]
    )
    return wb


@pytest.mark.parametrize(
    ("vs", "kwargs", "expected"),
    [
        pytest.param(
            VS + "latest",
            {"code": "a", "system": VER, "display": "Alpha two"},
            (True, None, "Alpha two", "a", VER, "2.0.0"),
            id="latest",
        ),
        pytest.param(
            VS + "latest",
            {"code": "a", "system": VER, "version": "1.0.0", "display": "Alpha one"},
            (True, None, "Alpha one", "a", VER, "1.0.0"),
            id="coding-version",
        ),
        pytest.param(
            VS + "latest",
            {"code": "old", "system": VER},
            (False, "unknown-code", None, "old", VER, "2.0.0"),
            id="not-in-latest",
        ),
        pytest.param(
            VS + "pinned",
            {"code": "a", "system": VER, "display": "Alpha one"},
            (True, None, "Alpha one", "a", VER, "1.0.0"),
            id="pinned-display",
        ),
        pytest.param(
            VS + "pinned",
            {"code": "old", "system": VER},
            (True, None, "Old", "old", VER, "1.0.0"),
            id="pinned-code-only-in-old-version",
        ),
        pytest.param(
            VS + "latest",
            {"code": "a", "system": VER, "version": "9.9"},
            (False, "unknown-system", "Alpha two", "a", VER, "2.0.0"),
            id="coding-version-not-loaded",
        ),
    ],
)
def test_versions(vs: str, kwargs: dict[str, Any], expected: tuple[Any, ...]) -> None:
    assert outcome(versioned_wb().validate_code(vs, **kwargs)) == expected


@pytest.mark.parametrize(
    ("include", "expanded"),
    [
        pytest.param({"system": DEMO}, False, id="direct-include"),
        pytest.param(
            {"valueSet": [ALL]},
            False,
            id="imported",
        ),
    ],
)
def test_inactive_excluded_agrees_with_expansion(
    default_wb: Workbench, include: dict[str, Any], expanded: bool
) -> None:
    vs = {"resourceType": "ValueSet", "compose": {"inactive": False, "include": [include]}}
    assert ("group" in default_wb.expand(vs)) is expanded
    result = default_wb.validate_code(valueset=vs, code="group", system=DEMO)
    assert (result.result, result.issue) == (False, "inactive")


@pytest.mark.parametrize(
    ("system", "code", "display", "expected", "message"),
    [
        pytest.param(DEMO, "video", None, (True, None, "Video consultation"), None, id="valid"),
        pytest.param(
            DEMO, "remote", None, (True, None, "Remote visit"), None, id="abstract-is-valid"
        ),
        pytest.param(
            DEMO,
            "fax-consult",
            None,
            (True, "inactive", "Fax consultation"),
            f"The code {ONE}fax-consult is inactive (status 'retired'); review its use",
            id="inactive",
        ),
        pytest.param(
            DEMO, "home", "Hausbesuch", (True, None, "Home visit"), None, id="designation"
        ),
        pytest.param(
            DEMO,
            "remote",
            "Remote",
            (False, "invalid-display", "Remote visit"),
            f"Wrong display 'Remote' for {ONE}remote. Valid display is one of 3 choices: "
            "'Remote visit', 'Fernkonsultation', 'Consultation à distance'",
            id="wrong-display",
        ),
        pytest.param(
            DEMO,
            "zz",
            None,
            (False, "unknown-code", None),
            f"Unknown code 'zz' in the CodeSystem '{DEMO}|1.0.0'",
            id="unknown-code",
        ),
        pytest.param(DEMO, "", None, (False, "missing", None), "No code was given", id="missing"),
        pytest.param(
            "http://nope",
            "zz",
            None,
            (False, "unknown-system", None),
            "A definition for CodeSystem 'http://nope' could not be found, so the code 'zz' "
            "cannot be validated",
            id="unknown-system",
        ),
    ],
)
def test_validate_in_codesystem(
    default_wb: Workbench,
    system: str,
    code: str,
    display: str | None,
    expected: tuple[Any, ...],
    message: str | None,
) -> None:
    result = default_wb.validate_in_codesystem(system, code, display=display)
    assert (result.result, result.issue, result.display) == expected
    assert result.message == message


def test_lookup(default_wb: Workbench) -> None:
    found = default_wb.lookup(DEMO, "office")
    assert (found.name, found.version, found.code, found.display, found.abstract) == (
        "WorkbenchDemo",
        "1.0.0",
        "office",
        "Office visit",
        False,
    )
    assert found.definition == "A scheduled visit at a clinic or practitioner's office."
    assert [(d["language"], d["value"]) for d in found.designations] == [
        ("de", "Praxisbesuch"),
        ("fr", "Consultation au cabinet"),
    ]
    assert found.properties == (
        ("duration-minutes", 20),
        ("parent", "in-person"),
        ("child", "office-new"),
        ("child", "office-followup"),
        ("child", "office-procedure"),
        ("inactive", False),
    )


@pytest.mark.parametrize(
    ("code", "properties", "expected", "designations"),
    [
        pytest.param(
            "group",
            None,
            (
                ("status", "retired"),
                ("inactive", True),
                ("duration-minutes", 90),
                ("parent", "in-person"),
            ),
            2,
            id="all-of-inactive",
        ),
        pytest.param(
            "home-hospital",
            ["parent", "duration-minutes"],
            (("duration-minutes", 60), ("parent", "home")),
            0,
            id="parent-property",
        ),
        pytest.param(
            "office",
            ["duration-minutes", "definition"],
            (
                ("duration-minutes", 20),
                ("definition", "A scheduled visit at a clinic or practitioner's office."),
            ),
            0,
            id="definition",
        ),
        pytest.param("remote", ["designation"], (), 2, id="designations-only"),
        pytest.param(
            "in-person",
            ["child"],
            (("child", "office"), ("child", "home"), ("child", "walk-in"), ("child", "group")),
            0,
            id="children",
        ),
        pytest.param("video", ["inactive"], (("inactive", False),), 0, id="inactive"),
        pytest.param("video", ["nothing"], (), 0, id="unknown-property"),
    ],
)
def test_lookup_properties(
    default_wb: Workbench,
    code: str,
    properties: list[str] | None,
    expected: tuple[tuple[str, Any], ...],
    designations: int,
) -> None:
    found = default_wb.lookup(DEMO, code, properties=properties)
    assert found.properties == expected
    assert len(found.designations) == designations


@pytest.mark.parametrize("code", ["remote", "in-person", "video"])
@pytest.mark.parametrize("asked", [["*"], ["*", "inactive"]])
def test_lookup_property_star_is_every_property(
    default_wb: Workbench, code: str, asked: list[str]
) -> None:
    """``property=*`` (what tx.fhir.org's clients send for "all") returns what no
    ``property`` does: every property and the designations."""
    every = default_wb.lookup(DEMO, code)
    found = default_wb.lookup(DEMO, code, properties=asked)
    assert found.properties == every.properties and found.properties
    assert found.designations == every.designations


def test_lookup_abstract_and_parameters(default_wb: Workbench) -> None:
    found = default_wb.lookup(DEMO, "remote", properties=["inactive"])
    assert found.abstract is True
    params = found.to_parameters()
    assert params == {
        "resourceType": "Parameters",
        "parameter": [
            {"name": "name", "valueString": "WorkbenchDemo"},
            {"name": "system", "valueUri": DEMO},
            {"name": "version", "valueString": "1.0.0"},
            {"name": "code", "valueCode": "remote"},
            {"name": "display", "valueString": "Remote visit"},
            {
                "name": "definition",
                "valueString": "Grouping concept for visits conducted at a distance using "
                "telecommunication. Abstract: not to be used in records.",
            },
            {"name": "abstract", "valueBoolean": True},
            {
                "name": "property",
                "part": [
                    {"name": "code", "valueCode": "inactive"},
                    {"name": "value", "valueBoolean": False},
                ],
            },
        ],
    }


@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(
            lambda wb: wb.lookup(DEMO, "zz"),
            f"Unknown code 'zz' in the CodeSystem '{DEMO}|1.0.0'",
            id="lookup",
        ),
        pytest.param(
            lambda wb: wb.subsumes(DEMO, "office", "zz"),
            f"Unknown code 'zz' in the CodeSystem '{DEMO}'",
            id="subsumes",
        ),
    ],
)
def test_unknown_code_raises(default_wb: Workbench, call: Any, message: str) -> None:
    with pytest.raises(UnknownCodeError) as info:
        call(default_wb)
    assert str(info.value) == message
    assert info.value.status == 404


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param("office", "office", "equivalent", id="equivalent"),
        pytest.param("office", "office-new", "subsumes", id="subsumes-nested"),
        pytest.param(
            "in-person", "office-procedure", "subsumes", id="subsumes-via-parent-property"
        ),
        pytest.param("home-hospital", "home", "subsumed-by", id="subsumed-by-parent-property"),
        pytest.param("phone-triage", "remote", "subsumed-by", id="subsumed-by-nested"),
        pytest.param("office", "video", "not-subsumed", id="not-subsumed"),
        pytest.param("office-new", "office-followup", "not-subsumed", id="siblings"),
    ],
)
def test_subsumes(default_wb: Workbench, a: str, b: str, expected: str) -> None:
    assert default_wb.subsumes(DEMO, a, b) == expected


LOOKUP_STATUS = {
    "resourceType": "CodeSystem",
    "url": "http://example.org/fhir/CodeSystem/lookup-status",
    "name": "LookupStatus",
    "title": "Lookup status (a title, not the name)",
    "status": "active",
    "content": "complete",
    "property": [
        {"code": "status", "uri": "http://hl7.org/fhir/concept-properties#status", "type": "code"},
        {"code": "abstract", "type": "boolean"},
    ],
    "concept": [
        {"code": "grp", "property": [{"code": "abstract", "valueBoolean": True}]},
        {"code": "old", "property": [{"code": "status", "valueCode": "retired"}]},
        {"code": "plain", "definition": "A plain code"},
    ],
}


@pytest.mark.parametrize(
    ("code", "properties", "expected"),
    [
        pytest.param(
            "grp",
            None,
            [("abstract", True), ("inactive", False)],
            id="abstract-defined-property-not-repeated-as-notSelectable",
        ),
        pytest.param(
            "old", None, [("status", "retired"), ("inactive", True)], id="status-and-inactive"
        ),
        pytest.param("plain", None, [("inactive", False)], id="plain"),
        pytest.param("old", ["inactive"], [("inactive", True)], id="selected"),
    ],
)
def test_lookup_properties_and_name(
    code: str, properties: list[str] | None, expected: list[tuple[str, Any]]
) -> None:
    wb = Workbench()
    wb.load(LOOKUP_STATUS)
    found = wb.lookup(LOOKUP_STATUS["url"], code, properties=properties)
    assert found.name == "LookupStatus"  # CodeSystem.name, not its title
    assert list(found.properties) == expected


def test_lookup_not_selectable_from_nesting_role() -> None:
    """An abstract concept whose code system has no such property gets notSelectable."""
    wb = Workbench()
    wb.load(
        {
            "resourceType": "CodeSystem",
            "url": "http://example.org/fhir/CodeSystem/ns",
            "content": "complete",
            "property": [
                {
                    "code": "ns",
                    "uri": "http://hl7.org/fhir/concept-properties#notSelectable",
                    "type": "boolean",
                }
            ],
            "concept": [{"code": "g", "property": [{"code": "ns", "valueBoolean": True}]}],
        }
    )
    found = wb.lookup("http://example.org/fhir/CodeSystem/ns", "g")
    assert list(found.properties) == [("ns", True), ("inactive", False)]
    assert found.name == "http://example.org/fhir/CodeSystem/ns"


def test_a_codeable_concept_result_is_hashable_and_compares_without_its_echo(
    default_wb: Workbench,
) -> None:
    """The CodeableConcept a result echoes (a dict) is neither hashed nor compared: a result
    stays usable as a key, equal to the same answer reached another way."""
    concept = {"coding": [{"system": DEMO, "code": "remote"}], "text": "as given"}
    result = default_wb.validate_code(ALL, codeable_concept=concept)
    assert result.concept == concept
    assert hash(result) == hash(dataclasses.replace(result, concept=None))
    assert result == dataclasses.replace(result, concept={"text": "another"})
