"""SQL on FHIR v2 ViewDefinitions, compiled into vectorised column operations.

``view(definition, data)`` runs a view over FHIR resources: its FHIRPath is parsed
(``workbench.fhirpath``), checked against the R4 element model and compiled into polars
expressions over the resources parsed by ``pyarrow.json`` (``runner``); the result is a pandas
or polars DataFrame.
"""

from workbench.views.api import prepare_view, view
from workbench.views.errors import ViewDefinitionError

__all__ = ["ViewDefinitionError", "prepare_view", "view"]
