"""MapExplorer: find a ConceptMap, see it as a table, translate a code as you type."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from workbench.errors import WorkbenchError
from workbench.notebook import views
from workbench.terminology.conceptmap import Translation
from workbench.workbench import Workbench


class Debouncer:
    """Run ``action`` once, ``delay`` seconds after the last call (at once when ``delay`` is
    0): typing "male" asks the engine once, not four times."""

    def __init__(self, delay: float, action: Callable[[], None]) -> None:
        self.delay = delay
        self.action = action
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def __call__(self) -> None:
        """Schedule the action (cancelling the one scheduled before)."""
        if self.delay <= 0:
            self.action()
            return
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.delay, self.action)
            self._timer.daemon = True
            self._timer.start()

    @property
    def pending(self) -> bool:
        """Whether an action is scheduled and has not run yet."""
        timer = self._timer
        return timer is not None and timer.is_alive()

    def wait(self, timeout: float = 5.0) -> None:
        """Wait (at most ``timeout`` seconds) for the scheduled action to finish."""
        timer = self._timer
        if timer is not None:
            timer.join(timeout)


class MapExplorer(w.VBox):
    """Search the loaded ConceptMaps by url, name or title; show the selected one's
    metadata and mappings (the first ``limit`` rows of ``wb.mappings``); translate the
    code typed in ``code`` (optionally in ``system``, or target to source with
    ``reverse``) through it, ``debounce`` seconds after the last keystroke.

    ``.translation`` holds the last Translation (None before a code was typed or when the
    engine refused the input); ``.output`` shows it.

    In a notebook::

        explorer = MapExplorer(wb)
        explorer.show("http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2")
    """

    def __init__(self, wb: Workbench, *, limit: int = 50, debounce: float = 0.3) -> None:
        self.wb = wb
        self.limit = limit
        self.translation: Translation | None = None
        wide = w.Layout(width="98%")
        self.search = w.Text(placeholder="search url, name or title", description="Find")
        self.select = w.Select(options=[], rows=6, layout=wide)
        self.metadata = w.HTML()
        self.table = w.HTML(layout=wide)
        self.code = w.Text(placeholder="type a code", description="Code", continuous_update=True)
        self.system = w.Text(placeholder="system URI (optional)", description="System", layout=wide)
        self.reverse = w.Checkbox(description="reverse (target → source)", value=False)
        self.output = w.HTML(layout=wide)
        self.debouncer = Debouncer(debounce, self._translate)
        super().__init__(
            [
                self.search,
                self.select,
                self.metadata,
                self.table,
                w.HBox([self.code, self.reverse]),
                self.system,
                self.output,
            ]
        )
        self.add_class("workbench-map-explorer")
        self.search.observe(self._refresh_list, "value")
        self.select.observe(self._on_select, "value")
        for control in (self.code, self.system, self.reverse):
            control.observe(lambda _: self.debouncer(), "value")
        self._refresh_list()
        self._on_select()
        wb.registry.subscribe(lambda _change: self._refresh_list())

    def show(self, url: str) -> None:
        """Select a map by ``url`` (its latest version) or ``url|version``; an implicit map
        (``http://snomed.info/sct?fhir_cm=…``) is added to the list."""
        self.search.value = ""
        wanted = url
        if url not in dict(self.select.options).values():
            resource = self.wb.conceptmaps_for(url)
            found = [m for m in resource if m.get("url") == url.partition("|")[0]]
            if not found:
                self.output.value = views.message(f"ConceptMap {url} not found")
                return
            version = found[-1].get("version")
            wanted = f"{found[-1]['url']}|{version}" if version else found[-1]["url"]
            if wanted not in dict(self.select.options).values():
                label = found[-1].get("title") or found[-1].get("name") or url
                self.select.options = [*self.select.options, (f"{label} (implicit)", wanted)]
        self.select.value = wanted

    def _refresh_list(self, _: Any = None) -> None:
        frame = self.wb.conceptmaps
        text = self.search.value.strip().casefold()
        options = []
        if not frame.empty:
            for url, version, name, title in zip(
                frame["url"], frame["version"], frame["name"], frame["title"], strict=True
            ):
                version = None if views.blank(version) else str(version)
                label = next(str(t) for t in (title, name, url) if not views.blank(t))
                hay = " ".join(str(v) for v in (url, name, title) if not views.blank(v))
                if text and text not in hay.casefold():
                    continue
                options.append(
                    (f"{label} ({version or '-'})", f"{url}|{version}" if version else url)
                )
        current = self.select.value
        self.select.options = sorted(options, key=lambda option: option[1])
        if current in dict(options).values():
            self.select.value = current

    def _on_select(self, _: Any = None) -> None:
        canonical = self.select.value
        if not canonical:
            self.metadata.value = ""
            self.table.value = views.message("Pick a map.", views.GREY)
            self.output.value = ""
            return
        url, _, version = canonical.partition("|")
        try:
            resource = next(
                m
                for m in self.wb.conceptmaps_for(url)
                if m.get("url") == url and (not version or m.get("version") == version)
            )
            rows = self.wb.mappings(url, version or None)
        except (StopIteration, WorkbenchError) as exc:
            text = exc.text if isinstance(exc, WorkbenchError) else f"ConceptMap {canonical}"
            self.table.value = views.long_text(text, views.RED)
            return
        more = f", the first {self.limit} shown" if len(rows) > self.limit else ""
        self.metadata.value = (
            views.metadata_html(resource) + f"<div>{len(rows)} mappings{more}</div>"
        )
        shown = rows[
            ["source_code", "source_display", "equivalence", "target_code", "target_display"]
        ]
        self.table.value = views.wrapped(views.frame_table(shown, self.limit))
        self.debouncer()

    def _translate(self) -> None:
        self.translation = None
        code = self.code.value.strip()
        if not self.select.value:
            self.output.value = views.message("Pick a map.", views.GREY)
            return
        if not code:
            self.output.value = views.message("Type a code.", views.GREY)
            return
        try:
            self.translation = self.wb.translate(
                code,
                system=self.system.value.strip() or None,
                url=self.select.value,
                reverse=self.reverse.value,
            )
        except WorkbenchError as exc:
            self.output.value = views.long_text(exc.text, views.RED)
            return
        self.output.value = translation_html(self.translation)


def translation_html(t: Translation) -> str:
    """A translation, coloured: green when it maps, red when it does not; its matches."""
    colour, word = (views.GREEN, "mapped") if t.result else (views.RED, "not mapped")
    parts = [
        f"<div class='workbench-result' data-result='{str(t.result).lower()}'"
        f" style='border-left:6px solid {colour};padding:4px 10px'>"
        f"<b style='color:{colour}'>{word}</b>"
    ]
    if t.message:
        parts.append(views.long_text(t.message))
    parts.append("</div>")
    if t.match_list:
        parts.append(views.wrapped(views.frame_table(t.matches)))
    return "".join(parts)
