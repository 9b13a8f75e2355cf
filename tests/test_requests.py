"""Request objects: the same request whether it comes from a GET query, a POSTed Parameters
body (both read by the codec from the OperationDefinition) or the facade's keywords; frozen;
checked when built; and one declared field is all a new input needs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest

from workbench import Workbench
from workbench.errors import InvalidRequestError, RequiredError
from workbench.operations import (
    OPERATIONS,
    codesystem_lookup,
    codesystem_subsumes,
    codesystem_validate_code,
    conceptmap_translate,
    valueset_expand,
    valueset_validate_code,
)
from workbench.operations.base import Operation, honoured
from workbench.operations.codec import parse_parameters, parse_query, query_items, value_key
from workbench.terminology.params import param, parameter_names, read_inputs
from workbench.terminology.requests import (
    ACCEPT_LANGUAGE,
    PLAIN_CHECK,
    CodeSystemValidateRequest,
    CompareRequest,
    ExpandRequest,
    LookupRequest,
    Request,
    SubsumesRequest,
    TranslateRequest,
    ValidateRequest,
)
from workbench.terminology.validate.coding import CheckOptions
from workbench.terminology.versions import VersionPolicy

VS = "http://example.org/fhir/ValueSet/req"
CS = "http://example.org/fhir/CodeSystem/req"
CM = "http://example.org/fhir/ConceptMap/req"
OTHER = "http://example.org/fhir/CodeSystem/other"


class Captured(Exception):
    """Raised by the spy service with the request it was given."""

    def __init__(self, req: Request) -> None:
        super().__init__(type(req).__name__)
        self.req = req


class Spy:
    """A service that only records: every call raises Captured with its request."""

    registry: Any = None
    terminology: Any = None

    def _capture(self, req: Request) -> Any:
        raise Captured(req)

    validate = validate_in_codesystem = expand = lookup = subsumes = translate = _capture

    def conceptmaps_for(self, url: str | None = None) -> list[dict[str, Any]]:
        return []


def captured(call: Callable[[], Any]) -> Request:
    with pytest.raises(Captured) as caught:
        call()
    return caught.value.req


def via_get(op: Operation, query: dict[str, Any], language: str | None) -> Request:
    """The request the operation builds from a GET query string."""
    pairs = [(k, v) for k, vs in query.items() for v in (vs if isinstance(vs, list) else [vs])]
    inputs = parse_query(op.definition, query_items(urlencode(pairs)))
    return captured(lambda: op.run(Spy(), inputs, accept_language=language))


def via_post(
    op: Operation, query: dict[str, Any], extra: list[dict[str, Any]], language: str | None
) -> Request:
    """The request the operation builds from the equivalent POSTed Parameters: each query
    value typed as its definition declares, plus the complex ``extra`` entries."""
    entries = list(extra)
    for name, given in query.items():
        declared = op.definition.inputs[name].type or "string"
        for text in given if isinstance(given, list) else [given]:
            value: Any = text
            if declared == "boolean":
                value = text == "true"
            elif declared == "integer":
                value = int(text)
            entries.append({"name": name, value_key(declared): value})
    body = {"resourceType": "Parameters", "parameter": entries}
    inputs = parse_parameters(op.definition, body)
    return captured(lambda: op.run(Spy(), inputs, accept_language=language))


def via_facade(call: Callable[[Workbench], Any]) -> Request:
    """The request the ``Workbench`` facade builds from its keywords."""
    wb = Workbench()
    wb.service = Spy()  # type: ignore[assignment]
    return captured(lambda: call(wb))


CODING = {"system": CS, "code": "a", "version": "1.0.0"}
DEPENDENCY = {
    "name": "dependency",
    "part": [
        {"name": "element", "valueUri": "http://example.org/element"},
        {"name": "concept", "valueCodeableConcept": {"coding": [{"system": OTHER, "code": "z"}]}},
    ],
}

# (operation, GET query (None: POST only), POST-only entries, Accept-Language, facade call)
CASES = [
    pytest.param(
        valueset_validate_code.OPERATION,
        {"url": VS, "code": "a", "system": CS},
        [],
        None,
        lambda wb: wb.validate_code(VS, code="a", system=CS),
        id="validate-code-plain",
    ),
    pytest.param(
        valueset_validate_code.OPERATION,
        {"url": VS, "code": "a", "system": CS, "abstract": "false"},
        [],
        None,
        lambda wb: wb.validate_code(VS, code="a", system=CS, abstract=False),
        id="validate-code-abstract-false",
    ),
    pytest.param(
        valueset_validate_code.OPERATION,
        {
            "url": VS,
            "valueSetVersion": "2",
            "code": "a",
            "system": CS,
            "systemVersion": "1.0.0",
            "display": "Alpha",
            "abstract": "true",
            "activeOnly": "true",
            "lenient-display-validation": "true",
            "valueset-membership-only": "false",
            "system-version": [f"{CS}|1.x", f"{OTHER}|2.0"],
            "check-system-version": f"{CS}|1.0.0",
            "force-system-version": f"{OTHER}|2.0",
            "default-valueset-version": f"{VS}|2",
            "displayLanguage": "de",
            "useSupplement": "http://example.org/fhir/CodeSystem/supp",
        },
        [],
        "fr",
        lambda wb: wb.validate_code(
            VS,
            valueset_version="2",
            code="a",
            system=CS,
            version="1.0.0",
            display="Alpha",
            abstract=True,
            active_only=True,
            lenient_display=True,
            membership_only=False,
            system_version=[f"{CS}|1.x", f"{OTHER}|2.0"],
            check_system_version=f"{CS}|1.0.0",
            force_system_version=[f"{OTHER}|2.0"],
            default_valueset_version=f"{VS}|2",
            display_language="de",
            accept_language="fr",
            use_supplements=["http://example.org/fhir/CodeSystem/supp"],
        ),
        id="validate-code-every-switch",
    ),
    pytest.param(
        valueset_validate_code.OPERATION,
        None,
        [{"name": "url", "valueUri": VS}, {"name": "coding", "valueCoding": CODING}],
        None,
        lambda wb: wb.validate_code(VS, coding=CODING),
        id="validate-code-coding",
    ),
    pytest.param(
        valueset_validate_code.OPERATION,
        None,
        [
            {"name": "url", "valueUri": VS},
            {"name": "codeableConcept", "valueCodeableConcept": {"coding": [CODING]}},
            {"name": "tx-resource", "resource": {"resourceType": "CodeSystem", "url": OTHER}},
        ],
        None,
        lambda wb: wb.validate_code(
            VS,
            codeable_concept={"coding": [CODING]},
            tx_resources=[{"resourceType": "CodeSystem", "url": OTHER}],
        ),
        id="validate-code-codeable-concept-tx-resource",
    ),
    pytest.param(
        valueset_expand.OPERATION,
        {"url": VS},
        [],
        None,
        lambda wb: wb.expand(VS),
        id="expand-plain",
    ),
    pytest.param(
        valueset_expand.OPERATION,
        {
            "url": VS,
            "valueSetVersion": "2",
            "filter": "alp",
            "offset": "5",
            "count": "10",
            "activeOnly": "true",
            "includeDesignations": "true",
            "includeDefinition": "true",
            "property": ["definition", "parent"],
            "excludeNested": "false",
            "designation": ["de"],
            "system-version": f"{CS}|1.x",
            "displayLanguage": "de",
        },
        [],
        "en",
        lambda wb: wb.expand(
            VS,
            version="2",
            filter="alp",
            offset=5,
            count=10,
            active_only=True,
            include_designations=True,
            include_definition=True,
            properties=["definition", "parent"],
            exclude_nested=False,
            designations=["de"],
            system_version=f"{CS}|1.x",
            display_language="de",
            accept_language="en",
        ),
        id="expand-every-switch",
    ),
    pytest.param(
        codesystem_lookup.OPERATION,
        {"system": CS, "code": "a", "version": "1.0.0", "property": "display"},
        [],
        "de",
        lambda wb: wb.lookup(
            CS, "a", version="1.0.0", properties=["display"], accept_language="de"
        ),
        id="lookup",
    ),
    pytest.param(
        codesystem_lookup.OPERATION,
        None,
        [{"name": "coding", "valueCoding": CODING}],
        None,
        lambda wb: wb.lookup(CS, "a", version="1.0.0"),
        id="lookup-coding",
    ),
    pytest.param(
        codesystem_subsumes.OPERATION,
        {"system": CS, "codeA": "a", "codeB": "b", "version": "1.0.0"},
        [],
        None,
        lambda wb: wb.subsumes(CS, "a", "b", version="1.0.0"),
        id="subsumes",
    ),
    pytest.param(
        codesystem_subsumes.OPERATION,
        None,
        [
            {"name": "codingA", "valueCoding": {"system": CS, "code": "a"}},
            {"name": "codingB", "valueCoding": {"system": CS, "code": "b"}},
        ],
        None,
        lambda wb: wb.subsumes(CS, "a", "b"),
        id="subsumes-codings",
    ),
    pytest.param(
        codesystem_validate_code.OPERATION,
        {"url": CS, "code": "a", "display": "Alpha", "abstract": "false", "version": "1"},
        [],
        None,
        lambda wb: wb.validate_in_codesystem(CS, "a", version="1", display="Alpha", abstract=False),
        id="codesystem-validate-code",
    ),
    pytest.param(
        conceptmap_translate.OPERATION,
        {
            "url": CM,
            "code": "a",
            "system": CS,
            "targetsystem": OTHER,
            "reverse": "true",
            "conceptMapVersion": "3",
            "source": VS,
        },
        [],
        None,
        lambda wb: wb.translate(
            "a",
            system=CS,
            url=CM,
            target_system=OTHER,
            reverse=True,
            conceptmap_version="3",
            source=VS,
        ),
        id="translate",
    ),
    pytest.param(
        conceptmap_translate.OPERATION,
        None,
        [{"name": "coding", "valueCoding": {"system": CS, "code": "a"}}, DEPENDENCY],
        None,
        lambda wb: wb.translate(
            coding={"system": CS, "code": "a"},
            dependencies=[("http://example.org/element", [{"system": OTHER, "code": "z"}])],
        ),
        id="translate-coding-dependency",
    ),
]


@pytest.mark.parametrize(("op", "query", "extra", "language", "facade"), CASES)
def test_the_same_request_from_get_post_and_keywords(
    op: Operation,
    query: dict[str, Any] | None,
    extra: list[dict[str, Any]],
    language: str | None,
    facade: Callable[[Workbench], Any],
) -> None:
    from_keywords = via_facade(facade)
    from_post = via_post(op, query or {}, extra, language)
    assert from_post == from_keywords
    if query is not None:
        assert via_get(op, query, language) == from_keywords


def test_a_bundle_is_read_from_its_own_inputs() -> None:
    req = ValidateRequest.from_inputs(
        {"lenient-display-validation": True, "system-version": [f"{CS}|1.x"], "code": "a"},
        valueset=VS,
    )
    assert req.options == CheckOptions(lenient_display=True)
    assert req.policy == VersionPolicy(defaults={CS: "1.x"})
    assert ValidateRequest(valueset=VS).options == CheckOptions()
    # abstract left out is None on the wire and in Python alike: abstract codes are taken
    # (tx.fhir.org); only abstract=false refuses them (issue 22, a2)
    assert ValidateRequest(valueset=VS).options.abstract is None


@pytest.mark.parametrize(
    ("inputs", "plain"),
    [
        ({"valueset-membership-only": False, "lenient-display-validation": False}, True),
        ({"activeOnly": False, "inferSystem": False}, True),
        ({"valueset-membership-only": False, "lenient-display-validation": True}, False),
        ({"abstract": False}, False),
    ],
)
def test_inputs_that_repeat_the_defaults_give_the_default_bundle(
    inputs: dict[str, Any], plain: bool
) -> None:
    # the HL7 validator sends its switches false: the request is then a plain one, whose
    # options the engine knows by identity (and works out once per value set)
    req = ValidateRequest.from_inputs({**inputs, "code": "a"}, valueset=VS)
    assert req.options == CheckOptions(**{FIELDS[k]: v for k, v in inputs.items()})
    assert (req.options is PLAIN_CHECK) is plain


FIELDS = {
    "valueset-membership-only": "membership_only",
    "lenient-display-validation": "lenient_display",
    "activeOnly": "active_only",
    "inferSystem": "infer_system",
    "abstract": "abstract",
}


def test_requests_are_frozen() -> None:
    req = ValidateRequest(valueset=VS, code="a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.code = "b"  # type: ignore[misc]
    assert dataclasses.replace(req, code="b").code == "b"
    assert req.code == "a"


@pytest.mark.parametrize(
    ("cls", "inputs", "given"),
    [
        (ValidateRequest, {"code": "a", "system": CS, "useSupplement": ["s"]}, {"valueset": VS}),
        (ValidateRequest, {"lenient-display-validation": True}, {"valueset": {"compose": {}}}),
        (ExpandRequest, {"count": 3, "property": ["p", "q"]}, {"valueset": VS}),
        (LookupRequest, {"displayLanguage": "de"}, {"system": CS, "code": "a"}),
        (SubsumesRequest, {"codeA": "a", "codeB": "b", "system": CS}, {}),
        (TranslateRequest, {"code": "a", "system": CS, "reverse": True}, {}),
        (CodeSystemValidateRequest, {"url": CS, "code": "a", "abstract": False}, {}),
    ],
)
def test_from_inputs_builds_what_the_class_builds(
    cls: type[Request], inputs: dict[str, Any], given: dict[str, Any]
) -> None:
    """``from_inputs`` sets the fields at once (no frozen ``__init__``): the same object,
    its fields in the same order, checked the same way."""
    built = cls.from_inputs(inputs, **given)
    called = cls(**{**read_inputs(cls, inputs), **given})
    assert built == called
    assert list(vars(built).items()) == list(vars(called).items())
    bad = next(f.name for f in dataclasses.fields(cls) if f.name not in given)
    with pytest.raises(InvalidRequestError, match=rf"{cls.__name__}\.{bad} must be"):
        cls.from_inputs(inputs, **given, **{bad: object()})
    # of two fields that do not fit, the error names the first one declared
    first, second = [f.name for f in dataclasses.fields(cls) if f.name not in given][:2]
    with pytest.raises(InvalidRequestError, match=rf"{cls.__name__}\.{first} must be"):
        cls.from_inputs(inputs, **given, **{second: object(), first: object()})


def test_from_inputs_of_a_request_with_its_own_check_calls_the_class() -> None:
    @dataclasses.dataclass(frozen=True)
    class Strict(LookupRequest):
        def __post_init__(self) -> None:
            super().__post_init__()
            if self.code == "forbidden":
                raise InvalidRequestError("no")

    with pytest.raises(InvalidRequestError, match="no"):
        Strict.from_inputs({}, system=CS, code="forbidden")
    with pytest.raises(TypeError, match="missing 1 required"):
        LookupRequest.from_inputs({"system": CS})


@pytest.mark.parametrize(
    ("build", "error", "text"),
    [
        pytest.param(
            lambda: ValidateRequest.from_inputs({"bogus": "1"}, valueset=VS),
            InvalidRequestError,
            r"ValidateRequest does not read the input\(s\) bogus \(it reads: .*lenient-display",
            id="unknown-input",
        ),
        pytest.param(
            lambda: ValidateRequest(valueset=VS, bogus=1),  # type: ignore[call-arg]
            TypeError,
            "unexpected keyword argument 'bogus'",
            id="unknown-field",
        ),
        pytest.param(
            lambda: ValidateRequest(valueset=VS, code=5),  # type: ignore[arg-type]
            InvalidRequestError,
            r"ValidateRequest\.code must be str \| None, not int \(5\)",
            id="code-not-a-string",
        ),
        pytest.param(
            lambda: ValidateRequest(valueset=3),  # type: ignore[arg-type]
            InvalidRequestError,
            r"ValidateRequest\.valueset must be str \| Mapping\[str, Any\], not int",
            id="valueset-not-a-canonical-or-resource",
        ),
        pytest.param(
            lambda: ExpandRequest(valueset=VS, properties=["a"]),  # type: ignore[arg-type]
            InvalidRequestError,
            r"ExpandRequest\.properties must be tuple\[str, \.\.\.\], not list",
            id="list-not-tuple",
        ),
        pytest.param(
            lambda: ExpandRequest(valueset=VS, offset=True),
            InvalidRequestError,
            r"ExpandRequest\.offset must be int, not bool",
            id="bool-not-int",
        ),
        pytest.param(
            lambda: LookupRequest(system=CS, code="a", tx_resources=("x",)),  # type: ignore[arg-type]
            InvalidRequestError,
            r"LookupRequest\.tx_resources must be",
            id="tx-resource-not-a-resource",
        ),
        pytest.param(
            lambda: dataclasses.replace(SubsumesRequest(CS, "a", "b"), code_b=None),
            InvalidRequestError,
            r"SubsumesRequest\.code_b must be str, not NoneType",
            id="replace-is-checked-too",
        ),
        pytest.param(
            lambda: ValidateRequest.from_inputs({"system-version": ["no-bar"]}, valueset=VS),
            InvalidRequestError,
            r"Parameter 'system-version' must be 'system\|version', not 'no-bar'",
            id="bundle-input-parsed",
        ),
        pytest.param(
            lambda: TranslateRequest.from_inputs({"dependency": [{"element": "e"}]}),
            RequiredError,
            r"Parameter 'dependency' \(#1\) needs both element and concept; concept is missing",
            id="dependency-parts",
        ),
    ],
)
def test_a_bad_field_is_a_clear_error(
    build: Callable[[], Any], error: type[Exception], text: str
) -> None:
    with pytest.raises(error, match=text):
        build()


def test_the_facade_reports_a_bad_keyword_precisely() -> None:
    with pytest.raises(InvalidRequestError, match=r"ValidateRequest\.code must be str"):
        Workbench().validate_code(VS, code=5)  # type: ignore[arg-type]


# The inputs each operation honoured before its request object existed (a regression
# table: what an operation supports is now derived from its request's fields).
SUPPORTED = {
    "ValueSet-validate-code": "url valueSet valueSetVersion code system systemVersion display "
    "coding codeableConcept abstract inferSystem activeOnly lenient-display-validation "
    "valueset-membership-only system-version check-system-version force-system-version "
    "default-valueset-version tx-resource displayLanguage useSupplement version "
    "diagnostics default-to-latest-version profile-url mode x-system-cache-id cache-id",
    "ValueSet-expand": "url valueSet valueSetVersion filter offset count activeOnly "
    "includeDesignations displayLanguage excludeNested excludePostCoordinated tx-resource "
    "includeDefinition property system-version check-system-version force-system-version "
    "default-valueset-version useSupplement designation allowMaximumSizeExpansion "
    "_limit _incomplete incomplete-ok default-to-latest-version profile-url x-system-cache-id "
    "cache-id",
    "CodeSystem-lookup": "code system version coding property displayLanguage useSupplement "
    "tx-resource",
    "CodeSystem-validate-code": "url code system version display coding codeableConcept abstract "
    "displayLanguage lenient-display-validation "
    "tx-resource diagnostics default-to-latest-version profile-url mode x-system-cache-id "
    "cache-id",
    "CodeSystem-subsumes": "codeA codeB system version codingA codingB tx-resource",
    "ValueSet-compare": "thisUrl thisVersion thisValueSet otherUrl otherVersion otherValueSet "
    "system-version check-system-version force-system-version default-valueset-version "
    "tx-resource diagnostics",
    "ConceptMap-translate": "url conceptMap conceptMapVersion code system version source coding "
    "codeableConcept target targetsystem reverse dependency sourceCode sourceSystem "
    "sourceCoding sourceCodeableConcept targetCode targetCoding targetSystem",
}

REQUESTS: dict[str, type[Request]] = {
    "ValueSet-validate-code": ValidateRequest,
    "ValueSet-expand": ExpandRequest,
    "CodeSystem-lookup": LookupRequest,
    "CodeSystem-validate-code": CodeSystemValidateRequest,
    "CodeSystem-subsumes": SubsumesRequest,
    "ConceptMap-translate": TranslateRequest,
    "ValueSet-compare": CompareRequest,
}


@pytest.mark.parametrize(
    "op",
    [op for op in OPERATIONS if op.definition.id in REQUESTS],  # (those with a request object)
    ids=lambda op: op.definition.id,
)
def test_an_operation_supports_what_its_request_reads(op: Operation) -> None:
    assert op.supported == frozenset(SUPPORTED[op.definition.id].split())
    read = parameter_names(REQUESTS[op.definition.id]) - {ACCEPT_LANGUAGE}
    assert read <= set(op.definition.inputs), "every input a request reads is defined"


def test_a_new_input_is_one_field() -> None:
    """The goal of the request objects: a field naming a defined input is parsed,
    supported and passed down with nothing else to change."""

    @dataclasses.dataclass(frozen=True)
    class Dated(ValidateRequest):
        date: str | None = param("date", None)

    op = valueset_validate_code.OPERATION
    assert "date" not in op.supported
    own = (*valueset_validate_code.OWN, "cache-id")  # (cache-id: read by Operation.run)
    assert honoured(op.definition, Dated, own) == op.supported | {"date"}
    inputs = parse_query(op.definition, [("url", VS), ("code", "a"), ("date", "2024-01-01")])
    req = Dated.from_inputs(inputs, own=valueset_validate_code.OWN, valueset=VS)
    assert req.date == "2024-01-01"
    assert req == Dated(valueset=VS, code="a", date="2024-01-01")


def test_a_display_beside_a_coding_is_checked_by_the_facade_as_on_the_wire() -> None:
    wb = Workbench()
    wb.load(
        {
            "resourceType": "CodeSystem",
            "url": CS,
            "content": "complete",
            "concept": [{"code": "a", "display": "Alpha"}],
        }
    )
    vs = {"resourceType": "ValueSet", "compose": {"include": [{"system": CS}]}}
    coding = {"system": CS, "code": "a"}
    assert wb.validate_code(vs, coding=coding, display="Alpha").result is True
    wrong = wb.validate_code(vs, coding=coding, display="Beta")
    assert wrong.result is False
    assert "Alpha" in (wrong.message or "")
