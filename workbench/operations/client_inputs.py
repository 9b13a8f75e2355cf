"""The inputs the HL7 validator's terminology client sends with every ``$validate-code``
and ``$expand``, beyond the definitions of FHIR R4: ``mode``, the ones that key the
client's own caches, and ``diagnostics``, whose output says how an answer was reached."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workbench.errors import InvalidRequestError, WorkbenchError
from workbench.operations.base import Inputs

if TYPE_CHECKING:
    from workbench.service import TerminologyService
    from workbench.terminology.engine import Terminology
    from workbench.terminology.requests import CodeSystemValidateRequest, ValidateRequest
    from workbench.terminology.validate.coding import ValidationResult

#: Inputs that name the client's own state (its expansion profile, its cache of code
#: systems) or a default this server always applies (an unversioned reference is its
#: latest version): read, and answered alike whatever their value.
CLIENT_STATE = ("default-to-latest-version", "profile-url", "x-system-cache-id")
#: The values ``mode`` takes, each with the input it stands for.
MODES = {"lenient-display-validation": "lenient-display-validation"}


def with_mode(inputs: Inputs) -> Inputs:
    """The inputs with ``mode`` read: ``mode=lenient-display-validation`` is
    ``lenient-display-validation=true``; another value is refused, naming the known ones."""
    mode = inputs.get("mode")
    if mode is None:
        return inputs
    if mode not in MODES:
        raise InvalidRequestError(
            f"Parameter 'mode' must be {' or '.join(MODES)}, not {str(mode)[:80]!r}"
        )
    return {**inputs, MODES[mode]: True}


class Clock:
    """When a call started, for the time its diagnostics report."""

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def elapsed_ms(self) -> float:
        """Milliseconds since the call started."""
        return (time.perf_counter() - self.started) * 1000


def _canonical(resource: Mapping[str, Any]) -> str:
    url = str(resource.get("url") or "(no url)")
    version = resource.get("version")
    return f"{url}|{version}" if version else url


def _resolved_valueset(engine: Terminology, req: ValidateRequest) -> str:
    target = req.valueset
    if not isinstance(target, str):
        return f"the inline ValueSet {_canonical(target)}"
    try:
        resource = engine.valueset_resource(target, req.valueset_version)
    except WorkbenchError as exc:
        return f"{target}: not resolved ({exc.text})"
    inline = any(r.get("url") == resource.get("url") for r in req.tx_resources)
    where = "a tx-resource" if inline else "stored"
    return f"{_canonical(resource)} ({where})"


def _systems(engine: Terminology, req: ValidateRequest) -> list[str]:
    """The code systems the value set draws on, each with the version it resolves to."""
    try:
        compiled = engine.compiled(req.valueset, req.valueset_version, req.policy)
    except WorkbenchError:
        return []
    out = []
    for system in compiled.systems():
        provider = engine.codesystem(system)
        version = provider.version if provider is not None else None
        shown = f"{system}|{version}" if version else system
        out.append(shown if provider is not None else f"{system} (not loaded)")
    return out


def validation_diagnostics(
    svc: TerminologyService,
    req: ValidateRequest,
    result: ValidationResult,
    *,
    cached: bool,
    clock: Clock,
) -> str:
    """What ``diagnostics=true`` reports of a ``$validate-code``: the value set resolved
    and its code systems' versions, the inline resources, the cache, the versions the
    request pinned, the answer and the time it took."""
    engine = svc.engine(req.tx_resources)  # (a view over the tx-resources, made once)
    lines = [f"Value set: {_resolved_valueset(engine, req)}"]
    systems = _systems(engine, req)
    if systems:
        lines.append(f"Code systems of the value set: {', '.join(systems)}")
    lines.append(_resources_line(req.tx_resources))
    lines.append(
        "Compiled value set: from the cache"
        if cached
        else "Compiled value set: compiled for this request"
    )
    pinned = {**req.policy.defaults, **req.policy.force}
    if pinned:
        lines.append(
            "Versions asked for: " + ", ".join(f"{s}|{v}" for s, v in sorted(pinned.items()))
        )
    lines.append(_answer_line(result))
    lines.append(f"Time: {clock.elapsed_ms():.2f} ms")
    return "\n".join(lines)


def _resources_line(resources: Sequence[Mapping[str, Any]]) -> str:
    if not resources:
        return "tx-resource: none"
    shown = [f"{r.get('resourceType')} {_canonical(r)}" for r in resources[:20]]
    more = f" and {len(resources) - 20} more" if len(resources) > 20 else ""
    return f"tx-resource: {', '.join(shown)}{more}"


def _answer_line(result: ValidationResult) -> str:
    system = result.system or "(no system)"
    version = f"|{result.version}" if result.version else ""
    verdict = "valid" if result.result else f"not valid ({result.issue or 'see issues'})"
    return f"Checked: {system}{version}#{result.code or ''}: {verdict}"


def codesystem_diagnostics(
    svc: TerminologyService,
    req: CodeSystemValidateRequest,
    result: ValidationResult,
    *,
    clock: Clock,
) -> str:
    """What ``diagnostics=true`` reports of a CodeSystem ``$validate-code``: the code
    system and version resolved, the inline resources, the answer and its time."""
    provider = svc.engine(req.tx_resources).codesystem(req.system, req.version)
    if provider is None:
        resolved = f"{req.system}: not loaded"
    else:
        shown = f"{provider.url}|{provider.version}" if provider.version else provider.url
        resolved = f"{shown} ({type(provider).__name__}, content {provider.content})"
    lines = [f"Code system: {resolved}", _resources_line(req.tx_resources)]
    lines += [_answer_line(result), f"Time: {clock.elapsed_ms():.2f} ms"]
    return "\n".join(lines)
