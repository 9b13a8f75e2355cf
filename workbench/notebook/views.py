"""Pure HTML helpers for the widgets: no ipywidgets here, so they test as plain functions."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import pandas as pd

# JupyterLab's theme variables (light and dark themes), with light-theme fallbacks elsewhere
GREEN = "var(--jp-success-color1, #1a7f37)"
AMBER = "var(--jp-warn-color1, #9a6700)"
RED = "var(--jp-error-color1, #cf222e)"
GREY = "var(--jp-ui-font-color2, #57606a)"


def esc(value: Any) -> str:
    """HTML-escape anything (None, NaN and NA become an empty string)."""
    return "" if blank(value) else html.escape(str(value))


def blank(value: Any) -> bool:
    """True for None, NaN and NA: a missing value in a frame."""
    return value is None or (not isinstance(value, (str, list, dict)) and bool(pd.isna(value)))


def message(text: str, colour: str = RED) -> str:
    """A one-line coloured message (errors are shown like this, never as tracebacks)."""
    return f"<div style='color:{colour};padding:4px 0'>{esc(text)}</div>"


#: Lets text wrap inside a widget (ipywidgets' HTML keeps a line from wrapping by default).
WRAP = "white-space:normal;overflow-wrap:anywhere"


def long_text(text: str, colour: str | None = None, fold: int = 240) -> str:
    """A message that wraps; past ``fold`` characters the rest is folded away under a
    ``<details>`` that expands on a click (nothing is cut off)."""
    style = f"{WRAP};padding:4px 0" + (f";color:{colour}" if colour else "")
    if len(text) <= fold:
        return f"<div style='{style}'>{esc(text)}</div>"
    return (
        f"<details style='{style}'><summary>{esc(text[:fold])}… <i>(show all)</i></summary>"
        f"…{esc(text[fold:])}</details>"
    )


def wrapped(fragment: str) -> str:
    """An HTML fragment (a table) whose text wraps."""
    return f"<div style='{WRAP}'>{fragment}</div>"


def compose_lines(resource: Mapping[str, Any]) -> list[str]:
    """A readable summary of ``ValueSet.compose``: one line per include/exclude."""
    compose = resource.get("compose") or {}
    lines = []
    for part in ("include", "exclude"):
        for clause in compose.get(part) or []:
            what = []
            system = clause.get("system")
            version = f" version {clause['version']}" if clause.get("version") else ""
            concepts = [c.get("code") for c in clause.get("concept") or []]
            filters = [
                f"{f.get('property')} {f.get('op')} {f.get('value')}"
                for f in clause.get("filter") or []
            ]
            if system and concepts:
                shown = ", ".join(concepts[:8]) + (
                    f" … ({len(concepts)} codes)" if len(concepts) > 8 else ""
                )
                what.append(f"codes {shown} from {system}{version}")
            elif system and filters:
                what.append(f"codes of {system}{version} where {' and '.join(filters)}")
            elif system:
                what.append(f"all codes of {system}{version}")
            for imported in clause.get("valueSet") or []:
                what.append(f"{'codes also in' if system else 'the codes of'} {imported}")
            lines.append(f"{part} " + "; ".join(what))
    if compose.get("inactive") is False:
        lines.append("inactive codes are excluded")
    return lines


def metadata_html(resource: Mapping[str, Any]) -> str:
    """Title, canonical, status and description of a resource, then its compose summary."""
    title = resource.get("title") or resource.get("name") or resource.get("id")
    head = (
        f"<h4 style='margin:4px 0'>{esc(title)}</h4><div><code>{esc(resource.get('url'))}"
        f"</code> version <b>{esc(resource.get('version') or '-')}</b>, status "
        f"<b>{esc(resource.get('status'))}</b></div>"
    )
    description = resource.get("description")
    if description:
        head += f"<div style='color:{GREY}'>{esc(str(description)[:400])}</div>"
    lines = compose_lines(resource)
    if lines:
        head += "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in lines) + "</ul>"
    return head


def flags(abstract: bool, inactive: bool) -> str:
    """Badges for abstract and inactive codes."""
    out = ""
    if abstract:
        out += f" <span style='color:{GREY};border:1px solid;padding:0 3px'>abstract</span>"
    if inactive:
        out += f" <span style='color:{AMBER};border:1px solid;padding:0 3px'>inactive</span>"
    return out


def expansion_table(frame: pd.DataFrame) -> str:
    """The expansion page as an HTML table, abstract and inactive codes marked."""
    if frame.empty:
        return message("No codes.", GREY)
    rows = []
    for row in frame.itertuples(index=False):
        style = "font-style:italic;" if row.abstract else ""
        style += "text-decoration:line-through;" if row.inactive else ""
        rows.append(
            f"<tr style='{style}'><td><code>{code_html(row.code)}</code>"
            f"{flags(bool(row.abstract), bool(row.inactive))}</td><td>{esc(row.display)}</td>"
            f"<td style='color:{GREY}'>{esc(row.system)}</td></tr>"
        )
    return (
        "<table class='workbench-expansion'><thead><tr><th>code</th><th>display</th>"
        "<th>system</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def visible_text(code: Any) -> str:
    """A code as plain text with odd whitespace made visible (for labels)."""
    from workbench.bulk.report import visible

    return "" if blank(code) else str(visible(code))


def code_html(code: Any) -> str:
    """A code for showing: escaped, odd whitespace made visible (``␣``, ``⇥`` …)."""
    from workbench.bulk.report import visible

    return esc(visible(code))


def result_html(result: Any, suggestion: Any = None) -> str:
    """A validation result, coloured: green valid, amber valid with a warning, red invalid;
    with "did you mean …?" for its ``suggestion`` (``result.suggestion`` unless another
    ``Suggestion`` is given)."""
    suggestion = result.suggestion if suggestion is None else suggestion
    if result.result:
        colour, word = (AMBER, "valid, with a warning") if result.issues else (GREEN, "valid")
    else:
        colour, word = RED, "invalid"
    parts = [
        f"<div class='workbench-result' data-result='{str(bool(result.result)).lower()}'"
        f" style='border-left:6px solid {colour};padding:4px 10px'>"
        f"<b style='color:{colour}'>{word}</b>"
    ]
    if result.issue:
        parts.append(f" <code>{esc(result.issue)}</code>")
    if result.display:
        parts.append(f"<div>display: <b>{esc(result.display)}</b></div>")
    if result.message:
        parts.append(f"<div style='{WRAP}'>{esc(result.message)}</div>")
    if suggestion is not None:
        shown = f" ({esc(suggestion.display)})" if suggestion.display else ""
        parts.append(
            f"<div class='workbench-suggestion'>Did you mean <code>{code_html(suggestion.code)}"
            f"</code>{shown}? <span style='color:{GREY}'>{esc(suggestion.why)}</span></div>"
        )
    parts.append("</div>")
    return "".join(parts)


def frame_table(frame: pd.DataFrame, limit: int = 50) -> str:
    """A plain HTML table of the first ``limit`` rows of a frame."""
    if frame.empty:
        return message("No rows.", GREY)
    shown = frame.head(limit).astype(object)
    return shown.where(shown.notna(), "").to_html(escape=True)
