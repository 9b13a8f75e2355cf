"""What the engine asks of a code system loaded from release files (``Terminology.add_provider``).

A provider stands where a CodeSystem resource's ``CodeSystemIndex`` stands: value sets,
validation, look-up, expansion and bulk validation use it through the same surface
(``CodeSystemProvider`` below). Beyond it, the engine looks for optional hooks with
``getattr`` and uses them when present:

==========================  ===============================================================
hook                        used for
==========================  ===============================================================
``compile_filter(raw)``     a compose filter (a ``CodeFilter``) in the provider's own terms
``filter_entries(filters)`` an include's filtered expansion at once (``list[Entry]`` or None)
``implicit_valueset(url)``  the ValueSet an implicit value set URL stands for, or None
``implicit_conceptmap(u)``  the ConceptMap an implicit map URL (``?fhir_cm=``) stands for
``describe(codes)``         known / inactive / display of many codes (bulk non-members)
``is_expression(code)``     a code that is a post-coordinated expression …
``validate_expression(c)``  … checked: ``(ok, message, focus codes)``
``lookup(code, …)``         $lookup (a ``LookupResult``)
``concepts_frame()``        ``Workbench.concepts`` straight from the provider's store
``designations_frame()``    ``Workbench.designations`` likewise
``designations_of(code)``   designations for expansions that include them
``display_in(code, lang)``  the display in a language or dialect for ``displayLanguage``
``accepts_version(v)``      a version spelled another way (an edition URI without a date)
``roots()``                 the top of the hierarchy, without iterating every concept
==========================  ===============================================================

Concepts the provider returns may carry a ``note`` (what replaces an inactive concept), which
validation adds to its inactive warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from workbench.terminology.codesystem import Concept


@runtime_checkable
class CodeSystemProvider(Protocol):
    """The code-system surface the engine uses (shared with ``CodeSystemIndex``)."""

    url: str
    version: str | None
    content: str
    case_sensitive: bool
    hierarchy_meaning: str
    property_types: dict[str, str]
    resource: dict[str, Any]

    @property
    def concepts(self) -> Any:
        """The concepts by code: a mapping with ``get`` (it may make them on demand)."""
        ...

    @property
    def is_complete(self) -> bool:
        """True when the provider knows every code of its system."""
        ...

    def get(self, code: str) -> Concept | None:
        """The concept of a code, or None."""
        ...

    def __contains__(self, code: object) -> bool: ...

    def __iter__(self) -> Iterator[Concept]: ...

    def __len__(self) -> int: ...

    def role_of(self, property_code: str) -> str:
        """The concept-properties role a property code plays."""
        ...

    def has_property(self, name: str) -> bool:
        """Whether the code system defines the property."""
        ...

    def property_codes_for(self, role: str) -> list[str]:
        """The property codes that play a role."""
        ...

    def ancestors(self, code: str) -> frozenset[str]:
        """Every ancestor code."""
        ...

    def descendants(self, code: str) -> frozenset[str]:
        """Every descendant code."""
        ...

    def subsumes(self, code_a: str, code_b: str) -> str:
        """The $subsumes outcome of A against B."""
        ...

    def in_order(self, codes: set[str] | frozenset[str]) -> list[Concept]:
        """The concepts of ``codes`` in the code system's order."""
        ...
