"""A call within a client cache (``X-Cache-Id`` or the older ``cache-id`` parameter).

The resources the call sends inline (``tx-resource``, ``valueSet``, ``codeSystem``) go into
the cache, and the call runs on the cache's engine view (``ClientCaches.view``): what it
and earlier calls of the cache sent is then known by url (and version).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench.errors import RequiredError
from workbench.terminology.client_caches import ClientCaches, cacheable
from workbench.terminology.service import EngineService

if TYPE_CHECKING:
    from workbench.service import TerminologyService

#: The input of the older form: a client-chosen id, the cache made on first sight.
CACHE_ID = "cache-id"
#: The inputs whose resources a cache keeps.
INLINE = ("valueSet", "codeSystem")
TX_RESOURCE = "tx-resource"


def within_cache(
    svc: TerminologyService,
    inputs: dict[str, Any],
    caches: ClientCaches | None,
    header_id: str | None,
) -> tuple[TerminologyService, dict[str, Any]]:
    """The service and inputs of a call in its cache; ``svc`` and ``inputs`` (without
    ``cache-id``) as they are when the call names none, or when there are no caches (a
    call from Python). Raises CacheIdUnknownError (saying why) for a header id the server
    does not hold, RequiredError when the header and the parameter name two caches (a rule
    between two inputs, as the inputs' documentation states)."""
    param_id = inputs.get(CACHE_ID)
    if CACHE_ID in inputs:
        inputs = {k: v for k, v in inputs.items() if k != CACHE_ID}
    if caches is None or (header_id is None and param_id is None):
        return svc, inputs
    if header_id is not None and param_id is not None and str(param_id) != header_id:
        raise RequiredError(
            f"The X-Cache-Id header ({header_id}) and the cache-id parameter "
            f"({str(param_id)[:80]}) name two caches; a request works in one cache at most"
        )
    if header_id is not None:
        cache = caches.get(header_id)
    else:
        cache = caches.get(str(param_id), create=True)
    sent = list(inputs.get(TX_RESOURCE) or ())
    sent += [inputs[n] for n in INLINE if isinstance(inputs.get(n), Mapping)]
    if sent and not cache.sealed:
        caches.keep(cache, sent)
        kept = {id(r) for r in sent if cacheable([r])}
        rest = [r for r in inputs.get(TX_RESOURCE) or () if id(r) not in kept]
        inputs = {k: v for k, v in inputs.items() if k != TX_RESOURCE}
        if rest:  # what a cache does not keep, for the engine to refuse clearly
            inputs[TX_RESOURCE] = rest
    view = caches.view(cache, svc.terminology)
    return EngineService(svc.registry, view), inputs
