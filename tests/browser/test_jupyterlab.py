"""Real browser check: every notebook runs in JupyterLab, driven by Debian's Chromium.

A headless JupyterLab serves a temporary copy of the repository layout (so ``../valuesets``
resolves and the outputs the browser saves never touch the repository) on a free 127.0.0.1
port with a random token. Playwright drives ``/usr/bin/chromium`` (never a downloaded browser)
to open each notebook, clear its outputs, run all cells from the Run menu and save it. The test
then checks the saved notebook (every code cell ran, no error output) and what the browser shows
(no traceback, every widget output rendered as widget DOM, not as a fallback), types codes into
the CodeValidator, and writes screenshots: one per notebook to ``build/screenshots/``
(``<notebook>.png``), and one per workbench widget and theme to ``docs/``
(``code-validator-light.png``, ``code-validator-dark.png``, ``column-report-light.png`` …):
after the light-theme pictures it switches JupyterLab to its dark theme, changes the
ColumnReport's reason filter (so that its chart is drawn again, now dark, and shows that it
follows the filter), photographs the widgets again and switches back.

Chromium missing is a failure, never a skip: ``make test`` installs it (``make chromium``), or
``apt-get install chromium``; ``$CHROMIUM`` points at another build.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
from playwright.sync_api import (
    BrowserContext,
    Locator,
    Page,
    Request,
    ViewportSize,
    sync_playwright,
)
from playwright.sync_api import Error as PlaywrightError

from workbench import Workbench

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SCREENSHOTS = ROOT / "build" / "screenshots"
DOCS = ROOT / "docs"
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
CHROMIUM = Path(os.environ.get("CHROMIUM") or "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT: ViewportSize = {"width": 1400, "height": 900}
MAX_SCREENSHOT_HEIGHT = 16_000

# Every wait is bounded by one of these (seconds).
LAB_START_TIMEOUT = 60
LAB_STOP_TIMEOUT = 20
NOTEBOOK_OPEN_TIMEOUT = 60
RUN_ALL_TIMEOUT = 150
WIDGET_TIMEOUT = 20
ACTION_TIMEOUT = 30

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
STDERR_MIME = "application/vnd.jupyter.stderr"
WORKBENCH_WIDGETS = (
    "workbench-code-validator",
    "workbench-column-report",
    "workbench-valueset-browser",
    "workbench-server-panel",
)
WIDGET_FALLBACKS = ("Error displaying widget", "Loading widget", "Failed to load model")
ERROR_TEXT = re.compile(r"Traceback|\w*(Error|Exception|Warning)\b")
GENDER = "http://hl7.org/fhir/ValueSet/administrative-gender"
INVALID_CODE, VALID_CODE = "F", "female"

# Lab's copy of the repository: everything but version control, the venv, caches and outputs.
COPY_SKIP_AT_ROOT = {".git", ".venv", "build", "data", ".hypothesis"}
COPY_SKIP_ANYWHERE = re.compile(r"__pycache__|\.ipynb_checkpoints|.*\.egg-info|.*_cache|.*\.pyc")


def notebook_names() -> list[str]:
    return sorted(path.name for path in NOTEBOOKS.glob("*.ipynb"))


def notebooks_showing(widget: str) -> list[str]:
    """The notebooks whose code constructs ``widget`` (e.g. ``CodeValidator(``)."""
    found = []
    for name in notebook_names():
        cells = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))["cells"]
        if any(c["cell_type"] == "code" and f"{widget}(" in "".join(c["source"]) for c in cells):
            found.append(name)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def copy_layout(target: Path) -> None:
    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if COPY_SKIP_ANYWHERE.fullmatch(n)}
        if Path(folder) == ROOT:
            skipped |= COPY_SKIP_AT_ROOT & set(names)
        return skipped

    shutil.copytree(ROOT, target, ignore=ignore)


def write_json(path: Path, content: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content), encoding="utf-8")


class Lab:
    """A headless JupyterLab on 127.0.0.1, isolated from the user's Jupyter configuration."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.root = home / "layout"
        self.port = free_port()
        self.token = secrets.token_hex(24)
        self.base = f"http://127.0.0.1:{self.port}"
        copy_layout(self.root)
        config = home / "jupyter-config"
        settings = home / "lab-user-settings"
        # No announcements/news plugin; render every cell (no windowing) for full screenshots.
        write_json(
            config / "labconfig" / "page_config.json",
            {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}},
        )
        write_json(
            settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings",
            {"windowingMode": "none", "scrollPastEnd": False},
        )
        write_json(
            settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings",
            {"checkForUpdates": False, "fetchNews": "false"},
        )
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(config),
            "JUPYTER_DATA_DIR": str(home / "jupyter-data"),
            "JUPYTER_RUNTIME_DIR": str(home / "jupyter-runtime"),
            "IPYTHONDIR": str(home / "ipython"),
        }
        env.pop("JUPYTER_TOKEN", None)
        self.log_path = home / "lab.log"
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={home / 'lab-workspaces'}",
        ]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command,
                cwd=home,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def api(self, method: str, path: str, timeout: float = 5) -> Any:
        request = urllib.request.Request(
            self.base + path, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def wait_ready(self) -> None:
        deadline = time.monotonic() + LAB_START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"JupyterLab exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                self.api("GET", "/api/status", timeout=2)
                return
            except (OSError, urllib.error.URLError):
                time.sleep(0.25)
        pytest.fail(f"JupyterLab not ready after {LAB_START_TIMEOUT}s:\n{self.log_tail()}")

    def wait_kernel_idle(self, path: str) -> None:
        deadline = time.monotonic() + NOTEBOOK_OPEN_TIMEOUT
        while time.monotonic() < deadline:
            states = [
                s["kernel"]["execution_state"]
                for s in self.api("GET", "/api/sessions")
                if s["path"] == path and s.get("kernel")
            ]
            if states == ["idle"]:
                return
            time.sleep(0.25)
        pytest.fail(f"no idle kernel for {path} after {NOTEBOOK_OPEN_TIMEOUT}s:\n{self.log_tail()}")

    def shutdown_kernels(self) -> None:
        for kernel in self.api("GET", "/api/kernels"):
            self.api("DELETE", f"/api/kernels/{kernel['id']}", timeout=LAB_STOP_TIMEOUT)

    def stop(self) -> None:
        """Shut the server down through its API (kernels included), then make sure of it."""
        try:
            spawned = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            spawned = []
        if self.process.poll() is None:
            try:
                self.api("POST", "/api/shutdown")
            except (OSError, urllib.error.URLError):
                self.process.terminate()
            try:
                self.process.wait(LAB_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(LAB_STOP_TIMEOUT)
        _, alive = psutil.wait_procs(spawned, timeout=LAB_STOP_TIMEOUT)
        for process in alive:
            process.kill()
        psutil.wait_procs(alive, timeout=LAB_STOP_TIMEOUT)


@dataclass
class NotebookRun:
    """What one notebook did in the browser."""

    name: str
    problems: list[str] = field(default_factory=list)
    widgets: dict[str, int] = field(default_factory=dict)
    validator_results: list[tuple[str, str, str]] = field(default_factory=list)
    chart_filters: list[str] = field(default_factory=list)
    screenshots: list[Path] = field(default_factory=list)


def wait_until(page: Page, script: str, timeout: float, what: str, arg: Any = None) -> None:
    try:
        page.wait_for_function(script, arg=arg, timeout=timeout * 1000, polling=250)
    except PlaywrightError as exc:
        raise AssertionError(f"{what}: not within {timeout:.0f}s ({exc.message})") from None


def click_menu(page: Page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel").get_by_text(menu, exact=True).click()
    page.locator(".lm-Menu .lm-Menu-itemLabel").get_by_text(item, exact=True).click()


PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"

RUN_STATE = """() => {
  const prompts = [...document.querySelectorAll(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt')];
  const status = document.querySelector(
    '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');
  return {
    busy: prompts.some(p => p.textContent.includes('*')),
    numbered: prompts.filter(p => /\\[\\d+\\]/.test(p.textContent)).length,
    idle: status !== null && status.dataset.status === 'idle',
  };
}"""


class Session:
    """One JupyterLab and one Chromium; runs each notebook once, on demand."""

    def __init__(self, lab: Lab, context: BrowserContext, wb: Workbench) -> None:
        self.lab = lab
        self.context = context
        self.wb = wb
        self.runs: dict[str, NotebookRun | BaseException] = {}
        self.foreign_requests: list[str] = []
        context.on("request", self._record_request)

    def _record_request(self, request: Request) -> None:
        url = request.url
        if not url.startswith((self.lab.base + "/", "data:", "blob:", "about:")):
            self.foreign_requests.append(url)

    def run(self, name: str) -> NotebookRun:
        if name not in self.runs:
            try:
                self.runs[name] = self._run(name)
            except BaseException as exc:
                self.runs[name] = exc
                raise
        outcome = self.runs[name]
        if isinstance(outcome, BaseException):
            pytest.fail(f"{name} could not be run in the browser: {outcome}")
        return outcome

    def _run(self, name: str) -> NotebookRun:
        run = NotebookRun(name)
        page = self.context.new_page()
        page.set_viewport_size(VIEWPORT)
        page.set_default_timeout(ACTION_TIMEOUT * 1000)
        page.on("pageerror", lambda exc: run.problems.append(f"JavaScript error: {exc}"))
        try:
            self._open_and_run_all(page, name)
            saved = self._save(page, name)
            with contextlib.suppress(AssertionError):  # if not, rendered_problems says so
                wait_until(
                    page,
                    f"() => ![...document.querySelectorAll('{PANEL} .jp-OutputArea-output')]"
                    ".some(o => o.textContent.startsWith('Loading widget'))",
                    WIDGET_TIMEOUT,
                    f"{name}: widgets still loading",
                )
            run.problems += saved_problems(saved)
            run.problems += rendered_problems(page, saved)
            run.widgets = {c: page.locator(f"{PANEL} .{c}").count() for c in WORKBENCH_WIDGETS}
            fit_viewport(page)
            run.screenshots.append(page_screenshot(page, name))  # as Run All left it
            if run.widgets["workbench-code-validator"]:
                run.validator_results = self._use_code_validator(page)
            run.screenshots += widget_screenshots(page, run.widgets, "light")
            if any(run.widgets.values()):
                set_theme(page, "dark")
                try:
                    if run.widgets["workbench-column-report"]:
                        run.chart_filters = refilter_column_report(page)
                    run.screenshots += widget_screenshots(page, run.widgets, "dark")
                finally:
                    set_theme(page, "light")
        except BaseException:
            with contextlib.suppress(PlaywrightError):  # what the page showed when it failed
                fit_viewport(page)
                page_screenshot(page, name)
            raise
        finally:
            page.close()
            self.lab.shutdown_kernels()
        return run

    def _open_and_run_all(self, page: Page, name: str) -> None:
        workspace = re.sub(r"[^a-z0-9]+", "-", name.lower())
        page.goto(
            f"{self.lab.base}/lab/workspaces/{workspace}/tree/notebooks/{name}"
            f"?token={self.lab.token}"
        )
        page.locator(f"{PANEL} .jp-Cell").first.wait_for(timeout=NOTEBOOK_OPEN_TIMEOUT * 1000)
        dialogs = page.locator(".jp-Dialog")
        if dialogs.count():
            pytest.fail(f"{name}: a dialog opened with the notebook: {dialogs.inner_text()}")
        self.lab.wait_kernel_idle(f"notebooks/{name}")
        wait_until(
            page,
            f"() => document.querySelector('{PANEL} .jp-Notebook-ExecutionIndicator')"
            "?.dataset.status === 'idle'",
            NOTEBOOK_OPEN_TIMEOUT,
            f"{name}: the notebook does not show an idle kernel",
        )
        left = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
        if left.count():
            left.first.click()  # collapse the file browser: more room for the notebook
        click_menu(page, "Edit", "Clear Outputs of All Cells")
        wait_until(
            page,
            f"() => !document.querySelector('{PANEL} .jp-OutputArea-output')",
            ACTION_TIMEOUT,
            f"{name}: the saved outputs were not cleared",
        )
        click_menu(page, "Run", "Run All Cells")
        wait_until(
            page,
            f"() => {{ const s = ({RUN_STATE})(); return s.busy || s.numbered > 0; }}",
            ACTION_TIMEOUT,
            f"{name}: Run All Cells did not start",
        )
        deadline = time.monotonic() + RUN_ALL_TIMEOUT
        settled = 0
        while settled < 3:  # idle and no [*] on three polls in a row
            state = page.evaluate(RUN_STATE)
            settled = settled + 1 if state["idle"] and not state["busy"] else 0
            if time.monotonic() > deadline:
                raise AssertionError(f"{name}: still running after {RUN_ALL_TIMEOUT}s: {state}")
            page.wait_for_timeout(300)

    def _save(self, page: Page, name: str) -> dict[str, Any]:
        page.locator(f'{PANEL} .jp-Toolbar-item[data-jp-item-name="save"] jp-button').click()
        wait_until(
            page,
            "() => !document.querySelector('.lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-dirty')",
            ACTION_TIMEOUT,
            f"{name}: not saved",
        )
        saved: dict[str, Any] = json.loads(
            (self.lab.root / "notebooks" / name).read_text(encoding="utf-8")
        )
        return saved

    def _use_code_validator(self, page: Page) -> list[tuple[str, str, str]]:
        """Type an invalid and then a valid code; return (code, data-result, text) seen."""
        validator = page.locator(f"{PANEL} .workbench-code-validator").first
        vs = self.wb.resource("ValueSet", GENDER)
        label = str(vs.get("title") or vs.get("name") or vs["url"])
        validator.locator(".widget-textarea textarea").fill("")  # a Coding wins over the Code
        labelled_input(validator, "Display").fill("")
        validator.locator(".widget-checkbox input[type=checkbox]").uncheck()
        validator.locator(".widget-dropdown select").select_option(value=label)
        seen = []
        for code in (INVALID_CODE, VALID_CODE):
            expected = str(self.wb.validate_code(GENDER, code=code).result).lower()
            labelled_input(validator, "Code").fill(code)
            result = validator.locator(f".workbench-result[data-result='{expected}']")
            result.wait_for(timeout=WIDGET_TIMEOUT * 1000)
            seen.append((code, expected, result.inner_text()))
        return seen


def set_theme(page: Page, theme: str) -> None:
    """Switch JupyterLab's theme from its Settings menu and wait until the page shows it."""
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Settings", exact=True).click()
    page.locator(".lm-Menu .lm-Menu-itemLabel").get_by_text("Theme", exact=True).hover()
    page.locator(".lm-Menu .lm-Menu-itemLabel").get_by_text(THEMES[theme], exact=True).click()
    light = "true" if theme == "light" else "false"
    wait_until(
        page,
        f"() => document.body.dataset.jpThemeLight === '{light}'",
        ACTION_TIMEOUT,
        f"JupyterLab did not switch to the {theme} theme",
    )
    page.wait_for_timeout(500)


def widget_screenshots(page: Page, widgets: dict[str, int], theme: str) -> list[Path]:
    """``docs/<widget>-<theme>.png`` for each workbench widget shown (the first of each)."""
    DOCS.mkdir(exist_ok=True)
    taken = []
    for widget, count in widgets.items():
        if count:
            path = DOCS / f"{widget.removeprefix('workbench-')}-{theme}.png"
            page.locator(f"{PANEL} .{widget}").first.screenshot(path=path)
            taken.append(path)
    return taken


def refilter_column_report(page: Page) -> list[str]:
    """Pick another reason in the ColumnReport's filter and then the first one again; each
    change draws the chart anew (in the current theme). Returns the chart titles seen."""
    report = page.locator(f"{PANEL} .workbench-column-report").first
    select = report.locator(".widget-dropdown select").first
    options = select.locator("option").all_inner_texts()
    titles = []
    for option in (options[1] if len(options) > 1 else options[0], options[0]):
        select.select_option(label=option)
        chart = report.locator(".vega-embed")
        chart.first.wait_for(timeout=WIDGET_TIMEOUT * 1000)
        page.wait_for_timeout(1000)  # the chart is drawn after the output arrives
        titles.append(
            " / ".join(
                chart.first.locator("svg, canvas").evaluate_all(
                    "nodes => nodes.map(n => n.getAttribute('aria-label') || n.tagName)"
                )
            )
        )
    return titles


def labelled_input(widget: Locator, label: str) -> Locator:
    """The ``<input>`` of the ipywidgets Text whose description is ``label``."""
    row = widget.locator(".widget-text").filter(
        has=widget.page.locator("label.widget-label", has_text=re.compile(rf"^{label}$"))
    )
    return row.locator("input")


def saved_problems(notebook: dict[str, Any]) -> list[str]:
    """Errors, unexecuted cells and warnings in the notebook Lab saved after the run."""
    problems = []
    counts = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code" or not "".join(cell["source"]).strip():
            continue
        where = f"cell {index}"
        if cell.get("execution_count") is None:
            problems.append(f"{where} did not run")
        else:
            counts.append(cell["execution_count"])
        for output in cell.get("outputs", []):
            if output["output_type"] == "error":
                problems.append(f"{where} raised {output['ename']}: {output['evalue']}")
            elif output["output_type"] == "stream" and output["name"] == "stderr":
                text = "".join(output["text"])
                if ERROR_TEXT.search(text):
                    problems.append(f"{where} wrote to stderr: {text[:500]}")
    if counts != list(range(1, len(counts) + 1)):
        problems.append(f"execution counts are not 1..n in order: {counts}")
    return problems


def saved_widget_outputs(notebook: dict[str, Any]) -> int:
    return sum(
        1
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
        if output.get("data", {}).get(WIDGET_MIME, {}).get("model_id")
    )


def rendered_problems(page: Page, notebook: dict[str, Any]) -> list[str]:
    """Tracebacks in the page and widget outputs that did not render as widgets."""
    problems = []
    for text in page.locator(
        f'{PANEL} .jp-OutputArea-output[data-mime-type="{STDERR_MIME}"]'
    ).all_inner_texts():
        if ERROR_TEXT.search(text):
            problems.append(f"error output shown: {text[:500]}")
    typeset = page.locator(
        f'{PANEL} .jp-OutputArea-output[data-mime-type="text/html"] mjx-container'
    )
    if typeset.count():
        cell = typeset.first.locator("xpath=ancestor::div[contains(@class, 'jp-CodeCell')][1]")
        problems.append(
            f"{typeset.count()} formulas typeset inside HTML outputs, the first in cell "
            f"{cell.locator('.jp-InputPrompt').inner_text().strip()} (a '$' read as LaTeX; "
            "pd.set_option('display.html.use_mathjax', False) stops it for DataFrames)"
        )
    outputs = page.locator(f"{PANEL} .jp-OutputArea-output")
    for text in outputs.all_inner_texts():
        problems += [f"widget fallback shown: {text[:200]}" for f in WIDGET_FALLBACKS if f in text]
    # Widget outputs are rendered by the widget manager, without a data-mime-type attribute.
    expected = saved_widget_outputs(notebook)
    # (outputs nested in a widget, such as a chart in an Output widget, are the widget's own;
    # a Vega-Lite chart is drawn without a data-mime-type too, and is no widget)
    widgets = page.locator(
        f"{PANEL} .jp-OutputArea-output:not([data-mime-type])"
        ":not(.jupyter-widgets .jp-OutputArea-output):not(:has(> .vega-embed))"
    )
    if widgets.count() != expected:
        problems.append(f"{widgets.count()} widget outputs shown, {expected} in the notebook")
    for index in range(widgets.count()):
        output = widgets.nth(index)
        if "lm-mod-hidden" in (output.get_attribute("class") or "").split():
            # The kernel closed this widget (a finished tqdm bar with leave=False): the widget
            # manager hides a closed view's output. It must not show anything.
            if output.inner_text().strip():
                problems.append(f"closed widget output {index} shows {output.inner_text()!r}")
        elif not output.locator(".jupyter-widgets").count():
            problems.append(f"widget output {index} has no widget DOM: {output.inner_text()!r}")
        elif not output.bounding_box():
            problems.append(f"widget output {index} is not visible")
    return problems


def fit_viewport(page: Page) -> None:
    """Grow the viewport until the notebook needs no scrolling, and scroll it to the top, so
    that page and element screenshots show everything (Lab itself never scrolls the page)."""
    extra = page.evaluate(
        f"""() => {{
          const outer = document.querySelector('{PANEL} .jp-WindowedPanel-outer');
          return outer ? outer.scrollHeight - outer.clientHeight : 0;
        }}"""
    )
    height = min(VIEWPORT["height"] + int(extra), MAX_SCREENSHOT_HEIGHT)
    page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
    page.evaluate(
        f"""() => {{
          const outer = document.querySelector('{PANEL} .jp-WindowedPanel-outer');
          if (outer) outer.scrollTop = 0;
        }}"""
    )
    page.wait_for_timeout(500)


def page_screenshot(page: Page, name: str) -> Path:
    path = SCREENSHOTS / f"{Path(name).stem}.png"
    page.screenshot(path=path, full_page=True)
    return path


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory, default_wb: Workbench) -> Iterator[Session]:
    if not CHROMIUM.is_file() or not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"{CHROMIUM} is missing: the browser test needs Debian's Chromium. `make test` "
            "installs it (as root), or run `apt-get install chromium` (or set $CHROMIUM)."
        )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    home = tmp_path_factory.mktemp("jupyterlab")
    with contextlib.ExitStack() as stops:  # runs every stop, last started first
        lab = Lab(home)
        stops.callback(lab.stop)
        lab.wait_ready()
        playwright = sync_playwright().start()
        stops.callback(playwright.stop)
        context = playwright.chromium.launch_persistent_context(
            home / "chromium-profile",
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport=VIEWPORT,
            timeout=ACTION_TIMEOUT * 1000,
        )
        stops.callback(context.close)
        yield Session(lab, context, default_wb)


def test_the_notebooks_are_there() -> None:
    assert notebook_names(), f"no notebooks in {NOTEBOOKS}"


@pytest.mark.parametrize("name", notebook_names())
def test_notebook_runs_in_jupyterlab(session: Session, name: str) -> None:
    run = session.run(name)
    assert not run.problems, f"{name} in JupyterLab:\n" + "\n".join(run.problems)
    assert not session.foreign_requests, (
        f"the browser went off 127.0.0.1: {session.foreign_requests}"
    )
    for path in run.screenshots:
        assert path.stat().st_size > 0, path


def test_code_validator_validates_what_is_typed(session: Session) -> None:
    shown_in = notebooks_showing("CodeValidator")
    assert shown_in, "no notebook shows a CodeValidator"
    run = session.run(shown_in[0])
    assert run.widgets["workbench-code-validator"], f"{run.name}: the CodeValidator is not shown"
    (bad, bad_result, bad_text), (good, good_result, good_text) = run.validator_results
    assert (bad, bad_result) == (INVALID_CODE, "false")
    assert bad_text.split()[0] == "invalid", bad_text
    assert (good, good_result) == (VALID_CODE, "true")
    assert good_text.split()[0] == "valid", good_text
    assert "Female" in good_text, good_text  # the display the engine gives
    for theme in THEMES:
        assert (DOCS / f"code-validator-{theme}.png").stat().st_size > 0


def test_column_report_renders(session: Session) -> None:
    shown_in = notebooks_showing("ColumnReport")
    assert shown_in, "no notebook shows a ColumnReport"
    run = session.run(shown_in[0])
    assert run.widgets["workbench-column-report"], f"{run.name}: the ColumnReport is not shown"
    assert len(run.chart_filters) == 2, run.chart_filters  # the chart was drawn again
    for theme in THEMES:
        assert (DOCS / f"column-report-{theme}.png").stat().st_size > 0
