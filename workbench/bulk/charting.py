"""What a column report's views share: the by-code columns, the bar colours, the Vega-Lite
spec JupyterLab draws, and when to log-scale."""

from __future__ import annotations

from typing import Any

#: The columns of ``ValidationFrame.by_code()``.
BY_CODE = [
    "system",
    "code",
    "count",
    "share",
    "result",
    "issue",
    "message",
    "display",
    "suggestion",
    "suggested_display",
]

#: Bar colours shared by ``chart`` (Vega-Lite) and ``plot`` (matplotlib): mid-tones that
#: read on a light and on a dark background.
BAR_COLOURS = {"valid": "#2da44e", "warning": "#d4a72c", "invalid": "#e5534b"}


class VegaLite:
    """A Vega-Lite v5 chart spec that JupyterLab draws itself (offline, interactive, and in
    the dark theme when JupyterLab is dark); ``.spec`` is the JSON."""

    MIME = "application/vnd.vegalite.v5+json"

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec

    def _repr_mimebundle_(self, **_: Any) -> dict[str, Any]:
        return {self.MIME: self.spec, "text/plain": "<VegaLite chart>"}


def log_scale(counts: Any) -> bool:
    """True when the counts span more than two decades (largest > 100 × smallest)."""
    values = [float(v) for v in counts if v and v > 0]
    return bool(values) and max(values) > 100 * min(values)
