"""Compact HTML summaries for notebooks (plain functions; no widgets, no engine logic)."""

from __future__ import annotations

import html
from typing import Any

TYPES = ("ValueSet", "CodeSystem", "ConceptMap")


def workbench_html(wb: Any) -> str:
    """A Workbench at a glance: resources per type with their versions, terminologies loaded
    from release files, and running servers (the token is never shown)."""
    rows = []
    for kind in TYPES:
        resources = wb.registry.all(kind)
        by_url: dict[str, list[Any]] = {}
        for resource in resources:
            by_url.setdefault(str(resource.get("url")), []).append(resource)
        several = sum(1 for group in by_url.values() if len(group) > 1)
        versions = f" ({several:,} with several versions)" if several else ""
        rows.append((f"{kind}s", f"{len(resources):,}{versions}"))
    for provider in wb.terminology.providers():
        # a grammar's codes are not listed: what it has made so far is no count of them
        held = f"{len(provider):,} concepts" if provider.enumerable else "codes by grammar"
        version = html.escape(str(provider.version or "-"))
        rows.append((html.escape(str(provider.url)), f"{held}, version <code>{version}</code>"))
    servers = [ref() for ref in wb.__dict__.get("_servers", [])]
    running = [s for s in servers if s is not None and s.running]
    rows.append(
        (
            "Server",
            ", ".join(f"running at <code>{html.escape(s.url)}</code>" for s in running)
            or "not running (<code>wb.serve()</code> or <code>ServerPanel(wb)</code>)",
        )
    )
    body = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{k}</th><td style='text-align:left'>"
        f"{v}</td></tr>"
        for k, v in rows
    )
    return f"<div class='workbench-summary'><b>Workbench</b><table>{body}</table></div>"
