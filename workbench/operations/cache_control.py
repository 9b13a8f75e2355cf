"""``[base]/$cache-control``: start, check or end a client cache (system level).

``mode=start`` makes a cache (holding the ``tx-resource``s sent with it; ``sealed=true``:
only those) and answers its ``cache-id``; later calls send it as the ``X-Cache-Id``
header. ``mode=end`` drops it. ``mode=check`` keeps a cache alive and answers its state, as
FHIRsmith (tx.fhir.org) answers it: ``valid`` true with ``sealed``, ``resource-count``,
``idle`` (seconds unused before this check), the server's idle ``timeout`` (seconds) and
what it holds (``resource``); or, for a cache the server does not hold, ``valid`` false
with an ``outcome`` that says why (closed, expired, cleared, never known:
``cache_ends``), with status 200, so that a client tells "my cache is gone" from "the
server could not be reached". Any other call naming a cache that is gone is 404
``cache-id-unknown`` with that same outcome. GET is taken too, as tx.fhir.org takes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.errors import InvalidRequestError, NotSupportedError, RequiredError
from workbench.operations.base import CACHE_HEADER, CACHES, Inputs, Operation
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.client_caches import CacheState, ClientCaches

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-cache-control.json")
MODES = ("start", "check", "end")


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """Start, check or end the cache the inputs name."""
    caches = inputs.get(CACHES)
    if not isinstance(caches, ClientCaches):
        raise NotSupportedError("$cache-control needs a server: there are no client caches here")
    mode = inputs.get("mode")
    if mode is None:
        raise RequiredError("$cache-control needs a 'mode': start, check or end")
    if mode not in MODES:
        raise InvalidRequestError(
            f"$cache-control: 'mode' must be start, check or end, not {str(mode)[:40]!r}"
        )
    header, given = inputs.get(CACHE_HEADER), inputs.get("cache-id")
    if mode == "start":
        if header is not None or given is not None:
            raise RequiredError(  # (a rule between inputs: the document states it)
                "$cache-control?mode=start makes a new cache: send no cache id with it"
            )
        cache = caches.start(
            resources=inputs.get("tx-resource") or (), sealed=inputs.get("sealed") is True
        )
        return {"cache-id": cache.id}
    if header is not None and given is not None and header != given:
        raise RequiredError(
            f"The X-Cache-Id header ({header}) and the cache-id parameter ({given}) name "
            "two caches; a request works in one cache at most"
        )
    cache_id = header or given
    if cache_id is None:
        raise RequiredError(
            f"$cache-control?mode={mode} needs the cache: send it as the X-Cache-Id header"
        )
    if mode == "end":
        caches.end(str(cache_id))
        return {"cache-id": str(cache_id)}
    return checked(caches.check(str(cache_id)))


def checked(state: CacheState) -> dict[str, Any]:
    """The outputs of ``mode=check``: the state of a cache held, or why it is gone."""
    timeout = int(state.timeout)
    if state.gone is not None:
        outcome = state.gone.to_outcome()
        return {"cache-id": state.id, "valid": False, "timeout": timeout, "outcome": outcome}
    return {
        "cache-id": state.id,
        "valid": True,
        "sealed": state.sealed,
        "resource-count": len(state.names),
        "idle": int(state.idle),
        "timeout": timeout,
        "resource": list(state.names),
    }


OPERATION = Operation(
    DEFINITION, run, frozenset({"mode", "cache-id", "sealed", "tx-resource"}), with_caches=True
)
