"""Odd whitespace and invisible characters made visible, for showing a code (never for
checking it): the one set of marks the HTML, the widgets and the plain-text reprs share.

>>> visible(" male"), visible("E11.9 "), visible("a  b"), visible("a" + chr(9) + "b")
('␣male', 'E11.9␣', 'a␣␣b', 'a⇥b')
>>> visible("I10" + chr(0x200B)), visible(42)
('I10␣', 42)
"""

from __future__ import annotations

import re
from typing import Any

MARKS = {"\t": "⇥", "\n": "↵", "\r": "␍", "\u00a0": "⍽"}
#: Leading, trailing and doubled spaces, any whitespace but a space, and the characters that
#: print as nothing (zero-width spaces and joiners, word joiner, byte-order mark, soft hyphen).
ODD = re.compile(r"^ +| +$| {2,}|[^\S ]|[\u200b-\u200d\u2060\ufeff\u00ad]")


def visible(value: Any) -> Any:
    """A code with its odd whitespace made visible: leading, trailing and doubled spaces and
    invisible characters become ``␣``, a tab ``⇥``, a newline ``↵``, a carriage return ``␍``,
    a no-break space ``⍽``. Anything that is not a string is returned as it is."""
    if not isinstance(value, str):
        return value
    return ODD.sub(lambda m: "".join(MARKS.get(ch, "␣") for ch in m.group()), value)


def has_marks(value: Any) -> bool:
    """Whether ``visible`` would change ``value`` (it has odd whitespace or invisibles)."""
    return isinstance(value, str) and ODD.search(value) is not None


def frame_html(frame: Any, columns: tuple[str, ...] = ("code", "display", "suggestion")) -> str:
    """A pandas frame as an HTML table (no index, missing values blank) with the text of
    ``columns`` shown with its odd whitespace made visible."""
    shown = frame.astype(object)
    for column in columns:
        if column in shown:
            shown[column] = shown[column].map(visible)
    return str(shown.where(shown.notna(), "").to_html(escape=True, index=False))


def _cell(value: Any) -> str:
    """One cell of plain text: a string with its odd whitespace visible, else as pandas
    shows it."""
    if isinstance(value, str):
        return str(visible(value))
    if value is None:
        return "None"
    return "NaN" if isinstance(value, float) and value != value else str(value)


def frame_formatters(frame: Any, columns: tuple[str, ...]) -> dict[str, Any]:
    """pandas ``formatters`` that show the text of ``columns`` with the marks (only the rows
    printed are formatted)."""
    return {column: _cell for column in columns if column in frame.columns}


def frame_text(frame: Any, columns: tuple[str, ...], *args: Any, **kwargs: Any) -> Any:
    """``DataFrame.to_string(...)`` of a pandas frame with the text of ``columns`` shown with
    its odd whitespace made visible (only the rows printed are formatted; the data itself is
    not changed). Written to ``buf`` when one is given (then None)."""
    import pandas as pd

    formatters = {**frame_formatters(frame, columns), **(kwargs.pop("formatters", None) or {})}
    return pd.DataFrame.to_string(frame, *args, formatters=formatters or None, **kwargs)
