"""``jsonio``: the nesting of a request body read from its bytes agrees with the parsed
value's, whatever its strings hold (brackets, quotes and backslashes in them)."""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
import pytest

from workbench import jsonio

# strings that hold what the byte scan must not count: brackets, escaped quotes, backslashes
TRICKY = ["a]b", '"[{', "\\", '\\\\"]', 'x\\"y[', "é[]", "", "}}}", '\\\\\\"{']


def depth(value: Any) -> int:
    """The nesting of a parsed value, counted plainly."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def generated(rng: random.Random, level: int) -> Any:
    """A random JSON value, up to 14 levels deep, full of ``TRICKY`` strings and keys."""
    pick = rng.random()
    if level > 12 or pick < 0.3:
        return rng.choice([*TRICKY, 1, None, 2.5, True])
    if pick < 0.65:
        return [generated(rng, level + 1) for _ in range(rng.randint(0, 3))]
    return {
        rng.choice(TRICKY) + str(i): generated(rng, level + 1) for i in range(rng.randint(0, 3))
    }


@pytest.mark.parametrize("seed", range(5))
def test_nesting_of_the_bytes_is_the_values(seed: int) -> None:
    rng = random.Random(seed)
    for i in range(400):
        value = generated(rng, 0)
        text = orjson.dumps(value) if i % 2 else json.dumps(value, indent=1).encode()
        assert jsonio.nesting(text) == depth(value), text


@pytest.mark.parametrize(
    ("body", "deep"),
    [
        (b'{"x": ' + b"[" * 101 + b"]" * 101 + b"}", True),
        (b'{"x": ' + b"[" * 99 + b"]" * 99 + b"}", False),
        (b'{"x": "' + b"[" * 500 + b'", "y": [' + b"{}," * 200 + b"{}]}", False),
        (b'{"x": "\\"' + b"[" * 500 + b'"}', False),
    ],
    ids=["101-deep", "100-deep", "brackets-in-a-string", "after-an-escaped-quote"],
)
def test_a_body_nested_past_the_limit_is_refused(body: bytes, deep: bool) -> None:
    if deep:
        with pytest.raises(jsonio.BodyError, match="nest more than 100 levels"):
            jsonio.loads_body(body)
    else:
        assert jsonio.loads_body(body) == orjson.loads(body)
