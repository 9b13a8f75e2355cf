"""The server reads a GET query once, straight from the raw query string: the pairs must be
exactly what ``urllib.parse.parse_qsl(keep_blank_values=True)`` gives for the UTF-8 text."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

import pytest

from workbench.errors import StructureError
from workbench.operations import OPERATIONS
from workbench.operations.codec import parse_parameters, parse_query, query_items

CASES = [
    pytest.param(b"", id="empty"),
    pytest.param(b"a=1&b=&c", id="blank-values"),
    pytest.param(b"a&&b=", id="empty-pieces"),
    pytest.param(b"url=http%3A%2F%2Fx&code=a+b", id="escapes-and-plus"),
    pytest.param(b"q=%2B+%20", id="escaped-plus-and-space"),
    pytest.param(b"x=%E2%82%AC&y=%ZZ&z==3", id="utf8-escape-bad-escape-equals"),
    pytest.param("display=Präsenz&lang=de".encode(), id="raw-utf8"),
    pytest.param(b"a=%C3", id="truncated-utf8"),
    pytest.param(b"code=1&code=2&_pretty=true", id="repeated"),
    pytest.param(
        urlencode(
            {
                "url": "http://hl7.org/fhir/ValueSet/administrative-gender",
                "system": "http://hl7.org/fhir/administrative-gender",
                "code": "fe male&x=1",
                "display": "Weiblich – ü",
            }
        ).encode(),
        id="urlencoded",
    ),
]


@pytest.mark.parametrize("raw", CASES)
def test_query_items_equal_parse_qsl(raw: bytes) -> None:
    expected = parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)
    assert query_items(raw) == expected
    assert query_items(raw.decode("utf-8", "replace")) == expected


# (input, value[x] key, text, well formed): a simple input is read by one rule, in a query and
# in a Parameters body alike (a body once took an empty string a query refused)
SIMPLE = [
    ("url", "valueUri", "", False),
    ("profile-url", "valueString", "", False),
    ("x-system-cache-id", "valueString", "", False),
    ("displayLanguage", "valueCode", "", False),
    ("date", "valueDateTime", "not a date", False),
    ("code", "valueCode", "male ", True),  # (a code as sent: its check is the validation's)
    ("display", "valueString", "Male", True),
    ("date", "valueDateTime", "2024-01-31", True),
]


@pytest.mark.parametrize(("name", "key", "text", "good"), SIMPLE,
                         ids=[f"{r[0]}-{r[2] or 'empty'}" for r in SIMPLE])  # fmt: skip
def test_a_simple_input_is_read_alike_in_a_query_and_a_body(
    name: str, key: str, text: str, good: bool
) -> None:
    op = next(
        o.definition
        for o in OPERATIONS
        if o.definition.code == "validate-code" and "ValueSet" in o.definition.resource_types
    )
    body = {"resourceType": "Parameters", "parameter": [{"name": name, key: text}]}
    readers = [
        lambda: parse_query(op, [(name, text)], strict=True),
        lambda: parse_parameters(op, body, strict=True),
    ]
    for read in readers:
        if good:
            assert read()[name] == text
        else:
            with pytest.raises(StructureError, match=f"Parameter '{name}'"):
                read()
