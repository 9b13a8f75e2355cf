"""FHIR JSON in and out: orjson for speed, exact decimals where resources are stored.

FHIR decimals keep their precision (``1.50`` is not ``1.5``). Where a resource is stored and
served back (REST writes, the data folder), JSON is parsed with decimals as ``Decimal`` and
written back digit for digit.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import orjson


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


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return orjson.Fragment(str(value).encode())
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(value: Any, *, pretty: bool = False) -> bytes:
    """Serialise to JSON bytes (Decimals exactly as written)."""
    option = orjson.OPT_INDENT_2 if pretty else 0
    return orjson.dumps(value, default=_default, option=option)
