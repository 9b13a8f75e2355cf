"""Pickers that scale to thousands of value sets: a search-as-you-type box over title, name,
URL and version, narrowing a list whose labels are unique."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import ipywidgets as w

from workbench.notebook import views
from workbench.resources import latest


def valueset_options(resources: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """``(label, value, haystack)`` for each value set: the label is its title (else name,
    else URL), made unique with the version and then the URL where titles repeat; the value
    is the URL for the latest version and ``url|version`` for older ones; the haystack is
    what a search matches (title, name, URL and version, case-folded)."""
    rows = [vs for vs in resources if vs.get("url")]
    by_url: dict[str, list[Any]] = {}
    for vs in rows:
        by_url.setdefault(str(vs["url"]), []).append(vs)
    newest = {url: latest(group) for url, group in by_url.items()}
    titles: dict[str, int] = {}
    for vs in rows:
        title = _title(vs)
        titles[title] = titles.get(title, 0) + 1
    options = []
    seen: set[str] = set()
    for vs in rows:
        url, version, title = str(vs["url"]), vs.get("version"), _title(vs)
        label = title
        if titles[title] > 1:
            label = f"{title} ({version or '-'})"
        if label in seen:
            label = f"{title} ({version or '-'}) · {url}"
        seen.add(label)
        value = url if newest[url] is vs or not version else f"{url}|{version}"
        hay = " ".join(str(x) for x in (title, vs.get("name") or "", url, version or "")).casefold()
        options.append((label, value, hay))
    options.sort(key=lambda option: option[0].casefold())
    return options


def _title(vs: Mapping[str, Any]) -> str:
    return str(next(t for t in (vs.get("title"), vs.get("name"), vs.get("url")) if t))


def codesystem_options(wb: Any) -> list[tuple[str, str, str]]:
    """``(label, url, haystack)`` for each loaded code system (FHIR resources, latest
    version, and terminologies loaded from release files): ``Title — url (N concepts)``."""
    found: dict[str, tuple[str, int | None, str]] = {}
    by_url: dict[str, list[Any]] = {}
    for cs in wb.registry.all("CodeSystem"):
        if cs.get("url"):
            by_url.setdefault(str(cs["url"]), []).append(cs)
    for url, group in by_url.items():
        cs = latest(group) or group[-1]
        count = cs.get("count")
        if not isinstance(count, int):
            count = _count(cs.get("concept") or ()) if cs.get("content") != "not-present" else 0
        title = str(cs.get("title") or cs.get("name") or url)
        found[url] = (title, count, str(cs.get("version") or ""))
    for provider in wb.terminology.providers():
        found.setdefault(provider.url, (provider.url, len(provider), str(provider.version or "")))
    options = []
    for url, (title, count, version) in found.items():
        counted = f" ({count:,} concepts)" if count is not None else ""
        label = f"{title} — {url}{counted}" if title != url else f"{url}{counted}"
        hay = f"{title} {url} {version}".casefold()
        options.append((label, url, hay))
    options.sort(key=lambda option: option[0].casefold())
    return options


def _count(concepts: Any) -> int:
    """Concepts in a CodeSystem's nested ``concept`` list."""
    return sum(1 + _count(c.get("concept") or ()) for c in concepts)


class Picker(w.VBox):
    """A search box (a combobox offering the labels as you type) over ``options``
    (``(label, value, haystack)``), narrowing the list below it to the matches: every word
    typed must occur in the haystack (at most ``limit`` listed).

    ``value_widget`` is the list (a Dropdown: ``.value`` is the chosen value, ``.options``
    the ``(label, value)`` pairs shown); ``search`` is the text box.
    """

    noun = "items"

    def __init__(
        self,
        options: list[tuple[str, str, str]],
        *,
        value: str | None = None,
        description: str = "Choose",
        limit: int = 500,
    ) -> None:
        self.limit = limit
        self.all = list(options)
        if value is not None and value not in {v for _, v, _ in self.all}:
            self.all.append((value, value, value.casefold()))  # e.g. a url|version asked for
        self.search = w.Combobox(
            placeholder="type to search title, name, URL or version",
            options=[label for label, _, _ in self.all],
            ensure_option=False,
            description="Find",
            layout=w.Layout(width="98%"),
        )
        self.value_widget = w.Dropdown(
            options=[(label, v) for label, v, _ in self.all[:limit]],
            value=None,
            description=description,
            layout=w.Layout(width="98%"),
        )
        self.status = w.HTML()
        super().__init__([self.search, self.value_widget, self.status])
        self.add_class("workbench-picker")
        if value is not None:
            if value not in self._values():
                self.value_widget.options = [
                    *self.value_widget.options,
                    next((label, v) for label, v, _ in self.all if v == value),
                ]
            self.value_widget.value = value
        self.search.observe(self._searched, "value")
        self._status(len(self.all))

    def _values(self) -> set[str]:
        return {v for _, v in self.value_widget.options}

    def _searched(self, _: Any = None) -> None:
        text = self.search.value.strip()
        exact = next((v for label, v, _ in self.all if label == text), None)
        self._narrow(text)
        if exact is not None:
            self.value_widget.value = exact

    def _narrow(self, text: str) -> None:
        words = text.casefold().split()
        matches = [(label, v) for label, v, hay in self.all if all(word in hay for word in words)]
        shown = matches[: self.limit]
        current = self.value_widget.value
        if current is not None and current not in {v for _, v in shown}:
            shown.append(next((label, v) for label, v, _ in self.all if v == current))
        self.value_widget.options = shown
        if current is not None:
            self.value_widget.value = current
        self._status(len(matches))

    def _status(self, matches: int) -> None:
        total = len(self.all)
        shown = min(matches, self.limit)
        more = f", the first {shown:,} listed" if matches > shown else ""
        self.status.value = views.message(
            f"{matches:,} of {total:,} {self.noun} match{more}", views.GREY
        )


class ValueSetPicker(Picker):
    """A Picker over the loaded value sets (title, name, URL, version)."""

    noun = "value sets"

    def __init__(
        self,
        wb: Any,
        *,
        value: str | None = None,
        description: str = "Value set",
        limit: int = 500,
    ) -> None:
        self.wb = wb
        super().__init__(
            valueset_options(wb.registry.all("ValueSet")),
            value=value,
            description=description,
            limit=limit,
        )


class CodeSystemPicker(Picker):
    """A Picker over the loaded code systems, labelled with titles and concept counts."""

    noun = "code systems"

    def __init__(self, wb: Any, *, description: str = "System", limit: int = 500) -> None:
        self.wb = wb
        super().__init__(codesystem_options(wb), description=description, limit=limit)
