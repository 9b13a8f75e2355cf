"""The one Parameters codec: request inputs in, output values out, driven by the definition.

Inputs come from a query string (GET) or a Parameters body (POST). Either way the result is
a dict ``name -> value`` (a list for parameters that repeat), with values typed by the
definition: booleans and integers parsed strictly, Codings and resources as dicts. Every
problem raises a WorkbenchError naming the parameter, which the server turns into an
OperationOutcome.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from typing import Any, NamedTuple
from urllib.parse import unquote

from workbench import structure
from workbench.errors import InvalidRequestError, NotSupportedError, RequiredError, WorkbenchError
from workbench.operations.definitions import OperationDef, ParamDef
from workbench.registry import TERMINOLOGY_TYPES
from workbench.terminology.lookup import TypedValue

GENERAL_PARAMETERS = frozenset({"_format", "_pretty"})
#: Where the names of the unknown inputs a lenient read ignored reach an operation (not a
#: FHIR parameter name): ``Operation.run`` names them in an information issue.
IGNORED = "\x00ignored"
_INTEGER = re.compile(r"[+-]?[0-9]+")
# FHIR integers are 32-bit signed (R4 datatypes: integer, positiveInt, unsignedInt)
INTEGER_RANGE = (-(2**31), 2**31 - 1)
_INTEGER_TYPES = {"integer", "positiveInt", "unsignedInt"}
# the simple types whose query value is parsed (any other is taken as it comes)
_PARSED_TYPES = frozenset({"boolean", *_INTEGER_TYPES})
# Alternative value[x] names accepted for a declared type, as the reference servers accept
# them (rule 3: a code may come as a string; URIs as canonical, url or string; a string as a
# code). Anything else that cannot be read as the declared type stays a 400.
_ALSO_ACCEPTED = {
    "code": ("valueString",),
    "string": ("valueCode",),
    "uri": ("valueCanonical", "valueUrl", "valueString"),
    "canonical": ("valueUri", "valueUrl", "valueString"),
}


def query_items(raw: bytes | str) -> list[tuple[str, str]]:
    """The name/value pairs of a query string, as ``parse_qsl(keep_blank_values=True)``
    gives them (``+`` is a space, %-escapes are UTF-8), decoding only what needs it."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    pairs: list[tuple[str, str]] = []
    if not text:
        return pairs
    for piece in text.split("&"):
        if not piece:
            continue
        name, _, value = piece.partition("=")
        if "%" in piece or "+" in piece:
            name, value = _unquoted(name), _unquoted(value)
        pairs.append((name, value))
    return pairs


@lru_cache(maxsize=4096)
def _unquoted(text: str) -> str:
    """One query component decoded (names and system or value set URLs recur, so the
    decoding is remembered)."""
    return unquote(text.replace("+", " "), errors="replace")


@cache
def value_key(type_name: str) -> str:
    """Return the ``value[x]`` element name for a type: ``code`` -> ``valueCode``."""
    return "value" + type_name[:1].upper() + type_name[1:]


def _parse_scalar(param: ParamDef, text: str) -> Any:
    kind = param.type or "string"
    if kind == "boolean":
        if text not in ("true", "false"):
            raise InvalidRequestError(
                f"Parameter '{param.name}' must be true or false, not '{text}'"
            )
        return text == "true"
    if kind in _INTEGER_TYPES:
        if not _INTEGER.fullmatch(text):
            raise InvalidRequestError(f"Parameter '{param.name}' must be an integer, not {text!r}")
        if len(text.lstrip("+-").lstrip("0")) > 10:
            raise _out_of_range(param, text)
        return _check_integer(param, int(text))
    return text


def _out_of_range(param: ParamDef, shown: object) -> InvalidRequestError:
    text = str(shown)
    text = text if len(text) <= 24 else text[:20] + "…"
    return InvalidRequestError(
        f"Parameter '{param.name}' must be a 32-bit integer ({INTEGER_RANGE[0]} to "
        f"{INTEGER_RANGE[1]}), not {text}"
    )


def _check_integer(param: ParamDef, number: int) -> int:
    if not INTEGER_RANGE[0] <= number <= INTEGER_RANGE[1]:
        raise _out_of_range(param, number)
    if param.type == "positiveInt" and number < 1:
        raise InvalidRequestError(f"Parameter '{param.name}' must be 1 or more, not {number}")
    if param.type == "unsignedInt" and number < 0:
        raise InvalidRequestError(f"Parameter '{param.name}' must be 0 or more, not {number}")
    return number


def _collect(op: OperationDef, pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    inputs: dict[str, Any] = {}
    duplicate: str | None = None
    reading = _reading(op)
    repeating = reading.repeating
    for name, value in pairs:
        if name in repeating:
            inputs.setdefault(name, []).append(value)
        elif name in inputs:
            duplicate = duplicate or name
        else:
            inputs[name] = value
    _complete(op, reading, inputs, duplicate)
    return inputs


def _complete(
    op: OperationDef, reading: _Reading, inputs: Mapping[str, Any], duplicate: str | None
) -> None:
    """Raise for the first input given twice that may appear once, then for the first
    required input missing."""
    if duplicate is not None:
        param = op.inputs[duplicate]
        raise InvalidRequestError(
            f"Parameter '{duplicate}' may appear only once (its cardinality is "
            f"{param.min}..{param.max})"
        )
    for name in reading.required:
        if name not in inputs:
            raise RequiredError(f"Parameter '{name}' is required")


class _Input(NamedTuple):
    """An input's definition, whether its value is a string taken as it comes (a simple
    type other than boolean and the integers), the value[x] keys it may be sent as, and
    the resource type of a resource input (else None)."""

    param: ParamDef
    as_is: bool
    accepted: tuple[str, ...]
    resource: str | None


class _Reading(NamedTuple):
    """How an operation's inputs are read, worked out once per definition: the inputs
    that repeat, the required ones (in definition order), and each input by name."""

    repeating: frozenset[str]
    required: tuple[str, ...]
    query: dict[str, _Input]


# per operation definition (by identity: the definitions are module constants)
_READINGS: dict[int, tuple[OperationDef, _Reading]] = {}


def _reading(op: OperationDef) -> _Reading:
    found = _READINGS.get(id(op))
    if found is None or found[0] is not op:
        reading = _Reading(
            frozenset(p.name for p in op.inputs.values() if p.repeats),
            tuple(p.name for p in op.inputs.values() if p.min > 0),
            {
                p.name: _Input(
                    p,
                    p.is_simple and p.type not in _PARSED_TYPES,
                    _accepted(p.type),
                    p.type if p.is_resource else None,
                )
                for p in op.inputs.values()
            },
        )
        found = _READINGS[id(op)] = (op, reading)
    return found[1]


def _unknown(op: OperationDef, name: str) -> InvalidRequestError:
    known = ", ".join(op.inputs)
    return InvalidRequestError(
        f"Unknown parameter '{name}' for ${op.code} (known parameters: {known})"
    )


def parse_query(
    op: OperationDef, items: Iterable[tuple[str, str]], *, strict: bool = True
) -> dict[str, Any]:
    """Parse GET query parameters (rule 2: simple types only). An unknown parameter is
    refused when ``strict``, else ignored and named under ``IGNORED`` (as FHIR search
    treats unknown parameters unless ``Prefer: handling=strict``)."""
    reading = _reading(op)
    table, repeating = reading.query, reading.repeating
    inputs: dict[str, Any] = {}
    duplicate: str | None = None
    ignored: list[str] = []
    for name, text in items:
        if name in GENERAL_PARAMETERS:
            continue
        found = table.get(name)
        if found is None:
            if strict:
                raise _unknown(op, name)
            ignored.append(name)
            continue
        if found.as_is:  # (a simple type: a well-formed FHIR primitive, never empty)
            value: Any = well_formed(found.param, text)
        elif found.param.is_simple:
            value = _parse_scalar(found.param, text)
        else:
            raise NotSupportedError(
                f"Parameter '{name}' has the complex type {found.param.type or 'with parts'}, "
                "which cannot be sent in a GET query; use POST with a Parameters body"
            )
        if name in repeating:
            inputs.setdefault(name, []).append(value)
        elif name in inputs:
            duplicate = duplicate or name
        else:
            inputs[name] = value
    _complete(op, reading, inputs, duplicate)
    return _with_ignored(inputs, ignored)


def _with_ignored(inputs: dict[str, Any], ignored: list[str]) -> dict[str, Any]:
    if ignored:
        inputs[IGNORED] = tuple(dict.fromkeys(ignored))
    return inputs


def parse_parameters(op: OperationDef, body: Any, *, strict: bool = True) -> dict[str, Any]:
    """Parse a POSTed body: a Parameters resource, or the operation's single resource input."""
    if not isinstance(body, dict | Mapping):
        raise InvalidRequestError(
            f"The body of ${op.code} must be a JSON object (a Parameters resource), not "
            f"{type(body).__name__}"
        )
    rtype = body.get("resourceType")
    single = op.resource_input
    if rtype != "Parameters":
        if single is not None and rtype in (single.type, "Resource"):
            if rtype in TERMINOLOGY_TYPES:
                structure.check_resource(body, required=False, path=str(rtype))
            return _collect(op, [(single.name, dict(body))])
        expected = "a Parameters resource"
        if single is not None:
            expected += f" or a {single.type}"
        raise InvalidRequestError(f"The body of ${op.code} must be {expected}, not {rtype!r}")
    if len(body) - ("parameter" in body) > 1:  # (id, meta, ...: not on the common path)
        structure.check_parameters(body)
    entries = body.get("parameter", [])
    if not isinstance(entries, list):
        raise InvalidRequestError("Parameters.parameter must be a list")
    pairs: list[tuple[str, Any]] = []
    ignored: list[str] = []
    table, given = _reading(op).query, op.as_given
    for i, entry in enumerate(entries):
        # (dict first: a JSON object is one, and the test is then cheaper than Mapping's)
        if not isinstance(entry, dict | Mapping) or not isinstance(entry.get("name"), str):
            raise InvalidRequestError(f"Parameters.parameter[{i}] needs a name")
        name = entry["name"]
        if name in given:  # the operation reads each such entry itself, in its place
            pairs.append((name, entry))
            continue
        found = table.get(name)
        if found is None or len(entry) > 2 or "part" in entry:
            # FHIR JSON typing of what the definition does not type (issue 38.3)
            structure.check_entry(entry, f"Parameters.parameter[{i}]", typed=found is not None)
        if name in GENERAL_PARAMETERS:
            continue
        if found is None:
            if strict:
                raise _unknown(op, name)
            ignored.append(name)
            continue
        pairs.append((name, _read_entry(found, entry)))
    return _with_ignored(_collect(op, pairs), ignored)


def _read_entry(found: _Input, entry: Mapping[str, Any]) -> Any:
    """``_entry_value`` of a defined input, a plain string value taken without more ado, and
    so a resource of the declared type that is not one the structure check types (such as
    each ``validation`` Parameters of a batch)."""
    param, as_is, accepted, kind = found
    if len(entry) == 2:
        if as_is:
            for key, value in entry.items():
                if key in accepted and type(value) is str:
                    return well_formed(param, value)
        elif kind is not None:
            resource = entry.get("resource")
            if type(resource) is dict:
                rtype = resource.get("resourceType")
                if (kind == "Resource" or rtype == kind) and rtype not in TERMINOLOGY_TYPES:
                    return dict(resource)
    return _entry_value(param, entry)


@cache
def _accepted(type_name: str | None) -> tuple[str, ...]:
    """The ``value[x]`` names a parameter of this type may be sent as."""
    return (value_key(type_name or "string"), *_ALSO_ACCEPTED.get(type_name or "", ()))


def _entry_value(param: ParamDef, entry: Mapping[str, Any]) -> Any:
    if len(entry) == 2 and not param.parts and not param.is_resource:
        # the common case, {"name": …, "valueX": …}: no scan of the keys
        accepted = _accepted(param.type)
        for key, value in entry.items():
            if key in accepted:  # never "name": the other key
                return _check_value(param, value)
    values = {k: v for k, v in entry.items() if k.startswith("value")}
    _one_content(param.name, bool(values), "resource" in entry, "part" in entry)
    if param.is_resource:
        resource = entry.get("resource")
        if values or not isinstance(resource, Mapping):
            raise InvalidRequestError(
                f"Parameter '{param.name}' must carry a {param.type} in 'resource'"
            )
        if param.type != "Resource" and resource.get("resourceType") != param.type:
            raise InvalidRequestError(
                f"Parameter '{param.name}' must be a {param.type}, not "
                f"{resource.get('resourceType')!r}"
            )
        if resource.get("resourceType") in TERMINOLOGY_TYPES:
            structure.check_resource(resource, required=False, path=param.name)
        return dict(resource)
    if param.parts and not param.type:
        return _parts_value(param, entry)
    allowed = _accepted(param.type)
    if len(values) != 1 or next(iter(values)) not in allowed:
        given = ", ".join(values) or "no value"
        raise InvalidRequestError(
            f"Parameter '{param.name}' has type {param.type}, so it must be sent as "
            f"{' or '.join(allowed)}, not {given}"
        )
    value = next(iter(values.values()))
    return _check_value(param, value)


def _one_content(name: str, value: bool, resource: bool, part: bool) -> None:
    """FHIR's Parameters invariant inv-1: a parameter carries a value, a resource or parts,
    never two of them."""
    if value + resource + part > 1:
        given = [w for w, h in (("a value", value), ("a resource", resource), ("parts", part)) if h]
        raise InvalidRequestError(
            f"Parameter '{name}' has {' and '.join(given)}: a parameter carries only one of "
            "value[x], resource and part (Parameters invariant inv-1)"
        )


def _parts_value(param: ParamDef, entry: Mapping[str, Any]) -> dict[str, Any]:
    """A parameter made of parts: ``{part name: value}`` (a list for a repeating part),
    each part typed by the definition like a parameter; errors name ``param.part``."""
    parts = entry.get("part")
    if any(k.startswith("value") for k in entry) or "resource" in entry:
        raise InvalidRequestError(
            f"Parameter '{param.name}' is made of parts ({', '.join(p.name for p in param.parts)})"
            " and takes no value of its own"
        )
    if not isinstance(parts, list) or not parts:
        raise InvalidRequestError(
            f"Parameter '{param.name}' needs its parts: {', '.join(p.name for p in param.parts)}"
        )
    known = {p.name: p for p in param.parts}
    out: dict[str, Any] = {}
    for i, part in enumerate(parts):
        name = part.get("name") if isinstance(part, Mapping) else None
        if not isinstance(name, str):
            raise InvalidRequestError(f"Parameter '{param.name}': part[{i}] needs a name")
        part_def = known.get(name)
        if part_def is None:
            raise InvalidRequestError(
                f"Parameter '{param.name}' has no part '{name}' (its parts: {', '.join(known)})"
            )
        value = _entry_value(
            ParamDef(
                f"{param.name}.{name}",
                part_def.use,
                part_def.min,
                part_def.max,
                part_def.type,
                part_def.parts,
            ),
            part,
        )
        if part_def.repeats:
            out.setdefault(name, []).append(value)
        elif name in out:
            raise InvalidRequestError(f"Part '{param.name}.{name}' may appear only once")
        else:
            out[name] = value
    for part_def in param.parts:
        if part_def.min > 0 and part_def.name not in out:
            raise RequiredError(f"Part '{param.name}.{part_def.name}' is required")
    return out


#: The types a query takes as sent (any non-empty string), as a Parameters body's plain
#: values are: a code that breaks FHIR's pattern (``"male "``, a SNOMED CT expression) is
#: a validation result (``result=false``, its whitespace shown), not a refused request; and
#: an implicit SNOMED CT value set's url carries its ECL (``...?fhir_vs=ecl/<< 404684003``),
#: whose spaces arrive decoded, which the R4 uri pattern (``\S*``) would refuse.
AS_SENT = frozenset({"uri", "url", "canonical", "code"})


def well_formed(param: ParamDef, text: str) -> str:
    """``text`` as the value of the simple input ``param``, in a query or a body alike: a
    well-formed FHIR primitive of its type, never empty (the types of ``AS_SENT`` any
    non-empty string); else StructureError (400 ``structure``)."""
    kind = "string" if param.type in AS_SENT else param.type or "string"
    structure.check_text(kind, text, f"Parameter '{param.name}'")
    return text


def _check_value(param: ParamDef, value: Any) -> Any:
    kind = param.type or "string"
    if kind == "boolean":
        if not isinstance(value, bool):
            raise InvalidRequestError(f"Parameter '{param.name}' must be a JSON boolean")
        return value
    if kind in _INTEGER_TYPES:
        if structure.integral(value):
            value = int(value)  # (1.0 is the JSON number 1, as JSON Schema's integer has it)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidRequestError(f"Parameter '{param.name}' must be a JSON integer")
        return _check_integer(param, value)
    if param.is_simple:
        if not isinstance(value, str):
            raise InvalidRequestError(f"Parameter '{param.name}' must be a JSON string")
        return well_formed(param, value)
    if not isinstance(value, Mapping):
        raise InvalidRequestError(f"Parameter '{param.name}' must be a {kind} (a JSON object)")
    structure.check_value(kind, value, param.name)
    return dict(value)


class _Step(NamedTuple):
    """How one output is written: its place in the definition and its definition, the
    value[x] key when a plain value of its declared primitive type needs no further
    decision, and whether it is one resource (written as it is)."""

    at: int
    param: ParamDef
    key: str | None
    one_resource: bool


class _Plan(NamedTuple):
    """An operation's outputs: whether the lone ``return`` resource is the body (rule 6),
    each output's step by name, and the required ones in definition order."""

    bare: bool
    steps: dict[str, _Step]
    required: tuple[str, ...]


# per operation definition (by identity: the definitions are module constants)
_PLANS: dict[int, tuple[OperationDef, _Plan]] = {}


def _plan(op: OperationDef) -> _Plan:
    found = _PLANS.get(id(op))
    if found is None or found[0] is not op:
        steps = {
            p.name: _Step(
                at,
                p,
                value_key(p.type) if p.is_simple and not p.parts else None,
                p.is_resource and not p.repeats and not p.parts,
            )
            for at, p in enumerate(op.outputs.values())
        }
        required = tuple(p.name for p in op.outputs.values() if p.min > 0)
        found = _PLANS[id(op)] = (op, _Plan(op.returns_resource, steps, required))
    return found[1]


_SCALARS = frozenset({str, bool, int, float})
_COMPOUND = frozenset({dict, list, TypedValue})  # (told apart without Mapping's slower test)


def build_output(op: OperationDef, outputs: Mapping[str, Any]) -> dict[str, Any]:
    """Build the response body from output values, by the definition.

    Rule 6: an operation with a single required ``return`` resource returns it bare.
    Otherwise a Parameters resource with one entry per value, in definition order; a value
    of a parameter with parts is a mapping (or a list of mappings) of part values.
    """
    bare, steps, required = _plan(op)
    if bare:
        return dict(outputs["return"])
    if not steps.keys() >= outputs.keys():
        unknown = set(outputs) - set(steps)
        raise WorkbenchError(f"${op.code} produced undeclared outputs {sorted(unknown)}")
    for name in required:
        if outputs.get(name) is None:
            raise WorkbenchError(f"${op.code} did not produce its required '{name}'")
    return {"resourceType": "Parameters", "parameter": _entries(steps, outputs)}


def _entries(steps: dict[str, _Step], outputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Parameters entries of the output values, in definition order."""
    entries: list[dict[str, Any]] = []
    last = -1
    for name, value in outputs.items():
        at, param, key, one_resource = steps[name]
        if at < last:  # not in definition order (operations give them in it): sort them
            ordered = sorted(outputs.items(), key=lambda item: steps[item[0]].at)
            return _entries(steps, dict(ordered))
        last = at
        if value is None:
            continue
        kind = type(value)
        if key is not None and (
            kind in _SCALARS
            or (kind not in _COMPOUND and not isinstance(value, Mapping | TypedValue | list))
        ):
            entries.append({"name": name, key: value})
        elif one_resource:  # as _output_entry writes it
            entries.append({"name": name, "resource": value})
        else:
            values = value if param.repeats and isinstance(value, list) else [value]
            entries += [_output_entry(param, v) for v in values]
    return entries


_PY_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "decimal"),
    (str, "string"),
)


# per output parameter with parts (by identity: the definitions are module constants)
_PARTS: dict[int, tuple[ParamDef, dict[str, ParamDef]]] = {}


def _parts_by_name(param: ParamDef) -> dict[str, ParamDef]:
    found = _PARTS.get(id(param))
    if found is None or found[0] is not param:
        found = _PARTS[id(param)] = (param, {p.name: p for p in param.parts})
    return found[1]


@cache
def _undeclared_part(name: str) -> ParamDef:
    """An output part the definition does not declare (``code-display``, as tx.fhir.org
    gives it): written by the type of its value."""
    return ParamDef(name, "out", 0, 1, None)


def _output_entry(param: ParamDef, value: Any) -> dict[str, Any]:
    if param.parts and not param.type and (type(value) is dict or isinstance(value, Mapping)):
        parts_by_name = _parts_by_name(param)
        part_entries = []
        for name, part_value in value.items():
            if part_value is None:
                continue
            part = parts_by_name.get(name) or _undeclared_part(name)
            if isinstance(part_value, list):
                part_entries += [_output_entry(part, v) for v in part_value if v is not None]
            else:
                part_entries.append(_output_entry(part, part_value))
        return {"name": param.name, "part": part_entries}
    if param.is_resource:
        return {"name": param.name, "resource": value}
    if isinstance(value, TypedValue):
        return {"name": param.name, value.key: value.value}
    kind = param.type
    if type(value) in _SCALARS:  # (its type decides when the definition's does not)
        if kind is None or kind == "Element" or kind[:1].isupper():
            kind = next(t for py, t in _PY_TYPES if isinstance(value, py))
        return {"name": param.name, value_key(kind): value}
    if kind is None or kind == "Element" or (kind[:1].isupper() and not isinstance(value, Mapping)):
        kind = next((t for py, t in _PY_TYPES if isinstance(value, py)), "string")
    if isinstance(value, Mapping) and (kind is None or kind[:1].islower() or kind == "Element"):
        kind = "Coding"
    return {"name": param.name, value_key(kind): value}
