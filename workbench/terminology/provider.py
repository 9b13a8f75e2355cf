"""The one contract every terminology answers to: ``CodeSystemProvider``.

A FHIR CodeSystem resource (``CodeSystemIndex``), SNOMED CT, LOINC, ICD-10-CM, RxNorm and UCUM
are each a subclass. Value sets, validation, look-up, expansion, bulk validation and the
server use a code system only through the methods declared here, so the engine never asks
which terminology it is talking to, and never probes a provider with ``getattr``.

The surface has three parts:

* **Required** (abstract): the concepts by code (``get``, ``concepts``, iteration, length)
  and the hierarchy (``ancestors``, ``descendants``).
* **Optional capabilities**, each a method with a documented default that means "nothing
  here" (no designations, no implicit value sets, no expressions…). A provider overrides
  what its terminology has.
* **Capability flags** (class attributes) for what differs in kind: ``enumerable`` (its
  codes can be listed, unlike UCUM's grammar), ``hierarchical``, ``expressions`` (it parses
  post-coordinated expressions), and ``is_complete`` (closed: it knows every code).

Concepts a provider returns may carry a ``note`` (what replaces an inactive concept) and
``retired_displays`` (texts once valid as displays), which validation reports.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from workbench.errors import TooCostlyError, UnknownCodeError, WorkbenchError
from workbench.terminology import languages
from workbench.terminology.concepts import CodeFilter, Concept, Entry
from workbench.terminology.lookup import LookupResult, TypedValue

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import pandas as pd
    import pyarrow as pa

#: Code systems whose codes are identifiers with check digits (``opaque_codes``).
OPAQUE_CODE_SYSTEMS = frozenset({"http://snomed.info/sct", "http://loinc.org"})

#: What ``describe`` answers for many codes: known, inactive, display (bulk validation).
Described = tuple["npt.NDArray[np.bool_]", "npt.NDArray[np.bool_]", list[str | None]]


class CodeSystemProvider(ABC):
    """A code system as the engine sees it. Subclasses set the attributes below (in
    ``__init__`` or as class attributes) and implement the abstract methods.

    >>> from workbench.terminology.codesystem import CodeSystemIndex
    >>> cs = CodeSystemIndex({"resourceType": "CodeSystem", "url": "http://x", "language": "en",
    ...     "content": "complete", "concept": [{"code": "a", "display": "A"}]})
    >>> isinstance(cs, CodeSystemProvider), cs.designations_of("a"), cs.display_in("a", "en-GB")
    (True, [], 'A')
    >>> cs.display_in("a", "de"), cs.is_expression("a"), cs.implicit_valueset("http://x?fhir_vs")
    (None, False, None)
    """

    #: The code system's canonical URL and version.
    url: str
    version: str | None
    #: The CodeSystem resource that describes it (for a release: made by the provider,
    #: without concepts). Status checks, ``versionNeeded``, ``language`` and $lookup's
    #: ``name`` read it.
    resource: dict[str, Any]
    #: CodeSystem.content: ``complete``, ``fragment``, ``example``, ``not-present``…
    content: str = "complete"
    case_sensitive: bool = True
    hierarchy_meaning: str = "is-a"
    #: The type of each property the code system defines, by code.
    property_types: dict[str, str]
    #: The concepts by exact code (a provider may make them on demand).
    concepts: Mapping[str, Concept]

    #: Its codes can be listed (False for a grammar such as UCUM's: ``listing_error``).
    enumerable: ClassVar[bool] = True
    #: Concepts have parents and children (``ancestors``/``descendants`` mean something).
    hierarchical: ClassVar[bool] = True
    #: It parses post-coordinated expressions (``is_expression``, ``validate_expression``).
    expressions: ClassVar[bool] = False
    #: Two different codes may be the same concept (``equivalent_in``: UCUM's ``ml``/``mL``).
    synonymous_codes: ClassVar[bool] = False
    #: An expansion entry says all that validation says of a member: no concept status
    #: beyond active and abstract (a release store). A FHIR CodeSystem's concepts may be
    #: ``deprecated``, which only the full check reports.
    plain_entries: ClassVar[bool] = False

    # --- required ----------------------------------------------------------------------

    @abstractmethod
    def get(self, code: str) -> Concept | None:
        """The concept of a code (case-insensitively when the system is), or None."""

    @abstractmethod
    def __iter__(self) -> Iterator[Concept]:
        """Every concept, in the code system's order."""

    @abstractmethod
    def __len__(self) -> int:
        """How many concepts the provider knows."""

    @abstractmethod
    def ancestors(self, code: str) -> frozenset[str]:
        """Every ancestor code of ``code`` (not the code itself)."""

    @abstractmethod
    def descendants(self, code: str) -> frozenset[str]:
        """Every descendant code of ``code`` (not the code itself)."""

    # --- concepts and properties ------------------------------------------------------

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and self.get(code) is not None

    def __bool__(self) -> bool:
        return True  # a provider is never "empty" as a truth value, whatever its length

    @property
    def is_complete(self) -> bool:
        """True when the provider knows every code of its system (closed)."""
        return self.content == "complete"

    @property
    def language(self) -> str | None:
        """The language of the code system's own displays (``CodeSystem.language``)."""
        found = self.resource.get("language")
        return str(found) if found else None

    @property
    def opaque_codes(self) -> bool:
        """Its codes are identifiers with check digits and no lexical meaning (SNOMED CT
        concept ids, LOINC numbers): a code a few edits away is another concept, never a
        likely typo, so suggestions make no edit-distance guess. By the system's URL, so a
        FHIR CodeSystem fragment of SNOMED CT or LOINC answers as the release does."""
        return self.url in OPAQUE_CODE_SYSTEMS

    @property
    def compositional(self) -> bool:
        """``CodeSystem.compositional``: codes may be built from other codes."""
        return self.resource.get("compositional") is True

    def role_of(self, property_code: str) -> str:
        """The concept-properties role (``parent``, ``status``…) a property code plays."""
        return property_code

    def has_property(self, name: str) -> bool:
        """Whether the code system defines the property (by code or by role)."""
        return name in self.property_types

    def property_codes_for(self, role: str) -> list[str]:
        """The property codes that play a role (the role itself when none declares it)."""
        return [role]

    def in_order(self, codes: set[str] | frozenset[str]) -> list[Concept]:
        """The concepts of ``codes`` in the code system's order (unknown codes left out)."""
        found = [c for c in (self.get(code) for code in codes) if c is not None]
        found.sort(key=lambda c: c.order)
        return found

    def roots(self) -> list[Concept]:
        """The top of the hierarchy: the concepts without a parent."""
        return [c for c in self if not c.parents]

    def subsumes(self, code_a: str, code_b: str) -> str:
        """The $subsumes outcome of A against B: ``equivalent``, ``subsumes``,
        ``subsumed-by`` or ``not-subsumed``."""
        if code_a == code_b:
            return "equivalent"
        if code_a in self.ancestors(code_b):
            return "subsumes"
        if code_b in self.ancestors(code_a):
            return "subsumed-by"
        return "not-subsumed"

    # --- displays and designations ----------------------------------------------------

    def designations_of(self, code: str) -> list[dict[str, Any]]:
        """The designations of a code (FHIR ``designation`` elements); none when unknown."""
        concept = self.get(code)
        return list(concept.designations) if concept is not None else []

    def display_in(self, code: str, language: str) -> str | None:
        """The display of a code in a language (or one of its dialects): the concept's own
        display when the code system is in that language, else a designation in it; None
        when there is none."""
        concept = self.get(code)
        if concept is None:
            return None
        wanted = languages.Languages.parse(language, wildcard=False)
        return languages.display_in(wanted, concept.display, self.language, concept.designations)

    def display_for(
        self,
        code: str,
        display: str | None,
        designations: Sequence[Mapping[str, Any]],
        wanted: languages.Languages,
    ) -> str | None:
        """The display an expansion entry shows for the wanted languages, from the entry's
        own display and designations (a value set may give its own); None when the request
        allows no other language and there is none in the wanted ones."""
        return languages.display_in(wanted, display, self.language, designations)

    # --- filters, expansion and implicit resources -------------------------------------

    def compile_filter(self, raw: Mapping[str, Any]) -> CodeFilter | None:
        """A ``compose.include.filter`` in this code system's own terms (a store's column
        masks, ECL), or None to have the engine test it on the concepts (``filters``:
        hierarchy, properties, display). UnsupportedFilterError for a filter it refuses."""
        return None

    def filter_entries(self, filters: Sequence[CodeFilter]) -> list[Entry] | None:
        """An include's filtered expansion at once (a store does it column-wise), or None
        to let the engine test each concept with the filters."""
        return None

    def listing_error(self) -> WorkbenchError:
        """Why the whole code system cannot be listed (asked when it is not complete and
        an expansion needs every code). Only a provider that is not ``enumerable`` needs a
        message of its own."""
        return TooCostlyError(f"The code system {self.url} cannot be listed")

    def implicit_valueset(self, url: str) -> dict[str, Any] | None:
        """The ValueSet an implicit value set URL (``…?fhir_vs=…``) stands for, or None."""
        return None

    def implicit_conceptmap(self, url: str) -> dict[str, Any] | None:
        """The ConceptMap an implicit map URL (``…?fhir_cm=…``) stands for, or None."""
        return None

    def accepts_version(self, version: str) -> bool:
        """Whether a version spelled otherwise names this one (SNOMED CT: an edition URI
        without a date); the exact version is always accepted by the engine."""
        return False

    # --- validation --------------------------------------------------------------------

    def why_unknown(self, code: str) -> str | None:
        """Why a code is none of the system's codes, when the system can tell without
        listing them (UCUM: where it fails to parse); else None."""
        return None

    def supplement_designations(self, code: str) -> Sequence[tuple[str, Mapping[str, Any]]]:
        """The designations that supplements added to a concept, each with the
        supplement's canonical (``url|version``), so that a validation can leave out
        those of supplements it has not brought in; none unless the provider takes
        supplements (a FHIR CodeSystem does)."""
        return ()

    def equivalent_in(self, code: str, listed: Iterable[str]) -> str | None:
        """The listed code that means the same as ``code`` (UCUM: ``ml`` is ``mL``), or
        None (always, unless ``synonymous_codes``)."""
        return None

    def describe(self, codes: Sequence[str]) -> Described | None:
        """Known, inactive and display of many codes at once (a store answers column-wise,
        for bulk validation), or None to let the engine look each code up."""
        return None

    def is_expression(self, code: str) -> bool:
        """Whether a code is a post-coordinated expression (only if ``expressions``)."""
        return False

    def validate_expression(self, code: str) -> tuple[bool, str | None, list[str]]:
        """An expression checked: ``(valid, why not, focus concept codes)``."""
        return False, f"{self.url} has no post-coordinated expressions", []

    def expression_member(self, valueset: Any, code: str) -> bool | None:
        """Whether an expression is a member of a compiled value set, when the provider can
        decide it (an ECL constraint); None to let the engine test its focus concepts."""
        return None

    def expression_display(self, code: str) -> str | None:
        """The display of a valid post-coordinated expression (its concepts with their
        preferred terms), or None."""
        return None

    # --- look-up and frames ------------------------------------------------------------

    def lookup(
        self,
        code: str,
        *,
        properties: Sequence[str] | None = None,
        display_language: str | None = None,
    ) -> LookupResult:
        """$lookup of a code (UnknownCodeError when the system does not have it).

        ``display_language`` (a weighted list like Accept-Language) picks the display in
        the first wanted language the concept has, else its own display: $lookup's display
        is required (R4), so even ``*;q=0`` falls back to it."""
        result = concept_lookup(self, code, properties=properties)
        if not display_language:
            return result
        concept = self.get(result.code)
        if concept is None:
            return result
        wanted = dataclasses.replace(languages.Languages.parse(display_language), wildcard=True)
        shown, language = languages.shown_in(
            wanted, concept.display, self.language, concept.designations
        )
        used = () if language is None else (preferred_for(language, shown),)
        return dataclasses.replace(
            result, display=shown, designations=(*used, *result.designations)
        )

    def concepts_frame(self) -> pd.DataFrame | None:
        """The concepts as a frame straight from a store, or None to let the workbench
        build it from the concepts."""
        return None

    def designations_frame(self) -> pd.DataFrame | None:
        """The designations as a frame straight from a store, or None (built from the
        concepts)."""
        return None

    def concept_columns(self) -> pa.Table | None:
        """``code``, ``display``, ``abstract`` and ``inactive`` of every concept (as in
        ``concepts_frame``, same order) as Arrow columns read straight from a store, with no
        Python object per concept (bulk validation against a whole code system), or None
        to let the engine read ``concepts_frame``."""
        return None

    def parents_column(self) -> pa.Array | None:
        """Each concept's parent codes as one string (sorted, joined with ``", "``; empty
        for a root), in ``concept_columns`` order, straight from a store (``diff`` of two
        versions), or None to let the engine read ``concepts_frame``."""
        return None

    def successors(self, code: str) -> list[Successor]:
        """What the release records as replacing an inactive concept (SNOMED CT's
        historical associations, LOINC's MAP_TO), strongest first; none by default."""
        return []

    def known_codes(self, codes: Sequence[str]) -> list[str | None]:
        """The code system's own spelling of each code (``get(code).code``), None for a code
        it does not know: many codes at once (a store answers without making concepts)."""
        found = []
        for code in codes:
            concept = self.get(code)
            found.append(None if concept is None else concept.code)
        return found

    def hierarchy_members(self, codes: Iterable[str]) -> HierarchyMembers:
        """A set of this code system's codes (``codes`` first) that answers, as each code is
        added, its ancestors and descendants among the codes before it (``$closure``'s
        tables). By default over ``ancestors``; a store overrides it to work on its rows."""
        return HierarchyMembers(self, codes)


class HierarchyMembers:
    """Codes of one code system that know how they are related (``hierarchy_members``):
    ``add`` a code, get its ancestors and descendants among the codes added before it. This
    one keeps, for each code, the members below it (built from the members' ancestors);
    a provider may keep something cheaper.

    >>> from workbench.terminology.codesystem import CodeSystemIndex
    >>> cs = CodeSystemIndex({"resourceType": "CodeSystem", "url": "http://x", "content":
    ...     "complete", "concept": [{"code": "a", "concept": [{"code": "b"}, {"code": "c"}]}]})
    >>> members = cs.hierarchy_members(["b"])
    >>> members.add("a"), members.add("c")
    (([], ['b']), (['a'], []))
    """

    def __init__(self, provider: CodeSystemProvider, codes: Iterable[str] = ()) -> None:
        self.provider = provider
        self.codes: set[str] = set()
        self._below: dict[str, list[str]] = {}
        for code in codes:
            self._keep(code, provider.ancestors(code))

    def _keep(self, code: str, ancestors: Iterable[str]) -> None:
        self.codes.add(code)
        for up in ancestors:
            self._below.setdefault(up, []).append(code)

    def add(self, code: str) -> tuple[list[str], list[str]]:
        """Add ``code`` (not a member yet): its ancestors and its descendants among the
        members before it."""
        ancestors = self.provider.ancestors(code)
        ups = [up for up in ancestors if up in self.codes]
        downs = list(self._below.get(code, ()))
        self._keep(code, ancestors)
        return ups, downs


@dataclasses.dataclass(frozen=True)
class Successor:
    """A concept a release names as replacing another: its code and display, the relation
    as the release names it (``REPLACED BY``, ``SAME AS``, ``MAP_TO``…) and whether it is
    a one-to-one replacement of the strongest kind (``replaces``: SAME AS, REPLACED BY,
    MAP_TO), which a fix may apply."""

    code: str
    display: str | None
    relation: str
    replaces: bool


PREFERRED_FOR_LANGUAGE = {
    "system": "http://terminology.hl7.org/CodeSystem/hl7TermMaintInfra",
    "code": "preferredForLanguage",
}


def preferred_for(language: str, display: str | None) -> dict[str, Any]:
    """The designation $lookup returns for the display it chose in a requested language."""
    return {"language": language, "use": dict(PREFERRED_FOR_LANGUAGE), "value": display or ""}


def dialect_display_for(
    provider: CodeSystemProvider,
    code: str,
    display: str | None,
    wanted: languages.Languages,
) -> str | None:
    """``display_for`` of a release that picks its own dialect's term: the first wanted
    language it has a display in; else the entry's display under the wildcard, or None."""
    for tag in wanted.tags:
        found = provider.display_in(code, tag)
        if found:
            return found
    return display if wanted.wildcard else None


def concept_lookup(
    cs: CodeSystemProvider, code: str, *, properties: Sequence[str] | None = None
) -> LookupResult:
    """Look a code up. ``properties`` selects which properties to return (None: all).

    ``name`` is the CodeSystem's ``name`` (its title, then its url, when it has none). Besides
    every property the code system defines, the concept-properties ``parent``, ``child``,
    ``inactive``, ``status`` (when the concept has one) and ``notSelectable`` (when it is
    abstract) are returned; ``definition`` and ``designation`` can be selected as well.
    """
    concept = cs.get(code)
    if concept is None:
        label = f"{cs.url}|{cs.version}" if cs.version else cs.url
        raise UnknownCodeError(f"Unknown code '{code}' in the CodeSystem '{label}'")
    wanted = set(properties) if properties else None

    def want(name: str) -> bool:
        return wanted is None or name in wanted

    props: list[tuple[str, TypedValue]] = []
    hierarchy = {"parent", "child", "subsumedBy"}
    for name, values in concept.properties.items():
        if cs.role_of(name) in hierarchy:
            continue
        if want(name):
            key = concept.value_keys.get(name, "valueString")
            props += [(name, TypedValue(key, v)) for v in values]
    if want("parent"):
        props += [("parent", TypedValue("valueCode", p)) for p in concept.parents]
    if want("child"):
        props += [("child", TypedValue("valueCode", c)) for c in concept.children]
    if want("inactive") and not any(n == "inactive" for n, _ in props):
        props.append(("inactive", TypedValue("valueBoolean", concept.inactive)))
    roles = {cs.role_of(n) for n, _ in props}
    if want("status") and concept.status and "status" not in roles:
        props.append(("status", TypedValue("valueCode", concept.status)))
    if want("notSelectable") and concept.abstract and not roles & {"notSelectable", "abstract"}:
        props.append(("notSelectable", TypedValue("valueBoolean", True)))
    if wanted is not None and "definition" in wanted and concept.definition:
        props.append(("definition", TypedValue("valueString", concept.definition)))
    designations = tuple(concept.designations) if want("designation") else ()
    return LookupResult(
        name=str(cs.resource.get("name") or cs.resource.get("title") or cs.url),
        version=cs.version,
        code=concept.code,
        display=concept.display,
        definition=concept.definition,
        abstract=concept.abstract,
        designations=designations,
        typed_properties=tuple(props),
        system=cs.url,
    )
