"""The C checks of a chunk agree with the line-by-line rule: nesting measured exactly,
and whatever pyarrow takes as one type is JSON orjson reads (no NaN, UTF-8, not too deep)."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench import jsonio
from workbench.fhirdata.checks import chunk_types, parse_line, plain_json, too_deep

TRICKY = st.sampled_from(['"', "\\", "[", "]", "{", "}", "NaN", "Inf", ": Inf", "é", "\u2028"])
TEXT = st.lists(st.one_of(TRICKY, st.text(max_size=3)), max_size=6).map("".join)
JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        TEXT,
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=40,
)


def nest(value: Any, levels: int) -> Any:
    for _ in range(levels):
        value = [value] if levels % 2 else {"a": value}
    return value


@settings(max_examples=300, deadline=None)
@given(JSON, st.integers(0, 12), st.integers(2, 12))
def test_too_deep_is_exact(value: Any, levels: int, limit: int) -> None:
    line = orjson.dumps({"resourceType": "Basic", "x": nest(value, levels)})
    assert too_deep(line + b"\n", limit) == (jsonio.nesting(line) > limit)


@settings(max_examples=300, deadline=None)
@given(st.lists(JSON, min_size=1, max_size=5), st.booleans())
def test_what_the_c_check_takes_orjson_reads(values: list[Any], spaced: bool) -> None:
    dumps = (lambda v: json.dumps(v).encode()) if spaced else orjson.dumps
    lines = [dumps({"resourceType": "Basic", "v": v}) for v in values]
    chunk = b"\n".join(lines) + b"\n"
    if chunk_types(chunk) is not None:
        assert all(parse_line(line)[1] is None for line in lines)


@pytest.mark.parametrize(
    ("line", "plain"),
    [
        (b'{"a": NaN}', False),
        (b'{"a": [1, -Infinity]}', False),
        (b'{"a":\t Inf}', False),
        (b'{"a": "NaN", "b": "Infection"}', True),
        (b'{"a": "\xed\xa0\x80"}', False),  # a surrogate in UTF-8
        (b'{"a": "caf\xc3\xa9"}', True),
        (b'{"a": ' + b"[" * 101 + b"]" * 101 + b"}", False),
        (b'{"a": "' + b"[" * 101 + b'"}', True),  # brackets in a string do not nest
        (b'{"a": "\\"' + b"[" * 101 + b'"}', True),
    ],
)
def test_plain_json(line: bytes, plain: bool) -> None:
    assert plain_json(line + b"\n") is plain


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(JSON, st.floats()), min_size=1, max_size=5))
def test_python_json_nan_and_infinity_go_line_by_line(values: list[Any]) -> None:
    lines = [json.dumps({"resourceType": "Basic", "v": v}).encode() for v in values]
    if chunk_types(b"\n".join(lines) + b"\n") is not None:
        assert all(parse_line(line)[1] is None for line in lines)
