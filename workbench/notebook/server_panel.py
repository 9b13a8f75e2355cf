"""ServerPanel: start and stop the embedded FHIR server from a notebook."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from workbench.errors import WorkbenchError
from workbench.notebook import views
from workbench.server.embedded import MASK, ServerHandle
from workbench.workbench import Workbench


class ServerPanel(w.VBox):
    """Start/stop buttons; when running, the base URL with a link to the interactive API
    documentation (``/docs``), the access token (masked: ``reveal``
    shows it until hidden again) and a curl example that reads the token from
    ``$WORKBENCH_TOKEN`` (with the ``export`` line to set it while the token is shown).

    The token is never part of the panel's HTML, so it never ends up in a saved notebook's
    outputs; while hidden it is in no widget at all.
    """

    def __init__(self, wb: Workbench, *, port: int = 0, token: str | None = None) -> None:
        self.wb = wb
        self.port = port
        self.token = token
        self.handle: ServerHandle | None = None
        self.start = w.Button(description="Start server", button_style="success")
        self.stop = w.Button(description="Stop server", button_style="danger", disabled=True)
        self.info = w.HTML(views.message("Stopped.", views.GREY))
        self.reveal = w.ToggleButton(
            value=False, description="Show token", icon="eye", disabled=True
        )
        self.token_box = w.Text(
            value=MASK, description="Token", disabled=True, layout=w.Layout(width="60%")
        )
        self.curl = w.Textarea(disabled=False, layout=w.Layout(width="98%", height="90px"))
        super().__init__(
            [
                w.HBox([self.start, self.stop]),
                self.info,
                w.HBox([self.token_box, self.reveal]),
                self.curl,
            ]
        )
        self.add_class("workbench-server-panel")
        self.start.on_click(self._start)
        self.stop.on_click(self._stop)
        self.reveal.observe(self._show_token, "value")
        self._clear()

    def _start(self, _: Any = None) -> None:
        if self.handle is not None:
            return
        try:
            self.handle = self.wb.serve(port=self.port, token=self.token)
        except WorkbenchError as exc:
            self.info.value = views.message(exc.text)
            return
        url, docs = views.esc(self.handle.url), views.esc(self.handle.docs_url)
        self.info.value = (
            f"<div>Serving FHIR R4 at <code>{url}</code> · "
            f'<a href="{docs}" target="_blank" rel="noopener">API docs</a> '
            "(try requests with the token: <i>Authorize</i>)</div>"
        )
        self.start.disabled, self.stop.disabled = True, False
        self.reveal.disabled = False
        self._show_token()

    def _show_token(self, _: Any = None) -> None:
        handle = self.handle
        if handle is None:
            return
        shown = bool(self.reveal.value)
        self.reveal.description = "Hide token" if shown else "Show token"
        self.reveal.icon = "eye-slash" if shown else "eye"
        self.token_box.value = handle.token if shown else MASK
        self.token_box.disabled = not shown
        example = handle.curl_example(reveal=False)
        if shown:
            example = f"export WORKBENCH_TOKEN='{handle.token}'\n{example}"
        self.curl.value = example

    def _clear(self) -> None:
        self.reveal.value = False
        self.reveal.disabled = True
        self.token_box.value = ""
        self.token_box.disabled = True
        self.curl.value = ""

    def _stop(self, _: Any = None) -> None:
        if self.handle is None:
            return
        self.handle.stop()
        self.handle = None
        self.info.value = views.message("Stopped.", views.GREY)
        self.start.disabled, self.stop.disabled = False, True
        self._clear()
