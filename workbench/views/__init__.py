"""SQL on FHIR v2 ViewDefinitions, compiled into vectorised column operations.

``view(definition, data)`` runs a view over FHIR resources: its FHIRPath is parsed
(``workbench.fhirpath``), checked against the R4 element model and compiled into polars
expressions over the resources parsed by ``pyarrow.json`` (``runner``); the result is a pandas
or polars DataFrame.
"""

from typing import Any

from workbench.views.errors import ViewDefinitionError

__all__ = ["ViewDefinitionError", "prepare_view", "view"]


def __getattr__(name: str) -> Any:
    """``view`` and ``prepare_view``, imported when first used: polars is imported with
    them, not with ``import workbench`` (every command would pay for it)."""
    if name in ("view", "prepare_view"):
        from workbench.views import api

        return getattr(api, name)
    raise AttributeError(f"module 'workbench.views' has no attribute {name!r}")
