"""A column validation as one self-contained HTML page: the summary, a bar chart drawn as
inline SVG, the rows per reason and the by-code table with suggestions. It loads nothing (no
script, no font, no stylesheet from anywhere), so it opens offline and can be mailed; its
colours follow the reader's light or dark scheme (``prefers-color-scheme``). Every code,
display and message is escaped, with its odd whitespace made visible (``␣male``)."""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

import pandas as pd

from workbench.bulk.charting import BAR_COLOURS, BY_CODE, log_scale
from workbench.bulk.sharing import ReportContent
from workbench.marks import frame_html, visible

#: The most by-code rows the page lists (the Excel report has them all).
MAX_PAGE_CODES = 1000
#: The most failing codes the chart draws.
CHART_CODES = 15

STYLE = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1f2328; --muted: #57606a;
  --border: #d0d7de; --head: #f6f8fa; --valid: #1a7f37; --warning: #9a6700;
  --invalid: #cf222e; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #8b949e; --border: #30363d;
    --head: #161b22; --valid: #3fb950; --warning: #d29922; --invalid: #f85149; }
}
body { background: var(--bg); color: var(--fg); margin: 2em auto; max-width: 72em;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: .2em; }
.about, .more { color: var(--muted); }
.headline { font-size: 1.25em; }
.valid { color: var(--valid); } .invalid { color: var(--invalid); }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
th, td { border: 1px solid var(--border); padding: .25em .6em; text-align: left;
  vertical-align: top; }
th { background: var(--head); }
svg text { fill: var(--fg); font-size: 12px; }
svg text.title { font-weight: 600; font-size: 13px; }
"""


def write_html(content: ReportContent, path: str | Path) -> Path:
    """Write ``content`` as one HTML file; returns the path."""
    path = Path(path)
    path.write_text(render(content), encoding="utf-8")
    return path


def render(content: ReportContent) -> str:
    """The page's HTML."""
    share = f"{content.percent:.2f}%"
    about = "".join(
        f"<div><b>{escape(k)}</b>: {escape(str(v))}</div>"
        for k, v in content.about.items()
        if v is not None
    )
    reasons = pd.DataFrame(
        {"reason": list(content.reasons), "rows": list(content.reasons.values())}
    )
    state = "valid" if content.valid == content.rows else "invalid"
    body = (
        f"<h1>{escape(content.title)}</h1><div class='about'>{about}</div>"
        f"<p class='headline' id='summary'><b class='{state}'>{content.valid:,}</b> of "
        f"{content.rows:,} rows valid ({share})</p>"
        f"<section id='chart'>{chart_svg(content)}</section>"
        f"<h2>Rows per reason</h2><div id='reasons'>{frame_html(reasons)}</div>"
        f"<h2>By code</h2><div id='by-code'>{_codes_html(content.by_code)}</div>"
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='color-scheme' content='light dark'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{escape(content.title)}</title><style>{STYLE}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def _codes_html(table: pd.DataFrame) -> str:
    shown = table[BY_CODE].head(MAX_PAGE_CODES).copy()
    shown["share"] = [f"{v:.2%}" if isinstance(v, float) else v for v in shown["share"]]
    more = len(table) - len(shown)
    tail = f"<p class='more'>{more:,} more codes (the Excel report lists them all)</p>"
    return frame_html(shown, ("code", "display", "suggestion", "suggested_display")) + (
        tail if more > 0 else ""
    )


def chart_svg(content: ReportContent) -> str:
    """Two bar charts side by side as inline SVG: rows per reason, and the most frequent
    failing codes (log-scaled when the counts span more than two decades)."""
    reasons = [(reason, count, _kind(reason)) for reason, count in content.reasons.items()]
    failing = content.failing().head(CHART_CODES)
    codes = [
        (str(visible(code)), int(count), "invalid")
        for code, count in zip(failing["code"], failing["count"], strict=True)
    ]
    left = _bars("Rows per reason", reasons, 0)
    right = _bars("Most frequent failing codes", codes, 470) if codes else ""
    height = 40 + 22 * max(len(reasons), len(codes), 1)
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' role='img' width='940' height='{height}' "
        f"viewBox='0 0 940 {height}'><title>Rows per reason and most frequent failing "
        f"codes</title>{left}{right}</svg>"
    )


def _bars(title: str, bars: list[tuple[str, int, str]], x0: int) -> str:
    """One titled group of horizontal bars, labels on the left and counts at the end."""
    counts = [count for _, count, _ in bars]
    logged = log_scale(counts)
    top = max(counts, default=1) or 1

    def width(count: int) -> float:
        if count <= 0:
            return 0.0
        if logged:
            return 250 * (1 + math.log10(count)) / (1 + math.log10(top))
        return 250 * count / top

    scale = " (log scale)" if logged else ""
    parts = [f"<text class='title' x='{x0}' y='16'>{escape(title + scale)}</text>"]
    for i, (label, count, kind) in enumerate(bars):
        y = 30 + 22 * i
        shown = label if len(label) <= 22 else label[:21] + "…"
        parts.append(
            f"<text x='{x0 + 150}' y='{y + 13}' text-anchor='end'>{escape(shown)}</text>"
            f"<rect class='bar {kind}' x='{x0 + 156}' y='{y}' width='{width(count):.1f}' "
            f"height='16' rx='2' fill='{BAR_COLOURS[kind]}'><title>{escape(label)}: "
            f"{count:,}</title></rect>"
            f"<text x='{x0 + 160 + width(count):.1f}' y='{y + 13}'>{count:,}</text>"
        )
    return "<g>" + "".join(parts) + "</g>"


def _kind(reason: str) -> str:
    if reason == "valid":
        return "valid"
    return "warning" if reason == "inactive" else "invalid"
