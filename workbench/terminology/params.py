"""Request fields that know their operation input: how a request object is read from the
inputs of an operation (the Parameters codec's ``name -> value``) and checked when built.

A field declared ``param("lenient-display-validation", False)`` is read from that input; a
field declared ``bundle(CheckOptions())`` holds an option bundle (a frozen dataclass) whose
own ``param`` fields are read the same way. Declaring the field is all a new input needs to
be parsed, supported by its operation and passed down to the engine.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Union, get_args, get_origin, get_type_hints

from workbench.errors import InvalidRequestError

#: Turns an input's value (as the codec gives it) into the field's value; the second
#: argument is the input's name, for error messages.
Parse = Callable[[Any, str], Any]

_PARAM = "workbench.param"
_PARSE = "workbench.parse"
_BUNDLE = "workbench.bundle"
# per request class (a handful, all defined at import), what its fields declare
_NAMES: dict[type, frozenset[str]] = {}
_CHECKS: dict[type, tuple[tuple[str, Callable[[Any], bool], str], ...]] = {}


def param(
    name: str,
    default: Any = dataclasses.MISSING,
    *,
    factory: Callable[[], Any] | None = None,
    parse: Parse | None = None,
) -> Any:
    """A dataclass field read from the operation input ``name`` (a list, for an input that
    repeats, becomes a tuple unless ``parse`` reads it otherwise)."""
    metadata = {_PARAM: name, _PARSE: parse}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def bundle(default: Any) -> Any:
    """A dataclass field holding an option bundle whose own fields are ``param`` fields
    (``default`` is the bundle when none of its inputs is given)."""
    return dataclasses.field(default=default, metadata={_BUNDLE: True})


def parameter_names(cls: type) -> frozenset[str]:
    """Every operation input a request class reads, those of its bundles included."""
    found = _NAMES.get(cls)
    if found is None:
        names: set[str] = set()
        for f in dataclasses.fields(cls):
            if f.metadata.get(_BUNDLE):
                names |= parameter_names(_bundle_type(f))
            elif f.metadata.get(_PARAM) is not None:
                names.add(f.metadata[_PARAM])
        found = _NAMES[cls] = frozenset(names)
    return found


def _bundle_type(f: dataclasses.Field[Any]) -> type:
    return type(f.default)


def read_inputs(cls: type, inputs: Mapping[str, Any], *, own: Iterable[str] = ()) -> dict[str, Any]:
    """The field values of ``cls`` that ``inputs`` give, by field name (a bundle is built
    only when one of its inputs is given).

    Raises InvalidRequestError for an input that neither ``cls`` reads nor ``own`` names
    (what the operation itself consumes: the target value set, ``inferSystem``, …).
    """
    unknown = set(inputs) - parameter_names(cls) - set(own)
    if unknown:
        known = ", ".join(sorted(parameter_names(cls) | set(own)))
        raise InvalidRequestError(
            f"{cls.__name__} does not read the input(s) {', '.join(sorted(unknown))} "
            f"(it reads: {known})"
        )
    return _read(cls, inputs)


def _read(cls: type, inputs: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.metadata.get(_BUNDLE):
            kind = _bundle_type(f)
            inner = _read(kind, inputs)
            if inner:
                out[f.name] = kind(**inner)
            continue
        name = f.metadata.get(_PARAM)
        if name is None or name not in inputs:
            continue
        value, parse = inputs[name], f.metadata.get(_PARSE)
        if parse is not None:
            value = parse(value, name)
        elif isinstance(value, list):
            value = tuple(value)
        out[f.name] = value
    return out


def check_fields(obj: Any) -> None:
    """Raise InvalidRequestError naming the first field of a dataclass instance whose value
    does not have its declared type (``code`` an int, ``tx_resources`` a list, …)."""
    for name, accepts, shown in _checks(type(obj)):
        value = getattr(obj, name)
        if not accepts(value):
            raise InvalidRequestError(
                f"{type(obj).__name__}.{name} must be {shown}, not {type(value).__name__} "
                f"({value!r:.60})"
            )


def _checks(cls: type) -> tuple[tuple[str, Callable[[Any], bool], str], ...]:
    """Per field of ``cls``: its name, the test of its type, and the type as declared."""
    found = _CHECKS.get(cls)
    if found is None:
        hints = get_type_hints(cls)
        found = _CHECKS[cls] = tuple(
            (f.name, _accepts(hints[f.name]), str(f.type)) for f in dataclasses.fields(cls)
        )
    return found


def _accepts(hint: Any) -> Callable[[Any], bool]:
    """A test of whether a value has the type ``hint`` (the types request fields use:
    unions, ``None``, ``tuple[X, ...]`` and fixed tuples, generic aliases by their origin,
    classes; ``bool`` is not an ``int``)."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return lambda value: True
    if hint is None or hint is type(None):
        return lambda value: value is None
    if origin is Union or origin is types.UnionType:
        options = [_accepts(a) for a in args]
        return lambda value: any(ok(value) for ok in options)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            each = _accepts(args[0])
            return lambda value: isinstance(value, tuple) and all(each(v) for v in value)
        parts = [_accepts(a) for a in args]
        return lambda value: (
            isinstance(value, tuple)
            and len(value) == len(parts)
            and all(ok(v) for ok, v in zip(parts, value, strict=True))
        )
    if origin is not None:
        return lambda value: isinstance(value, origin)
    if hint is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    return lambda value: isinstance(value, hint)
