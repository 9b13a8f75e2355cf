"""Charts a result object returns: a Vega-Lite spec that JupyterLab draws itself."""

from __future__ import annotations

from typing import Any


class VegaLite:
    """A Vega-Lite v5 chart spec that JupyterLab draws itself (offline, interactive, and in
    the dark theme when JupyterLab is dark); ``.spec`` is the JSON."""

    MIME = "application/vnd.vegalite.v5+json"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec

    def _repr_mimebundle_(self, **_: Any) -> dict[str, Any]:
        return {self.MIME: self.spec, "text/plain": "<VegaLite chart>"}
