"""``ValueSet/$batch-validate-code`` (type level, POST): many ``$validate-code`` calls in one.

The value set inputs at the top (``url``, ``valueSet``, ``valueSetVersion``) are those of
every entry that names no value set itself, and the top ``tx-resource``s are seen by every
entry (read once for the whole batch). Each ``validation`` is the Parameters of one
``$validate-code`` call, read by that operation's definition; the answer has one
``validation`` per entry, in order, with the outputs ``$validate-code`` gives. An entry
that cannot be validated (not a Parameters, an unknown input, no code, an unknown value
set) answers, in its place, what tx.fhir.org answers for it: ``result=false``, the
``message`` and the ``issues`` OperationOutcome of the error; the batch goes on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from workbench import jsonio
from workbench.errors import RequiredError, TooCostlyError, WorkbenchError
from workbench.operations import valueset_validate_code as single
from workbench.operations.base import Inputs, Operation
from workbench.operations.codec import build_output, parse_parameters
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.service import EngineService

if TYPE_CHECKING:
    from workbench.service import TerminologyService

DEFINITION = load_definition("OperationDefinition-ValueSet-batch-validate-code.json")
#: The most entries one batch may have (more: 422 too-costly).
MAX_ENTRIES = 10_000
#: The top inputs an entry takes when it names no value set itself.
SHARED = ("url", "valueSet", "valueSetVersion")
#: What makes an entry's answer more than a function of its JSON within the batch: a
#: resource it brings (kept in a client cache, where later entries see it) and the
#: diagnostics (which time the call). Entries with neither are answered once per batch.
_NOT_REPEATED = (b'"resource"', b'"diagnostics"')


def run(
    svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
) -> dict[str, Any]:
    """Validate every entry; one answer (a Parameters) per entry, in order."""
    entries = inputs.get("validation") or []
    check_size(len(entries))
    top = list(inputs.get("tx-resource") or ())
    if top:  # read once, seen by every entry
        svc = EngineService(svc.registry, svc.terminology.with_resources(top))
    shared = {n: inputs[n] for n in SHARED if inputs.get(n) is not None}
    return {"validation": answers(svc, entries, shared)}


def answers(
    svc: TerminologyService, entries: list[Any], shared: Mapping[str, Any]
) -> list[orjson.Fragment]:
    """The answer of each entry, as FHIR JSON written once (``orjson.Fragment``): an entry
    whose JSON repeats one before it, with no resource or diagnostics of its own, gets that
    entry's answer (the batch sees one state, so the same inputs answer the same)."""
    written: dict[bytes, orjson.Fragment] = {}
    out = []
    for entry in entries:
        try:
            key: bytes | None = orjson.dumps(entry)
        except TypeError:  # (not JSON-shaped: never repeated)
            key = None
        found = written.get(key) if key is not None else None
        if found is None:
            found = orjson.Fragment(jsonio.dumps(answer(svc, entry, shared)))
            if key is not None and not any(mark in key for mark in _NOT_REPEATED):
                written[key] = found
        out.append(found)
    return out


def check_size(count: int) -> None:
    """RequiredError for an empty batch, TooCostlyError for one past ``MAX_ENTRIES``."""
    if count == 0:
        raise RequiredError("$batch-validate-code needs at least one 'validation' parameter")
    if count > MAX_ENTRIES:
        raise TooCostlyError(
            f"$batch-validate-code takes at most {MAX_ENTRIES:,} validations in one call, "
            f"not {count:,}: split the batch"
        )


def answer(svc: TerminologyService, entry: Any, shared: Mapping[str, Any]) -> dict[str, Any]:
    """The Parameters answering one entry (its error answer when it cannot be validated)."""
    given: dict[str, Any] = {}
    try:
        if not isinstance(entry, Mapping) or entry.get("resourceType") != "Parameters":
            kind = entry.get("resourceType") if isinstance(entry, Mapping) else None
            raise RequiredError(f"A validation must be a Parameters resource, not {kind!r}")
        given = parse_parameters(single.DEFINITION, entry)
        if given.get("url") is None and given.get("valueSet") is None:
            given = {**shared, **given}
        return build_output(single.DEFINITION, single.run(svc, given))
    except WorkbenchError as exc:
        return build_output(single.DEFINITION, failed(exc, given or _raw_inputs(entry)))


def _raw_inputs(entry: Any) -> dict[str, Any]:
    """``code``, ``system`` and ``coding`` as an entry that could not be read sent them."""
    found: dict[str, Any] = {}
    parts = entry.get("parameter") if isinstance(entry, Mapping) else None
    for part in parts if isinstance(parts, list) else ():
        name = part.get("name") if isinstance(part, Mapping) else None
        if name in ("code", "system", "coding"):
            value = next((v for k, v in part.items() if k.startswith("value")), None)
            found.setdefault(name, value)
    return found


def failed(exc: WorkbenchError, given: Mapping[str, Any]) -> dict[str, Any]:
    """The outputs of an entry that could not be validated: result=false, the error's
    message and OperationOutcome, and the code and system it named."""
    coding = given.get("coding") if isinstance(given.get("coding"), Mapping) else {}
    assert isinstance(coding, Mapping)
    code = given.get("code") or coding.get("code")
    system = given.get("system") or coding.get("system")
    return {
        "result": False,
        "message": exc.text,
        "code": code if isinstance(code, str) else None,
        "system": system if isinstance(system, str) else None,
        "issues": exc.to_outcome(),
    }


OPERATION = Operation(
    DEFINITION,
    run,
    frozenset({"validation", "tx-resource", *SHARED}),
    blocking=True,
    cached=True,
    many=True,
)
