"""``replaced`` and ``fast_init``: building the frozen value objects of the hot path.

``dataclasses.replace`` walks the class's fields in Python on every call (a few microseconds
for a ValidationResult); ``replaced`` calls a function generated once per class and set of
changed fields, which reads the other fields and calls the class with positional arguments.
The result is the same object ``dataclasses.replace`` builds: ``__init__`` (and
``__post_init__``) run as usual. Classes whose fields are not all plain positional init
fields (``init=False``, ``kw_only``, ``InitVar``, ``ClassVar``) go through
``dataclasses.replace`` itself.

A slotted dataclass whose ``__init__`` is the generated one and that has no
``__post_init__`` (a ValidationResult) is built without calling ``__init__``: each slot is set
through its descriptor, which is all that ``__init__`` does (a frozen one through
``object.__setattr__``, which looks each name up first). The builder is generated once per
class, unrolled, as ``dataclasses`` generates ``__init__``. ``fast_init`` gives such a class
an ``__init__`` built the same way (same signature and defaults), for every construction.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

T = TypeVar("T")

# per class: (field name -> position, the builder taking the field values in order), or None
# (use replace)
_Plan = tuple[dict[str, int], Callable[..., Any]] | None
_PLANS: dict[type, _Plan] = {}
# per class and changed fields (in the order given): what builds the copy
_REPLACERS: dict[tuple[type, tuple[str, ...]], Callable[..., Any]] = {}
MAX_REPLACERS = 1024
"""How many (class, changed fields) replacers are kept: the call sites name a few each; past
this, a new combination is generated again on each call (still right, only slower)."""


def _plan(cls: type) -> _Plan:
    if getattr(cls, "__dataclass_fields__", None) is None:
        raise TypeError("replaced() should be called on dataclass instances")
    fields = _plain_fields(cls)
    if fields is None or len(fields) < 2:
        return None
    names = [f.name for f in fields]
    return {name: i for i, name in enumerate(names)}, _builder(cls)


def _plain_fields(cls: type) -> tuple[dataclasses.Field[Any], ...] | None:
    """The fields of a dataclass when each is a plain positional ``__init__`` argument (no
    ``init=False``, ``kw_only``, ``InitVar`` or ``ClassVar``); else None."""
    fields = dataclasses.fields(cls)
    declared = cls.__dataclass_fields__  # type: ignore[attr-defined]
    if len(fields) != len(declared) or not all(f.init and not f.kw_only for f in fields):
        return None
    return fields


def _slot_setters(cls: type) -> list[Callable[[Any, Any], None]] | None:
    """Each field's slot setter, in field order, for a slotted dataclass whose ``__init__``
    only sets its slots (the generated one, or ``fast_init``'s) and that has no
    ``__post_init__``; else None."""
    init = getattr(cls.__init__, "__code__", None)  # type: ignore[misc]
    if (
        "__slots__" not in cls.__dict__
        or hasattr(cls, "__post_init__")
        or init is None
        or init.co_filename != "<string>"  # a hand-written __init__ does more
    ):
        return None
    slots = [inspect.getattr_static(cls, f.name, None) for f in dataclasses.fields(cls)]
    if not all(inspect.ismemberdescriptor(slot) for slot in slots):
        return None
    return [slot.__set__ for slot in slots]


def _builder(cls: type) -> Callable[..., Any]:
    """What builds an instance of ``cls`` from its field values in order: ``cls`` itself,
    or for a class with slot setters (``_slot_setters``) a function setting each slot
    through its descriptor (see the module docstring)."""
    setters = _slot_setters(cls)
    if setters is None:
        return cls
    params = ", ".join(f"v{i}" for i in range(len(setters)))
    body = "".join(f"    _set{i}(obj, v{i})\n" for i in range(len(setters)))
    source = f"def build({params}):\n    obj = _new(_cls)\n{body}    return obj\n"
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    namespace.update((f"_set{i}", setter) for i, setter in enumerate(setters))
    exec(source, namespace)  # the source holds only names made here
    return cast(Callable[..., Any], namespace["build"])


def replaced(obj: T, /, **changes: Any) -> T:
    """A copy of the dataclass instance ``obj`` with ``changes`` (field -> value), exactly
    as ``dataclasses.replace(obj, **changes)`` gives it, only faster."""
    key = (type(obj), tuple(changes))
    replacer = _REPLACERS.get(key)
    if replacer is None:
        replacer = _replacer(*key)
        if len(_REPLACERS) < MAX_REPLACERS:
            _REPLACERS[key] = replacer
    return cast(T, replacer(obj, *changes.values()))


def _replacer(cls: type, changed: tuple[str, ...]) -> Callable[..., Any]:
    """What ``replaced`` calls for an instance of ``cls`` and new values of the ``changed``
    fields (in that order): a function, generated once, that reads the other fields and
    builds the copy (``_plan``); ``dataclasses.replace`` for a class without a plan or a
    name that is not a field (it says why)."""
    try:
        plan = _PLANS[cls]
    except KeyError:
        plan = _PLANS[cls] = _plan(cls)
    if plan is None or not all(name in plan[0] for name in changed):

        def replace(obj: Any, *values: Any) -> Any:
            return dataclasses.replace(obj, **dict(zip(changed, values, strict=True)))

        return replace
    positions, build = plan
    new = {name: f"c{i}" for i, name in enumerate(changed)}
    args = ", ".join(new.get(name, f"obj.{name}") for name in positions)
    params = ", ".join(["obj", *new.values()])
    namespace: dict[str, Any] = {"_build": build}
    exec(f"def replace({params}):\n    return _build({args})\n", namespace)  # names made here
    return cast(Callable[..., Any], namespace["replace"])


C = TypeVar("C", bound=type)


def fast_init(cls: C) -> C:
    """Give a frozen, slotted dataclass an ``__init__`` that sets each slot through its
    descriptor: the same signature, defaults and instance as the generated one, without its
    ``object.__setattr__`` per field (half the time for a ValidationResult). Put it above
    ``@dataclass``. A class it cannot do exactly (a ``__post_init__``, a hand-written
    ``__init__``, fields with a default factory, keyword-only or not in ``__init__``) is
    returned unchanged; a class that is no dataclass raises TypeError.

    >>> from dataclasses import dataclass
    >>> @fast_init
    ... @dataclass(frozen=True, slots=True)
    ... class Pair:
    ...     left: int
    ...     right: int = 0
    >>> Pair(1), Pair(1, right=2) == Pair(1, 2)
    (Pair(left=1, right=0), True)
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError("fast_init() should decorate a dataclass (put it above @dataclass)")
    setters = _slot_setters(cls)
    fields = _plain_fields(cls)
    if (
        setters is None
        or fields is None
        or not cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        or any(f.default_factory is not dataclasses.MISSING for f in fields)
        or any(f.name == "self" or f.name.startswith(("_set", "_default")) for f in fields)
    ):
        return cls
    namespace: dict[str, Any] = {}
    params, body = [], []
    for i, (field, setter) in enumerate(zip(fields, setters, strict=True)):
        if field.default is dataclasses.MISSING:
            params.append(field.name)
        else:
            namespace[f"_default{i}"] = field.default
            params.append(f"{field.name}=_default{i}")
        namespace[f"_set{i}"] = setter
        body.append(f"    _set{i}(self, {field.name})\n")
    source = f"def __init__(self, {', '.join(params)}):\n{''.join(body)}"
    exec(source, namespace)  # the source holds only the field names and names made here
    init = namespace["__init__"]
    generated = cls.__init__
    init.__qualname__ = generated.__qualname__
    init.__annotations__ = generated.__annotations__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
