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
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter, is_not
from typing import Any, Union, get_args, get_origin, get_type_hints

from workbench.errors import InvalidRequestError

#: Turns an input's value (as the codec gives it) into the field's value; the second
#: argument is the input's name, for error messages.
Parse = Callable[[Any, str], Any]

_PARAM = "workbench.param"
_PARSE = "workbench.parse"
_BUNDLE = "workbench.bundle"


@dataclass(frozen=True)
class _Source:
    """Where one input goes: a field of the request, or of one of its bundles."""

    field: str
    bundle: str | None
    parse: Parse | None


@dataclass(frozen=True)
class _Check:
    """The type test of one field: ``isinstance`` of ``kinds``, then ``deep`` if any."""

    field: str
    default: Any
    kinds: tuple[type, ...]
    deep: Callable[[Any], bool] | None
    shown: str


# per request class (a handful, all defined at import): what its fields declare
_SOURCES: dict[type, dict[str, _Source]] = {}
_BUNDLES: dict[type, dict[str, type]] = {}
# per request class: each bundle field's default (the bundle when none of its inputs is given)
_BUNDLE_DEFAULTS: dict[type, dict[str, Any]] = {}
_Checks = tuple[tuple[_Check, ...], Callable[[Any], tuple[Any, ...]], tuple[Any, ...]]
_CHECKS: dict[type, _Checks] = {}


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


def _sources(cls: type) -> dict[str, _Source]:
    """Input name -> where it goes, for ``cls`` and its bundles."""
    found = _SOURCES.get(cls)
    if found is None:
        found, bundles, defaults = {}, {}, {}
        for f in dataclasses.fields(cls):
            if f.metadata.get(_BUNDLE):
                bundles[f.name] = kind = type(f.default)
                defaults[f.name] = f.default
                for name, inner in _sources(kind).items():
                    found[name] = _Source(inner.field, f.name, inner.parse)
            elif f.metadata.get(_PARAM) is not None:
                found[f.metadata[_PARAM]] = _Source(f.name, None, f.metadata[_PARSE])
        _BUNDLES[cls] = bundles
        _BUNDLE_DEFAULTS[cls] = defaults
        _SOURCES[cls] = found
    return found


def parameter_names(cls: type) -> frozenset[str]:
    """Every operation input a request class reads, those of its bundles included."""
    return frozenset(_sources(cls))


def read_inputs(cls: type, inputs: Mapping[str, Any], *, own: Iterable[str] = ()) -> dict[str, Any]:
    """The field values of ``cls`` that ``inputs`` give, by field name (a bundle is built
    only when one of its inputs is given, and is the default one when they all repeat its
    defaults).

    Raises InvalidRequestError for an input that neither ``cls`` reads nor ``own`` names
    (what the operation itself consumes: the target value set, ``inferSystem``, …).
    """
    sources = _sources(cls)
    out: dict[str, Any] = {}
    inner: dict[str, dict[str, Any]] = {}
    for name, value in inputs.items():
        source = sources.get(name)
        if source is None:
            if name in own:
                continue
            raise _unknown(cls, inputs, own)
        if source.parse is not None:
            value = source.parse(value, name)
        elif type(value) is list:
            value = tuple(value)
        target = out if source.bundle is None else inner.setdefault(source.bundle, {})
        target[source.field] = value
    bundles = _BUNDLES[cls]
    for name, values in inner.items():
        default = _BUNDLE_DEFAULTS[cls][name]
        if all(getattr(default, field) == value for field, value in values.items()):
            # inputs that only repeat the defaults (the HL7 validator sends its switches
            # false): the default bundle itself, which the engine knows by identity
            out[name] = default
        else:
            out[name] = bundles[name](**values)
    return out


def _unknown(cls: type, inputs: Mapping[str, Any], own: Iterable[str]) -> InvalidRequestError:
    known = parameter_names(cls) | set(own)
    unknown = ", ".join(sorted(set(inputs) - known))
    return InvalidRequestError(
        f"{cls.__name__} does not read the input(s) {unknown} (it reads: "
        f"{', '.join(sorted(known))})"
    )


def check_fields(obj: Any) -> None:
    """Raise InvalidRequestError naming the first field of a dataclass instance whose value
    does not have its declared type (``code`` an int, ``tx_resources`` a list, …); a field
    left at its default is not looked at."""
    checks, values, defaults = _checks(type(obj))
    given = values(obj)
    # the fields not at their default, picked out without a Python loop over every field
    for at in compress(range(len(checks)), map(is_not, given, defaults)):
        check, value = checks[at], given[at]
        if not isinstance(value, check.kinds) or (check.deep is not None and not check.deep(value)):
            raise InvalidRequestError(
                f"{type(obj).__name__}.{check.field} must be {check.shown}, not "
                f"{type(value).__name__} ({value!r:.60})"
            )


def fields_fit(cls: type, values: Mapping[str, Any]) -> bool:
    """Whether each of ``values`` (field name -> value) has its field's declared type or is
    the field's default: what ``check_fields`` finds of an instance whose other fields are
    at their defaults, without reading those."""
    by_name = _BY_NAME.get(cls)
    if by_name is None:
        by_name = _BY_NAME[cls] = {c.field: c for c in _checks(cls)[0]}
    for name, value in values.items():
        check = by_name[name]
        if value is not check.default and (
            not isinstance(value, check.kinds) or (check.deep is not None and not check.deep(value))
        ):
            return False
    return True


_BY_NAME: dict[type, dict[str, _Check]] = {}


def _checks(cls: type) -> _Checks:
    """The type test of each field of ``cls``, a getter of all their values at once, and
    their defaults."""
    found = _CHECKS.get(cls)
    if found is None:
        hints = get_type_hints(cls)
        checks = []
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            default = f.default if f.default is not dataclasses.MISSING else _NO_DEFAULT
            kinds = _kinds(hint)
            deep = None if _shallow(hint) else _accepts(hint)
            checks.append(_Check(f.name, default, kinds, deep, str(f.type)))
        names = [c.field for c in checks]
        getter = (
            attrgetter(*names)
            if len(names) > 1
            else (lambda obj: tuple(getattr(obj, n) for n in names))
        )
        found = _CHECKS[cls] = (tuple(checks), getter, tuple(c.default for c in checks))
    return found


_NO_DEFAULT = object()


def _kinds(hint: Any) -> tuple[type, ...]:
    """The classes a value of type ``hint`` is an instance of (the outer test)."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return (object,)
    if hint is None or hint is type(None):
        return (type(None),)
    if origin is Union or origin is types.UnionType:
        return tuple(k for a in args for k in _kinds(a))
    return (origin if origin is not None else hint,)


def _shallow(hint: Any) -> bool:
    """True when ``isinstance`` of ``_kinds(hint)`` is the whole test (no tuple items to
    look at, no ``int`` that a ``bool`` would pass)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Union or origin is types.UnionType:
        return all(_shallow(a) for a in args)
    return origin is not tuple and hint is not int


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
