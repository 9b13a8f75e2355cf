"""``$batch-validate-code`` (type level, POST), on ValueSet and on CodeSystem: many
``$validate-code`` calls in one, each entry answered by that operation's own code.

The target inputs at the top (ValueSet: ``url``, ``valueSet``, ``valueSetVersion``;
CodeSystem: ``url``, ``codeSystem``, ``version``) are those of every entry that names no
target itself, and the top ``tx-resource``s are seen by every entry (read once for the whole
batch). Each ``validation`` is the Parameters of one ``$validate-code`` call, read by that
operation's definition as a single call is read (an unknown input ignored and named in its
``issues``); the answer has one ``validation`` per entry, in order, with the outputs
``$validate-code`` gives (echoing ``code``, ``system`` and ``version``), as the HL7
validator reads it. An entry that names no code, or is not a Parameters, answers an
OperationOutcome in its place (nothing to echo: HL7's test suite, ``tests/batch``); another
entry that cannot be validated (an unknown value set, a bad element) answers ``result=false``
with the ``message`` and ``issues`` of the error and the code and system it named. The batch
goes on either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from workbench import jsonio, structure
from workbench.errors import InvalidRequestError, RequiredError, TooCostlyError, WorkbenchError
from workbench.operations.base import Inputs, NothingGivenError, Operation
from workbench.operations.codec import build_output, parse_parameters
from workbench.operations.definitions import OperationDef, load_definition
from workbench.resources import Resource
from workbench.terminology.service import EngineService

if TYPE_CHECKING:
    from workbench.service import TerminologyService

#: The most entries one batch may have (more: 422 too-costly).
MAX_ENTRIES = 10_000
#: What makes an entry's answer more than a function of its JSON within the batch: a
#: resource it brings (kept in a client cache, where later entries see it) and the
#: diagnostics (which time the call). Entries with neither are answered once per batch.
_NOT_REPEATED = (b'"resource"', b'"diagnostics"')


class NotParametersError(InvalidRequestError):
    """A ``validation`` entry holds something else than a Parameters resource."""


@dataclass(frozen=True)
class Batch:
    """A ``$batch-validate-code``: the ``$validate-code`` operation that answers each entry
    and the target inputs an entry naming none takes from the top (``shared``)."""

    single: Operation
    shared: tuple[str, ...]

    @property
    def definition(self) -> OperationDef:
        """The single operation's definition (how an entry is read and answered)."""
        return self.single.definition


def batch_operation(file_name: str, single: Operation, shared: tuple[str, ...]) -> Operation:
    """The ``$batch-validate-code`` Operation of ``file_name``'s definition, each entry
    answered by ``single``. (Each validation is read in its place, ``as_given``: one that
    is not a Parameters answers an error.)"""
    batch = Batch(single, shared)

    def run(
        svc: TerminologyService, inputs: Inputs, resource: Resource | None = None
    ) -> dict[str, Any]:
        """Validate every entry; one answer (a Parameters or an OperationOutcome) per entry,
        in order."""
        entries = inputs.get("validation") or []
        check_size(len(entries))
        top = list(inputs.get("tx-resource") or ())
        if top:  # read once, seen by every entry
            svc = EngineService(svc.registry, svc.terminology.with_resources(top))
        given = {n: inputs[n] for n in shared if inputs.get(n) is not None}
        return {"validation": answers(svc, entries, given, batch)}

    definition = load_definition(file_name, as_given=("validation",))
    return Operation(
        definition,
        run,
        frozenset({"validation", "tx-resource", *shared}),
        blocking=True,
        cached=True,
        many=True,
    )


def answers(
    svc: TerminologyService, entries: list[Any], shared: Mapping[str, Any], batch: Batch
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
            found = orjson.Fragment(jsonio.dumps(answer(svc, entry, shared, batch)))
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


def answer(
    svc: TerminologyService, entry: Any, shared: Mapping[str, Any], batch: Batch
) -> dict[str, Any]:
    """The answer to one ``validation`` entry (as sent: see ``as_given``): the Parameters
    the single ``$validate-code`` gives for it (read as a single call is: an unknown input
    ignored and named), an OperationOutcome when it names no code or is not a Parameters,
    the error as outputs (``failed``) when it otherwise cannot be validated."""
    given: dict[str, Any] = {}
    resource = entry.get("resource") if isinstance(entry, Mapping) else None
    try:
        given = parse_parameters(batch.definition, validation(entry), strict=False)
        if not any(given.get(n) is not None for n in batch.shared[:2]):
            given = {**shared, **given}
        return build_output(batch.definition, batch.single.run(svc, given))
    except NotParametersError as exc:
        return exc.to_outcome()
    except NothingGivenError as exc:  # (in a batch: the entry is an invalid element)
        return InvalidRequestError(exc.text, msg_id=exc.msg_id).to_outcome()
    except WorkbenchError as exc:
        return build_output(batch.definition, failed(exc, given or _raw_inputs(resource)))


def validation(entry: Any) -> Mapping[str, Any]:
    """The Parameters of a ``validation`` entry; NotParametersError naming what it holds
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
    raise NotParametersError(f"A validation must be a Parameters resource, not {held}")


def _raw_inputs(entry: Any) -> dict[str, Any]:
    """``code``, ``system`` and ``coding`` as an entry that could not be read sent them."""
    found: dict[str, Any] = {}
    parts = entry.get("parameter") if isinstance(entry, Mapping) else None
    for part in parts if isinstance(parts, list) else ():
        name = part.get("name") if isinstance(part, Mapping) else None
        if name in ("code", "system", "version", "coding"):
            value = next((v for k, v in part.items() if k.startswith("value")), None)
            found.setdefault(name, value)
    return found


def failed(exc: WorkbenchError, given: Mapping[str, Any]) -> dict[str, Any]:
    """The outputs of an entry that could not be validated: result=false, the error's
    message and OperationOutcome, and the code, system and version it named."""
    coding = given.get("coding") if isinstance(given.get("coding"), Mapping) else {}
    assert isinstance(coding, Mapping)
    code = given.get("code") or coding.get("code")
    system = given.get("system") or coding.get("system")
    version = coding.get("version") or given.get("version")
    return {
        "result": False,
        "message": exc.text,
        "code": code if isinstance(code, str) else None,
        "system": system if isinstance(system, str) else None,
        "version": version if isinstance(version, str) else None,
        "issues": exc.to_outcome(),
    }
