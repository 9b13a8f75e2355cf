"""The server reads a GET query once, straight from the raw query string: the pairs must be
exactly what ``urllib.parse.parse_qsl(keep_blank_values=True)`` gives for the UTF-8 text."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

import pytest

from workbench.operations.codec import query_items

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
