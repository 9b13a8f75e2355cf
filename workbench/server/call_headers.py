"""What an operation call reads from its request besides its parameters: the headers that
change an answer (``Accept-Language``, ``X-TOO-COSTLY-THRESHOLD``, ``Prefer``,
``X-Cache-Id``), and how a query's inputs join a body's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.errors import InvalidRequestError, TooCostlyError
from workbench.operations.codec import IGNORED
from workbench.terminology.client_caches import check_id

#: The request headers an operation reads, in the order ``read_headers`` gives them.
OPERATION_HEADERS = (b"accept-language", b"x-too-costly-threshold", b"prefer", b"x-cache-id")


def read_headers(scope: Mapping[str, Any], names: tuple[bytes, ...]) -> list[str | None]:
    """Request headers' values (the first of each name, latin-1 as Starlette reads them),
    None for one not sent."""
    found: list[str | None] = [None] * len(names)
    for key, value in scope["headers"]:
        if key in names:
            at = names.index(key)
            if found[at] is None:
                found[at] = value.decode("latin-1")
    return found


def strict_handling(text: str | None) -> bool:
    """Whether a ``Prefer`` header asks ``handling=strict`` (unknown parameters refused)."""
    if not text:
        return False
    return any(
        part.strip().replace(" ", "").lower() == "handling=strict" for part in text.split(",")
    )


def too_costly_threshold(text: str | None) -> int | None:
    """The ``X-TOO-COSTLY-THRESHOLD`` request header (issue 22, c4): the most codes an
    unpaged expansion may have, or None; InvalidRequestError when it is no whole number."""
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise InvalidRequestError(
            f"The X-TOO-COSTLY-THRESHOLD header must be a whole number of codes, not {text!r}"
        )
    return value


def cache_header(scope: Mapping[str, Any]) -> str | None:
    """The ``X-Cache-Id`` request header (the client cache a call works in), or None;
    InvalidRequestError when it names several caches or no valid id."""
    found = [v.decode("latin-1").strip() for k, v in scope["headers"] if k == b"x-cache-id"]
    if not found:
        return None
    ids = [part.strip() for value in found for part in value.split(",")]
    if len(ids) > 1:
        raise InvalidRequestError(
            f"X-Cache-Id names {len(ids)} caches; a request works in one cache at most"
        )
    return check_id(ids[0])


def names_cache(body: bytes | None) -> bool:
    """Whether a large body (decoded where the call runs) may carry a ``cache-id``."""
    return body is not None and b'"cache-id"' in body


def with_query(query: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs of a body with those of the query string besides (the body's first), the
    unknown parameters that either named (``codec.IGNORED``) named together."""
    ignored = (*query.get(IGNORED, ()), *body.get(IGNORED, ()))
    inputs = {**query, **body}
    if ignored:
        inputs[IGNORED] = tuple(dict.fromkeys(ignored))
    return inputs


def check_cost(outputs: Mapping[str, Any], inputs: Mapping[str, Any], threshold: int) -> None:
    """Raise TooCostlyError when an expansion asked for without ``count`` has more codes
    than the client's threshold (it would rather fail than receive them all)."""
    if inputs.get("count") is not None:
        return
    total = outputs["return"].get("expansion", {}).get("total")
    if isinstance(total, int) and total > threshold:
        raise TooCostlyError(
            f"The expansion has {total} codes, more than the {threshold} the request allows "
            "(X-TOO-COSTLY-THRESHOLD); ask for a page with count, or narrow it with filter"
        )
