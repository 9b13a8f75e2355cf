"""What a column report's views share: the by-code columns, the bar colours and when to
log-scale (the Vega-Lite spec itself is ``workbench.charts.VegaLite``)."""

from __future__ import annotations

from typing import Any

#: The columns of ``ValidationFrame.by_code()``, in the order its plain text prints them
#: (``leading.ordered``): the code, its count, issue and suggestion first, the system and the
#: long message last.
BY_CODE = [
    "code",
    "count",
    "issue",
    "suggestion",
    "result",
    "display",
    "suggested_display",
    "share",
    "system",
    "message",
]

#: Bar colours shared by ``chart`` (Vega-Lite) and ``plot`` (matplotlib): mid-tones that
#: read on a light and on a dark background.
BAR_COLOURS = {"valid": "#2da44e", "warning": "#d4a72c", "invalid": "#e5534b"}


def log_scale(counts: Any) -> bool:
    """True when the counts span more than two decades (largest > 100 × smallest)."""
    values = [float(v) for v in counts if v and v > 0]
    return bool(values) and max(values) > 100 * min(values)
