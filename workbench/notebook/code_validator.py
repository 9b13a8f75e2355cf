"""CodeValidator: pick a value set, type a code (or paste a Coding), see the result at once."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import orjson

from workbench.errors import WorkbenchError
from workbench.notebook import views
from workbench.terminology.validation import ValidationResult
from workbench.workbench import Workbench


class CodeValidator(w.VBox):
    """Validate as you type: value set, system, code, display (or a Coding as JSON), abstract.

    ``.result`` holds the last ValidationResult (None before anything was entered or when the
    input was not usable); ``.output`` shows it, coloured.
    """

    def __init__(self, wb: Workbench, valueset: str | None = None) -> None:
        self.wb = wb
        self.result: ValidationResult | None = None
        options = sorted(
            (f"{vs.get('title') or vs.get('name') or vs['url']}", str(vs["url"]))
            for vs in wb.registry.all("ValueSet")
            if vs.get("url")
        )
        wide = w.Layout(width="98%")
        self.valueset = w.Dropdown(
            options=options, value=valueset, description="Value set", layout=wide
        )
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
        self.output = w.HTML()
        controls = (self.valueset, self.system, self.code, self.display, self.coding, self.abstract)
        super().__init__([*controls, self.output])
        self.add_class("workbench-code-validator")
        for control in controls:
            control.observe(self._update, "value")
        self._update()

    def _update(self, _: Any = None) -> None:
        self.result = None
        if not self.valueset.value:
            self.output.value = views.message("Pick a value set.", views.GREY)
            return
        kwargs: dict[str, Any] = {"abstract": self.abstract.value}
        if self.coding.value.strip():
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
            self.output.value = views.message(exc.text)
            return
        self.output.value = views.result_html(self.result)
