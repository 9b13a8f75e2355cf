"""Request objects: one typed, frozen value per terminology call, built once at the edge.

The operations build them from the inputs the Parameters codec read (``from_inputs``: each
field names the input it comes from, see ``params``), the ``Workbench`` facade from its
keyword arguments; either way the engine receives the same object. A field's value is
checked against its declared type when the request is built (InvalidRequestError names
the field). The option bundles ``CheckOptions`` and ``VersionPolicy`` are fields of the
requests that take them, read from their own inputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from workbench.errors import RequiredError
from workbench.resources import Resource
from workbench.terminology.params import bundle, check_fields, fields_fit, param, read_inputs
from workbench.terminology.validate.coding import CheckOptions
from workbench.terminology.versions import NO_POLICY, VersionPolicy

#: Where the HTTP Accept-Language header reaches an operation (not a FHIR parameter name).
ACCEPT_LANGUAGE = "Accept-Language"

#: The switches of a plain validation (shared: CheckOptions is frozen).
PLAIN_CHECK = CheckOptions()

R = TypeVar("R", bound="Request")

Codings = tuple[Mapping[str, Any], ...]
#: A ``$translate`` dependency: (element uri, the codings of its concept).
Dependency = tuple[str, Codings]


class Request:
    """What every request has: its fields are checked when it is built, and it can be read
    from an operation's inputs."""

    def __post_init__(self) -> None:
        check_fields(self)

    @classmethod
    def from_inputs(
        cls: type[R], inputs: Mapping[str, Any], *, own: Iterable[str] = (), **given: Any
    ) -> R:
        """The request the operation ``inputs`` (``name -> value``) make, with ``given``
        field values (what the operation worked out itself, the target value set say)
        taking precedence. ``own`` names inputs the operation consumes itself; any other
        input this request does not read raises InvalidRequestError."""
        return cls.make(**{**read_inputs(cls, inputs, own=own), **given})

    @classmethod
    def make(cls: type[R], **values: Any) -> R:
        """``cls(**values)``, checked the same, built faster (the facade's keywords)."""
        layout = _layout(cls)
        if layout is None or not layout.fits(values):
            return cls(**values)
        # what ``cls(**values)`` builds, without the frozen ``__init__``'s one
        # ``object.__setattr__`` per field: the fields in their order, then the check
        fields = dict(layout.defaults)
        fields.update(values)
        built = object.__new__(cls)
        built.__dict__.update(fields)
        if not fields_fit(cls, values):  # the other fields are at their defaults
            check_fields(built)  # raises, naming the first field in order that does not fit
        return built


class _Layout(NamedTuple):
    """A request class's fields in order with their defaults (None for a required one,
    which ``values`` must give), and the required ones."""

    defaults: dict[str, Any]
    required: frozenset[str]

    def fits(self, values: Mapping[str, Any]) -> bool:
        """Whether ``values`` sets known fields only, every required one among them."""
        return values.keys() <= self.defaults.keys() and self.required <= values.keys()


_LAYOUTS: dict[type, _Layout | None] = {}


def _layout(cls: type) -> _Layout | None:
    """The layout of a frozen request dataclass built the plain way (fields with plain
    defaults, all set by ``__init__``, the instance's ``__dict__`` holding them and
    ``Request.__post_init__`` its only check), else None (built by calling the class)."""
    if cls in _LAYOUTS:
        return _LAYOUTS[cls]
    found: _Layout | None = None
    params = getattr(cls, "__dataclass_params__", None)
    fields = dataclasses.fields(cls) if params is not None else ()
    plain = (
        params is not None
        and params.frozen
        and "__slots__" not in cls.__dict__
        and cls.__post_init__ is Request.__post_init__  # type: ignore[attr-defined]
        and len(fields) == len(cls.__dataclass_fields__)  # type: ignore[attr-defined]
        and all(f.init and f.default_factory is dataclasses.MISSING for f in fields)
    )
    if plain:
        defaults = {f.name: None if f.default is dataclasses.MISSING else f.default for f in fields}
        required = frozenset(f.name for f in fields if f.default is dataclasses.MISSING)
        found = _Layout(defaults, required)
    _LAYOUTS[cls] = found
    return found


@dataclass(frozen=True)
class ValidateRequest(Request):
    """ValueSet ``$validate-code`` (``Workbench.validate_code``): a code+system, a Coding or
    a CodeableConcept against ``valueset`` (a canonical URL or a ValueSet)."""

    valueset: str | Mapping[str, Any]
    valueset_version: str | None = param("valueSetVersion", None)
    code: str | None = param("code", None)
    system: str | None = param("system", None)
    version: str | None = param("systemVersion", None)
    display: str | None = param("display", None)
    coding: Mapping[str, Any] | None = param("coding", None)
    codeable_concept: Mapping[str, Any] | None = param("codeableConcept", None)
    options: CheckOptions = bundle(PLAIN_CHECK)
    policy: VersionPolicy = bundle(NO_POLICY)
    display_language: str | None = param("displayLanguage", None)
    accept_language: str | None = param(ACCEPT_LANGUAGE, None)
    use_supplements: tuple[str, ...] = param("useSupplement", ())
    tx_resources: Codings = param("tx-resource", ())


@dataclass(frozen=True)
class CodeSystemValidateRequest(Request):
    """CodeSystem ``$validate-code`` (``Workbench.validate_in_codesystem``) for one code;
    abstract codes are valid unless ``abstract`` is False."""

    system: str = param("url")
    code: str | None = param("code", None)
    version: str | None = param("version", None)
    display: str | None = param("display", None)
    abstract: bool = param("abstract", True)
    display_language: str | None = param("displayLanguage", None)
    lenient_display: bool = param("lenient-display-validation", False)
    tx_resources: Codings = param("tx-resource", ())


@dataclass(frozen=True)
class ExpandRequest(Request):
    """ValueSet ``$expand`` (``Workbench.expand``) of ``valueset`` (a canonical URL or a
    ValueSet)."""

    valueset: str | Mapping[str, Any]
    version: str | None = param("valueSetVersion", None)
    filter: str | None = param("filter", None)
    offset: int = param("offset", 0)
    count: int | None = param("count", None)
    allow_maximum_size: bool = param("allowMaximumSizeExpansion", False)
    active_only: bool = param("activeOnly", False)
    include_designations: bool = param("includeDesignations", False)
    include_definition: bool = param("includeDefinition", False)
    properties: tuple[str, ...] = param("property", ())
    exclude_nested: bool | None = param("excludeNested", None)
    designations: tuple[str, ...] = param("designation", ())
    policy: VersionPolicy = bundle(NO_POLICY)
    display_language: str | None = param("displayLanguage", None)
    accept_language: str | None = param(ACCEPT_LANGUAGE, None)
    use_supplements: tuple[str, ...] = param("useSupplement", ())
    tx_resources: Codings = param("tx-resource", ())


@dataclass(frozen=True)
class LookupRequest(Request):
    """CodeSystem ``$lookup`` (``Workbench.lookup``); ``properties`` None (or holding
    ``*``, as tx.fhir.org reads ``property=*``) means all."""

    system: str = param("system")
    code: str = param("code")
    version: str | None = param("version", None)
    properties: tuple[str, ...] | None = param("property", None)
    display_language: str | None = param("displayLanguage", None)
    accept_language: str | None = param(ACCEPT_LANGUAGE, None)
    use_supplements: tuple[str, ...] = param("useSupplement", ())
    tx_resources: Codings = param("tx-resource", ())


@dataclass(frozen=True)
class SubsumesRequest(Request):
    """CodeSystem ``$subsumes`` (``Workbench.subsumes``): code A against code B."""

    system: str = param("system")
    code_a: str = param("codeA")
    code_b: str = param("codeB")
    version: str | None = param("version", None)
    tx_resources: Codings = param("tx-resource", ())


@dataclass(frozen=True)
class CompareRequest(Request):
    """ValueSet ``$compare`` (``Workbench.compare``): value set ``this`` against ``other``,
    each a canonical URL (``url`` or ``url|version``) or a ValueSet."""

    this: str | Mapping[str, Any]
    other: str | Mapping[str, Any]
    this_version: str | None = param("thisVersion", None)
    other_version: str | None = param("otherVersion", None)
    policy: VersionPolicy = bundle(NO_POLICY)
    tx_resources: Codings = param("tx-resource", ())


def parse_dependencies(given: Any, name: str = "dependency") -> tuple[Dependency, ...]:
    """The ``dependency`` inputs (``{"element": uri, "concept": CodeableConcept}`` each) as
    (element, codings): both parts are required for a dependency to mean something."""
    out = []
    for i, dep in enumerate(given or ()):
        element, concept = dep.get("element"), dep.get("concept")
        if element is None or concept is None:
            missing = "element" if element is None else "concept"
            raise RequiredError(
                f"Parameter '{name}' (#{i + 1}) needs both element and concept; "
                f"{missing} is missing",
                expression=[f"{name}[{i}].{missing}"],
            )
        codings = concept.get("coding", [])
        if not codings:
            raise RequiredError(
                f"Parameter '{name}' (#{i + 1}): concept has no coding",
                expression=[f"{name}[{i}].concept"],
            )
        out.append((str(element), tuple(codings)))
    return tuple(out)


@dataclass(frozen=True)
class TranslateRequest(Request):
    """ConceptMap ``$translate`` (``Workbench.translate``) of ``code`` in ``system``.

    ``maps`` replaces the loaded ConceptMaps (an inline ``conceptMap`` or the instance);
    None uses the loaded ones, with the implicit map ``url`` may name.
    """

    code: str | None = param("code", None)
    system: str | None = param("system", None)
    url: str | None = param("url", None)
    conceptmap_version: str | None = param("conceptMapVersion", None)
    source: str | None = param("source", None)
    target: str | None = param("target", None)
    target_system: str | None = param("targetsystem", None)
    reverse: bool = param("reverse", False)
    dependencies: tuple[Dependency, ...] = param("dependency", (), parse=parse_dependencies)
    maps: tuple[Resource, ...] | None = None
