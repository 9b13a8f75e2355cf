"""ServerPanel: start and stop the embedded FHIR server from a notebook."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from workbench.errors import WorkbenchError
from workbench.notebook import views
from workbench.server.embedded import ServerHandle
from workbench.workbench import Workbench


class ServerPanel(w.VBox):
    """Start/stop buttons, and the base URL, token and a copyable curl example when running."""

    def __init__(self, wb: Workbench, *, port: int = 0, token: str | None = None) -> None:
        self.wb = wb
        self.port = port
        self.token = token
        self.handle: ServerHandle | None = None
        self.start = w.Button(description="Start server", button_style="success")
        self.stop = w.Button(description="Stop server", button_style="danger", disabled=True)
        self.info = w.HTML(views.message("Stopped.", views.GREY))
        self.curl = w.Textarea(disabled=False, layout=w.Layout(width="98%", height="70px"))
        super().__init__([w.HBox([self.start, self.stop]), self.info, self.curl])
        self.add_class("workbench-server-panel")
        self.start.on_click(self._start)
        self.stop.on_click(self._stop)

    def _start(self, _: Any = None) -> None:
        if self.handle is not None:
            return
        try:
            self.handle = self.wb.serve(port=self.port, token=self.token)
        except WorkbenchError as exc:
            self.info.value = views.message(exc.text)
            return
        self.info.value = (
            f"<div>Serving FHIR R4 at <code>{views.esc(self.handle.url)}</code>"
            f"</div><div>token: <code>{views.esc(self.handle.token)}</code></div>"
        )
        self.curl.value = self.handle.curl_example()
        self.start.disabled, self.stop.disabled = True, False

    def _stop(self, _: Any = None) -> None:
        if self.handle is None:
            return
        self.handle.stop()
        self.handle = None
        self.info.value = views.message("Stopped.", views.GREY)
        self.curl.value = ""
        self.start.disabled, self.stop.disabled = False, True
