"""``ValueSet/$batch-validate-code`` (type level, POST): many ``$validate-code`` calls in one.

The value set inputs at the top (``url``, ``valueSet``, ``valueSetVersion``) are those of
every entry that names no value set itself, and the top ``tx-resource``s are seen by every
entry (read once for the whole batch). Each ``validation`` is the Parameters of one
``$validate-code`` call, read by that operation's definition; the answer has one
``validation`` per entry, in order, with the outputs ``$validate-code`` gives. An entry
that cannot be validated (a value, parts or another resource where its Parameters belongs,
an unknown input, no code, an unknown value set) answers, in its place, what tx.fhir.org
answers for it: ``result=false``, the ``message`` and the ``issues`` OperationOutcome of
the error; the batch goes on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from workbench import jsonio, structure
from workbench.errors import RequiredError, TooCostlyError, WorkbenchError
from workbench.operations import valueset_validate_code as single
from workbench.operations.base import Inputs, Operation
from workbench.operations.codec import build_output, parse_parameters
from workbench.operations.definitions import load_definition
from workbench.resources import Resource
from workbench.terminology.service import EngineService

if TYPE_CHECKING:
    from workbench.service import TerminologyService

# each validation is read here, in its place: one that is not a Parameters answers an error
DEFINITION = load_definition(
    "OperationDefinition-ValueSet-batch-validate-code.json", as_given=("validation",)
)
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
        key = _key(entry)
        found = written.get(key) if key is not None else None
        if found is None:
            found = orjson.Fragment(jsonio.dumps(answer(svc, entry, shared)))
            if key is not None:
                written[key] = found
        out.append(found)
    return out


def _key(entry: Any) -> bytes | None:
    """What an entry's answer depends on, as JSON (its Parameters, or the whole entry when
    it holds something else); None when it is to be answered on its own (see
    ``_NOT_REPEATED``, or not JSON-shaped)."""
    plain = type(entry) is dict and len(entry) == 2 and "resource" in entry
    try:  # (marked: a resource's JSON is never taken for a whole entry's)
        key = b"r" + orjson.dumps(entry["resource"]) if plain else b"e" + orjson.dumps(entry)
    except TypeError:
        return None
    return None if any(mark in key for mark in _NOT_REPEATED) else key


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
    """The Parameters answering one ``validation`` entry (as sent: see ``as_given``), its
    error answer when it cannot be validated."""
    given: dict[str, Any] = {}
    resource = entry.get("resource") if isinstance(entry, Mapping) else None
    try:
        given = parse_parameters(single.DEFINITION, validation(entry))
        if given.get("url") is None and given.get("valueSet") is None:
            given = {**shared, **given}
        return build_output(single.DEFINITION, single.run(svc, given))
    except WorkbenchError as exc:
        return build_output(single.DEFINITION, failed(exc, given or _raw_inputs(resource)))


def validation(entry: Any) -> Mapping[str, Any]:
    """The Parameters of a ``validation`` entry; RequiredError naming what it holds
    instead (another resource, a value, parts), StructureError for a bad element of its
    own (an ``extension``, say)."""
    content = [k for k in entry if k.startswith(("value", "resource", "part"))]
    resource = entry.get("resource")
    if content == ["resource"] and (type(resource) is dict or isinstance(resource, Mapping)):
        if resource.get("resourceType") == "Parameters":
            if len(entry) > 2:  # (its id, extension: FHIR JSON as the codec types them)
                structure.check_entry(entry, "validation", typed=True)
            return resource
        held = f"a {resource.get('resourceType')!r} resource"
    elif content == ["part"]:
        held = "parts"
    elif len(content) == 1 and content[0].startswith("value"):
        held = f"a value ({content[0]})"
    else:
        held = " and ".join(content) or "nothing"
    raise RequiredError(f"A validation must be a Parameters resource, not {held}")


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
