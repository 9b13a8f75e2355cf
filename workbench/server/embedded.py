"""Run the server in a background thread of the current process (notebooks, tests)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import uvicorn

from workbench.errors import WorkbenchError
from workbench.server.app import DEFAULT_BASE, create_app
from workbench.server.auth import new_token
from workbench.server.offload import Limits
from workbench.server.protocol import http_protocol
from workbench.terminology.cache_ends import parse_duration

if TYPE_CHECKING:
    from workbench.service import ServiceHolder, TerminologyService

START_TIMEOUT = 15.0
MASK = "•" * 12


class ServerHandle:
    """A running embedded server: ``.url``, ``.r5_url``, ``.docs_url``, ``.token``,
    ``.stop()``; a context manager. It runs the same FastAPI app as ``server.py``
    (``create_app``)."""

    def __init__(
        self,
        server: uvicorn.Server,
        thread: threading.Thread,
        url: str,
        token: str,
        r5_url: str | None = None,
    ) -> None:
        self._server = server
        self._thread = thread
        self.url = url
        self.token = token
        #: The same data in FHIR R5 (``server/r5.py``): ``/fhir/R5`` beside ``/fhir/R4``.
        self.r5_url = r5_url

    @property
    def docs_url(self) -> str:
        """The interactive API documentation (Swagger UI; opening it needs no token)."""
        return f"{self.url}/docs"

    @property
    def running(self) -> bool:
        """True until the server has stopped."""
        return self._thread.is_alive()

    def curl_example(self, *, reveal: bool = True) -> str:
        """A ready-to-paste curl command that validates a code; ``reveal=False`` writes
        ``$WORKBENCH_TOKEN`` instead of the token (for anything that gets saved or shared)."""
        token = self.token if reveal else "$WORKBENCH_TOKEN"
        quote = "'" if reveal else '"'
        return (
            f"curl -H {quote}Authorization: Bearer {token}{quote} '{self.url}/ValueSet/"
            "$validate-code?url=http://hl7.org/fhir/ValueSet/administrative-gender"
            "&system=http://hl7.org/fhir/administrative-gender&code=female'"
        )

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and release the port."""
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<ServerHandle {self.url} ({state})>"

    def _repr_html_(self) -> str:
        state = "running" if self.running else "stopped"
        return (
            f"<p>FHIR terminology server <b>{state}</b> at <code>{self.url}</code> "
            f'(<a href="{self.docs_url}" target="_blank">API docs</a>)<br>'
            f"token: <code>{MASK}</code> (in <code>.token</code>; not shown, so that a "
            "saved notebook does not keep it)</p>"
        )


def serve(
    workbench: TerminologyService | ServiceHolder,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    base: str = DEFAULT_BASE,
    data_dir: str | Path | None = None,
    log_level: str = "warning",
    cache_idle: float | str | None = None,
) -> ServerHandle:
    """Start serving ``workbench`` on ``host:port`` (0 picks a free port) in a thread;
    ``cache_idle`` (seconds, or a text such as ``"8h"``) is how long a client cache lives
    unused (ValueError when it is no duration)."""
    token = token or new_token()
    limits = None if cache_idle is None else Limits(cache_idle_seconds=parse_duration(cache_idle))
    app = create_app(workbench, token=token, base=base, data_dir=data_dir, limits=limits)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",  # the app closes its connections when the server stops (closing.py)
        access_log=False,
        http=http_protocol(),
        ws="none",  # no WebSocket upgrade: such a request is answered as plain HTTP
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"workbench-server-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise WorkbenchError(f"The server did not start on {host}:{port}")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    root = f"http://{shown}:{bound}"
    r5_base = app.state.r5_base
    r5_url = None if r5_base is None else root + r5_base
    return ServerHandle(server, thread, root + app.state.base, token, r5_url)
