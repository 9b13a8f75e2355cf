"""The small interface through which the operations and the server use the engine.

``Workbench`` implements it; ``workbench.operations`` and ``workbench.server`` depend on this
protocol only, never on ``workbench.workbench``, so the facade can import the server (lazily,
in ``Workbench.serve``) without an import cycle. The engine modules it names (registry,
terminology) import neither operations nor server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from workbench.registry import Registry
    from workbench.resources import Resource
    from workbench.terminology.conceptmap import Translation
    from workbench.terminology.engine import Terminology
    from workbench.terminology.expansion import Expansion
    from workbench.terminology.lookup import LookupResult
    from workbench.terminology.validation import ValidationResult


class TerminologyService(Protocol):
    """What an operation or the server asks of the workbench (the keyword arguments are
    those of the ``Workbench`` methods of the same names)."""

    @property
    def registry(self) -> Registry:
        """The stored resources."""

    @property
    def terminology(self) -> Terminology:
        """The terminology engine (code systems from release files, caches)."""

    def expand(self, *args: Any, **kwargs: Any) -> Expansion:
        """``Workbench.expand``."""

    def validate_code(self, *args: Any, **kwargs: Any) -> ValidationResult:
        """``Workbench.validate_code``."""

    def validate_in_codesystem(self, *args: Any, **kwargs: Any) -> ValidationResult:
        """``Workbench.validate_in_codesystem``."""

    def lookup(self, *args: Any, **kwargs: Any) -> LookupResult:
        """``Workbench.lookup``."""

    def subsumes(self, *args: Any, **kwargs: Any) -> str:
        """``Workbench.subsumes``."""

    def translate(self, *args: Any, **kwargs: Any) -> Translation:
        """``Workbench.translate``."""

    def conceptmaps_for(self, *args: Any, **kwargs: Any) -> list[Resource]:
        """``Workbench.conceptmaps_for``."""
