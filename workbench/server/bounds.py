"""The bounds on what one operation request carries: its POSTed body and its inline
resources (``tx-resource``).

A body is decoded, its inline resources counted and measured, and its Parameters read by the
codec, in that order, so that a request over a limit is refused before the costly steps.
``post_inputs`` runs on the event loop for a small body and where the operation runs (a
worker thread or a child process) for a large one (``Limits.loop_body_bytes``); there every
step is charged to the request's work budget (one step per KB decoded, one per inline
resource; compiling them is charged by the engine).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench import jsonio
from workbench.errors import TooManyResourcesError
from workbench.operations.codec import parse_parameters
from workbench.operations.definitions import OperationDef
from workbench.server.offload import Limits
from workbench.server.responses import parse_json
from workbench.terminology import budget

TX_RESOURCE = "tx-resource"


def post_inputs(
    definition: OperationDef, raw: bytes, limits: Limits, *, strict: bool = True
) -> dict[str, Any]:
    """The inputs of a POSTed body (``raw``): decoded, checked against the limits on inline
    resources, then read by the codec (``strict``: unknown parameters refused, else
    ignored and named). Raises MalformedError, TooManyResourcesError, or the codec's
    errors."""
    budget.charge(1 + len(raw) // 1024)
    body = parse_json(raw)
    check_inline_resources(body, len(raw), limits)
    return parse_parameters(definition, body, strict=strict)


def inline_resources(body: Any) -> list[Any]:
    """The ``tx-resource`` values of a Parameters body (whatever they hold)."""
    if not isinstance(body, Mapping) or body.get("resourceType") != "Parameters":
        return []
    entries = body.get("parameter")
    if not isinstance(entries, list):
        return []
    return [
        e.get("resource")
        for e in entries
        if isinstance(e, Mapping) and e.get("name") == TX_RESOURCE
    ]


def check_inline_resources(body: Any, size: int, limits: Limits) -> None:
    """Refuse (413 ``too-long``, naming the limit and what was sent) more inline resources
    than ``limits.tx_resources``, or more than ``limits.tx_resource_bytes`` of them; ``size``
    is the body's, which bounds theirs, so they are measured only when it is over."""
    sent = inline_resources(body)
    budget.charge(len(sent))
    if len(sent) > limits.tx_resources:
        raise TooManyResourcesError(
            f"The request carries {len(sent):,} {TX_RESOURCE} parameters; this server takes "
            f"at most {limits.tx_resources:,} (limit tx_resources)"
        )
    if size <= limits.tx_resource_bytes:
        return
    total = 0
    for resource in sent:
        total += len(jsonio.dumps(resource))
        budget.tick()
    if total > limits.tx_resource_bytes:
        raise TooManyResourcesError(
            f"The {TX_RESOURCE} parameters of the request take {total:,} bytes of JSON; this "
            f"server takes at most {limits.tx_resource_bytes:,} (limit tx_resource_bytes)"
        )
