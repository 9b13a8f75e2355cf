"""CodeValidator: pick a value set, type a code (or paste a Coding), see the result after a
short pause."""

from __future__ import annotations

import threading
from typing import Any

import ipywidgets as w
import orjson

from workbench.errors import CodeSystemNotFoundError, ValueSetNotFoundError, WorkbenchError
from workbench.notebook import views
from workbench.notebook.pickers import ValueSetPicker
from workbench.terminology.validate.coding import ValidationResult
from workbench.workbench import Workbench

CODE, CODING = "Code", "Coding"
TYPING = "typing…"


class CodeValidator(w.VBox):
    """Validate as you type: value set (a search-as-you-type picker), then either a code
    (with system, display) or a Coding as JSON, and whether abstract codes are allowed.

    The two inputs are exclusive: ``mode`` says which one is checked (typing a Coding
    switches to it, clearing it switches back) and the other one's boxes are disabled.
    Typing waits ``delay`` seconds after the last keystroke and shows "typing…" meanwhile
    (``delay=0`` checks at once; ``flush()`` checks now). A failing code shows "did you
    mean …?" when a likely intended code exists; nothing is corrected.

    ``.result`` holds the last ValidationResult (None before anything was entered or when
    the input was not usable); ``.output`` shows it, coloured.
    """

    def __init__(self, wb: Workbench, valueset: str | None = None, *, delay: float = 0.4) -> None:
        self.wb = wb
        self.delay = delay
        self.result: ValidationResult | None = None
        self.suggestion: Any = None
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        wide = w.Layout(width="98%")
        self.picker = ValueSetPicker(wb, value=valueset, description="Value set")
        self.valueset = self.picker.value_widget
        self.mode = w.ToggleButtons(options=[CODE, CODING], value=CODE, description="Check")
        self.system = w.Text(
            placeholder="system URI (optional when the value set has one)",
            description="System",
            layout=wide,
        )
        self.code = w.Text(placeholder="code", description="Code")
        self.display = w.Text(placeholder="display (optional)", description="Display", layout=wide)
        self.coding = w.Textarea(
            placeholder='or paste a Coding: {"system": "…", "code": "…"}',
            description="Coding",
            layout=wide,
        )
        self.abstract = w.Checkbox(description="abstract codes allowed", value=False)
        self.using = w.HTML()
        self.output = w.HTML()
        super().__init__(
            [
                self.picker,
                self.mode,
                self.system,
                self.code,
                self.display,
                self.coding,
                self.abstract,
                self.using,
                self.output,
            ]
        )
        self.add_class("workbench-code-validator")
        for control in (self.valueset, self.abstract):
            control.observe(self._now, "value")
        for control in (self.system, self.code, self.display):
            control.observe(self._typed, "value")
        self.coding.observe(self._coding_typed, "value")
        self.mode.observe(self._mode_changed, "value")
        self._show_mode()
        self._update()

    # --- events -----------------------------------------------------------------------

    def _now(self, _: Any = None) -> None:
        self._cancel()
        self._update()

    def _typed(self, _: Any = None) -> None:
        if self.delay <= 0 or not self.valueset.value:
            self._now()
            return
        self._cancel()
        self.result = None
        self.output.value = views.message(TYPING, views.GREY)
        with self._lock:
            self._timer = threading.Timer(self.delay, self._update)
            self._timer.daemon = True
            self._timer.start()

    def _coding_typed(self, _: Any = None) -> None:
        wanted = CODING if self.coding.value.strip() else CODE
        if self.mode.value != wanted:
            self.mode.value = wanted  # observed: shows the mode and checks
        else:
            self._typed()

    def _mode_changed(self, _: Any = None) -> None:
        self._show_mode()
        self._now()

    def _show_mode(self) -> None:
        coding = self.mode.value == CODING
        for box in (self.system, self.code, self.display):
            box.disabled = coding
        self.using.value = views.message(
            "Checking the Coding; the code, system and display boxes are not used."
            if coding
            else "Checking the code (with the system and display boxes).",
            views.GREY,
        )

    def _cancel(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def flush(self) -> None:
        """Check what is typed now, without waiting for the pause."""
        self._now()

    @property
    def pending(self) -> bool:
        """True while a check waits for typing to pause."""
        with self._lock:
            return self._timer is not None and self._timer.is_alive()

    # --- the check --------------------------------------------------------------------

    def _update(self, _: Any = None) -> None:
        with self._lock:
            self._timer = None
        self.result = None
        self.suggestion = None
        if not self.valueset.value:
            self.output.value = views.message("Pick a value set.", views.GREY)
            return
        kwargs: dict[str, Any] = {"abstract": self.abstract.value}
        if self.mode.value == CODING:
            try:
                coding = orjson.loads(self.coding.value)
            except orjson.JSONDecodeError as exc:
                self.output.value = views.message(f"The Coding is not valid JSON: {exc}")
                return
            if not isinstance(coding, dict):
                self.output.value = views.message("The Coding must be a JSON object.")
                return
            kwargs["coding"] = coding
        elif self.code.value:
            kwargs.update(
                code=self.code.value,
                system=self.system.value.strip() or None,
                display=self.display.value or None,
            )
        else:
            self.output.value = views.message("Enter a code.", views.GREY)
            return
        try:
            self.result = self.wb.validate_code(self.valueset.value, **kwargs)
        except WorkbenchError as exc:
            self.output.value = views.message(_with_hint(self.wb, exc))
            return
        if self.result.issue == "unknown-valueset":  # an import that is not loaded
            said = _with_hint(self.wb, ValueSetNotFoundError(""), str(self.result.message))
            self.output.value = views.message(said)
            return
        # the code probably meant, as Workbench.validate_code found it (never applied)
        self.suggestion = self.result.suggestion
        self.output.value = views.result_html(self.result, self.suggestion)


def _with_hint(wb: Workbench, exc: WorkbenchError, text: str | None = None) -> str:
    """An engine error's text (or ``text``), with "Did you mean …?" for an unknown value
    set or code system URL."""
    from workbench.bulk.suggest import url_hint

    hint = None
    if isinstance(exc, ValueSetNotFoundError):
        known = {
            str(vs["url"]): vs.get("title") or vs.get("name")
            for vs in wb.registry.all("ValueSet")
            if vs.get("url")
        }
        hint = url_hint(getattr(exc, "url", "") or _quoted_url(text or exc.text), known)
    elif isinstance(exc, CodeSystemNotFoundError):
        known = {
            str(cs["url"]): cs.get("title") or cs.get("name")
            for cs in wb.registry.all("CodeSystem")
            if cs.get("url")
        }
        hint = url_hint(getattr(exc, "url", "") or _quoted_url(text or exc.text), known)
    said = text or exc.text
    return f"{said}. {hint}" if hint else said


def _quoted_url(text: str) -> str:
    """The first URL in an error's text."""
    for word in text.split():
        if "://" in word or word.startswith("urn:"):
            return word.strip("'\".,()")
    return ""
