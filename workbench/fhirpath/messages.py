"""The messages of FHIRPath syntax errors: one line naming the 1-based column (and the line
when the text has several), the text there and what the parser would have taken there.

>>> where("a +\\n b )", 7)
"line 2, column 4 (at ')')"
>>> where("a +", 3)
'column 4 (the end of the text)'
"""

from __future__ import annotations

from lark import Lark
from lark.exceptions import UnexpectedInput


def shown(text: str, most: int = 200) -> str:
    """The text quoted for a message, on one line (a long one cut, saying how long it is)."""
    if len(text) <= most:
        return repr(text)
    return f"{text[:most]!r}… ({len(text):,} characters)"


def where(text: str, position: int | None) -> str:
    """``column 5 (at 'div …')``: 1-based, with the line when the text has several."""
    if position is None or position >= len(text):
        position = len(text)
        near = "the end of the text"
    else:
        near = f"at {text[position : position + 20]!r}"
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    place = f"line {line}, column {column}" if "\n" in text else f"column {column}"
    return f"{place} ({near})"


#: How the terminals are named in "expected …" (the others are shown as written)
_NAMES = {
    "IDENTIFIER": "a name",
    "DELIMITEDIDENTIFIER": "a `name`",
    "STRING": "a 'string'",
    "NUMBER": "a number",
    "LONGNUMBER": "a long number (3L)",
    "DATETIME": "a date or time (@2020-01-01)",
    "CODING": "a Coding literal (system|code)",
    "$END": "the end of the text",
}
#: The terminals that start a term: "expected an expression" stands for them all
_TERM_STARTS = frozenset(("IDENTIFIER", "NUMBER", "STRING", "LPAR", "PERCENT", "THIS"))
_ALSO_STARTS = frozenset(
    {"DELIMITEDIDENTIFIER", "LONGNUMBER", "DATETIME", "CODING", "INDEX", "TOTAL", "LBRACE"}
    | {"TRUE", "FALSE", "PLUS", "MINUS", "AS", "IS", "IN", "CONTAINS"}
)
_CALENDAR = frozenset({"year", "month", "week", "day", "hour", "minute", "second", "millisecond"})
#: The binary operators as written: "expected an operator" stands for them all
_OPERATORS = frozenset(
    {"implies", "or", "xor", "and", "in", "contains", "=", "~", "!=", "!~", "<=", "<", ">"}
    | {">=", "|", "is", "as", "+", "-", "&", "*", "/", "div", "mod"}
)


def expected(parser: Lark, names: set[str]) -> list[str]:
    """The terminals ``names`` as a reader would say them, grouped and sorted."""
    found: set[str] = set()
    if names >= _TERM_STARTS:
        found.add("an expression")
        names = names - _TERM_STARTS - _ALSO_STARTS
    operators: set[str] = set()
    for name in names:
        if name in _NAMES:
            found.add(_NAMES[name])
            continue
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            continue
        if pattern.type == "str" and pattern.value in _OPERATORS:
            operators.add(pattern.value)
        found.add(repr(pattern.value) if pattern.type == "str" else name)
    if {"=", "and", "+"} <= operators:
        found = (found - {repr(op) for op in operators}) | {"an operator"}
    units = {f for f in found if f.strip("'").rstrip("s") in _CALENDAR}
    if units:
        found = (found - units) | {"a calendar unit (days, …)"}
    return sorted(found)


def acceptable(exc: UnexpectedInput) -> set[str]:
    """The terminals the parser would have taken where it stopped: the precise set, found
    by trying each, or the lexer's or the parser state's set when that fails."""
    interactive = getattr(exc, "interactive_parser", None)
    if interactive is not None:
        try:
            return set(interactive.accepts())
        except Exception:  # the message falls back to the state's set
            pass
    return set(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ())


def describe(kind: str, parser: Lark, text: str, exc: UnexpectedInput) -> tuple[str, int]:
    """A one-line message: where reading stopped, the text there, and what was expected;
    and that place (0-based; the text's length at its end)."""
    pos = getattr(exc, "pos_in_stream", None)
    token = getattr(exc, "token", None)
    if pos is None or (token is not None and getattr(token, "type", "") == "$END"):
        pos = len(text)
    names = expected(parser, acceptable(exc))
    hint = f"; expected {', '.join(names[:12])}" if names else ""
    if text[pos : pos + 1] in ("'", "`"):
        hint += f" (is a {text[pos]} never closed?)"
    return f"The {kind} {shown(text)} does not parse at {where(text, pos)}{hint}", pos
