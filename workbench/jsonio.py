"""FHIR JSON in and out: orjson for speed, exact decimals where resources are stored.

FHIR decimals keep their precision (``1.50`` is not ``1.5``). Where a resource is stored and
served back (REST writes, the data folder), JSON is parsed with decimals as ``Decimal`` and
written back digit for digit.

Bodies from the network go through ``loads_body``, which accepts only what can be stored and
served back unchanged: UTF-8 without lone surrogates, no NaN or Infinity, nesting at most
``MAX_DEPTH`` deep, and numbers of at most ``MAX_NUMBER_CHARS``
characters. Anything else raises ``BodyError`` (a ValueError) saying what is wrong.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import numpy as np
import orjson

MAX_DEPTH = 100
MAX_NUMBER_CHARS = 64
_INT64 = (-(2**63), 2**63 - 1)
_BOM = b"\xef\xbb\xbf"


class BodyError(ValueError):
    """A request body that is not acceptable FHIR JSON (the message says why)."""


def loads(data: bytes | str, *, exact_decimals: bool = False) -> Any:
    """Parse JSON; with ``exact_decimals`` numbers with a fraction become ``Decimal``.

    Raises orjson.JSONDecodeError (a ValueError) for invalid JSON either way.
    """
    if not exact_decimals:
        return orjson.loads(data)
    try:
        return json.loads(data, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        raise orjson.JSONDecodeError(exc.msg, exc.doc, exc.pos) from exc


def _reject_constant(name: str) -> Any:
    raise BodyError(f"{name} is not a JSON number (FHIR has no NaN or Infinity)")


def _exact_int(text: str) -> int | Decimal:
    if len(text) > MAX_NUMBER_CHARS:
        raise BodyError(f"the number {text[:20]}… has more than {MAX_NUMBER_CHARS} digits")
    value = int(text)
    # beyond 64 bits it can only be a decimal: kept digit for digit
    return value if _INT64[0] <= value <= _INT64[1] else Decimal(text)


def _exact_decimal(text: str) -> Decimal:
    if len(text) > MAX_NUMBER_CHARS:
        raise BodyError(f"the number {text[:20]}… has more than {MAX_NUMBER_CHARS} characters")
    return Decimal(text)


def loads_body(data: bytes, *, exact_decimals: bool = False) -> Any:
    """Parse a request body strictly (see the module docstring); raise BodyError."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        parsed = orjson.loads(data)  # UTF-8, surrogates, NaN, syntax, depth <= 1024
    except orjson.JSONDecodeError as exc:
        raise BodyError(str(exc)) from None
    if data.count(b"[") + data.count(b"{") > MAX_DEPTH and nesting(data) > MAX_DEPTH:
        raise BodyError(f"arrays and objects nest more than {MAX_DEPTH} levels deep")
    if not exact_decimals:
        return parsed
    try:
        return json.loads(
            data.decode("utf-8"),
            parse_float=_exact_decimal,
            parse_int=_exact_int,
            parse_constant=_reject_constant,
        )
    except (json.JSONDecodeError, RecursionError) as exc:  # orjson agreed, so hardly ever
        raise BodyError(str(exc)) from None


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Raise BodyError when arrays and objects nest more than ``limit`` levels."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level > limit:
            raise BodyError(f"arrays and objects nest more than {limit} levels deep")
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))


#: +1 for a byte that opens an array or object, -1 for one that closes it.
_BRACKETS = np.zeros(256, dtype=np.int32)
_BRACKETS[[ord("["), ord("{")]] = 1
_BRACKETS[[ord("]"), ord("}")]] = -1


def nesting(data: bytes) -> int:
    """How deep arrays and objects nest in valid JSON text (what ``check_depth`` finds of
    the parsed value), read from the bytes in a few array passes, with no Python per
    element: brackets count outside strings, a string ending at a quote that no odd run
    of backslashes escapes.

    >>> nesting(b'{"a": [1, {"b": "]]}["}]}')
    3
    """
    text = np.frombuffer(data, dtype=np.uint8)
    if len(text) == 0:
        return 0
    quotes = np.flatnonzero(text == ord('"'))
    if len(quotes) and (text == ord("\\")).any():
        # (backslashes are only ever in strings) a quote after an odd run of them is text
        others = np.flatnonzero(text != ord("\\"))
        before = np.searchsorted(others, quotes) - 1
        runs = quotes - 1 - np.where(before >= 0, others[np.maximum(before, 0)], -1)
        quotes = quotes[runs % 2 == 0]
    steps = _BRACKETS.take(text)
    if len(quotes):
        inside = np.zeros(len(text) + 1, dtype=np.int32)
        inside[quotes[0::2]] += 1
        inside[quotes[1::2]] -= 1
        steps[np.cumsum(inside[:-1]) > 0] = 0
    return int(np.cumsum(steps).max())


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return orjson.Fragment(str(value).encode())
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(value: Any, *, pretty: bool = False) -> bytes:
    """Serialise to JSON bytes (Decimals exactly as written)."""
    option = orjson.OPT_INDENT_2 if pretty else 0
    return orjson.dumps(value, default=_default, option=option)
