"""Plain text of report tables that leads with what a person reads first.

pandas fits a wide frame to the terminal by dropping middle columns, which keeps the first
and last ones whatever they hold. The report's tables print instead with their columns in
order of importance (the code, its count, the issue, the suggestion), long messages last
and elided, and, when pandas fits columns to the terminal (``display.max_columns`` 0), only
as many leading columns as fit, with a line naming the others. ``to_string()`` keeps
everything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from pandas.io.formats.format import get_dataframe_repr_params  # type: ignore[attr-defined]

from workbench.marks import frame_text

#: The columns printed first, in this order, when a table has them.
LEADING = ("code", "count", "issue", "suggestion", "result", "display", "suggested_display")
#: The columns printed last (long free text).
TRAILING = ("system", "message")
#: Characters of a message shown before it is elided.
MESSAGE_WIDTH = 40


def ordered(columns: Sequence[Any]) -> list[Any]:
    """``columns`` in print order: the leading ones, the others as they come, the trailing."""
    first = [c for c in LEADING if c in columns]
    last = [c for c in TRAILING if c in columns]
    return first + [c for c in columns if c not in first and c not in last] + last


def _elided(value: Any) -> str:
    text = "" if value is None or value is pd.NA else str(value)
    return text if len(text) <= MESSAGE_WIDTH else text[: MESSAGE_WIDTH - 1] + "…"


def leading_repr(frame: pd.DataFrame, marked: tuple[str, ...]) -> str:
    """The ``repr`` (and ``print``) of ``frame`` under pandas' display options, columns in
    print order, messages elided, fitted to the terminal width when pandas fits columns."""
    params = get_dataframe_repr_params()
    columns = ordered(list(frame.columns))
    shown = pd.DataFrame(frame, copy=False)[columns]
    formatters = {"message": _elided} if "message" in columns else {}
    width = params.get("line_width")
    if pd.get_option("display.max_columns") != 0 or not width:
        return str(frame_text(shown, marked, formatters=formatters, **params))
    params = {**params, "line_width": None, "max_cols": None}
    head = shown.head(params.get("max_rows") or len(shown))
    kept: list[Any] = []
    for column in columns:
        text = str(frame_text(head[[*kept, column]], marked, formatters=formatters, **params))
        if kept and max(len(line) for line in text.splitlines()) > width:
            break
        kept.append(column)
    text = str(frame_text(shown[kept], marked, formatters=formatters, **params))
    left = [str(c) for c in columns if c not in kept]
    return text + (f"\n({len(left)} more columns: {', '.join(left)})" if left else "")
