"""What one operation call costs the server's own code, in process, without HTTP.

Run from the repository's root::

    .venv/bin/python benchmarks/profile_hot_path.py
    .venv/bin/python benchmarks/profile_hot_path.py --profile "GET encounter"
    .venv/bin/python benchmarks/profile_hot_path.py --against ../other-checkout

The app is built as ``bench_server.py`` serves it (``Workbench().load(valuesets/)`` plus a
synthetic code system of ``--big-concepts`` concepts, ``create_app`` with a token, base
``/fhir/R4``, the collector frozen once loaded; the scenarios ``bench_server.py`` serves
without the answer memo, ``GET gender made`` and ``GET encounter made``, from a second app
with ``memo_bytes=0``) and called as uvicorn calls it:
``await app(scope, receive, send)`` with the HTTP scope of each workbench scenario of
``bench_server.py`` (the query string, ``Authorization: Bearer``, the Parameters body of a
POST), ``--calls`` times in a row, ``--rounds`` times. Printed: microseconds per call (the
minimum and the median of the rounds: on a shared machine the minimum is the steadier
figure), after one call per scenario whose status and body length are shown.

``--profile NAME`` then runs that scenario under cProfile and prints the functions that take
the most time (``--sort``: tottime or cumulative). ``--against PATH`` measures another
checkout in a child process, alternating with this one (``--repeat`` times each), and prints
both side by side: a before/after comparison in one run. No targets: the HTTP figures and
their targets are ``bench_server.py``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "profile-hot-path-token"
Scope = dict[str, Any]


def scope_of(path: str, body: bytes | None) -> Scope:
    """The HTTP scope uvicorn gives the app for a request of ``wrk`` to ``path``."""
    where, _, query = path.partition("?")
    headers = [(b"host", b"127.0.0.1:8080"), (b"authorization", f"Bearer {TOKEN}".encode())]
    if body is not None:
        headers += [
            (b"content-length", str(len(body)).encode()),
            (b"content-type", b"application/fhir+json"),
        ]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8080),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "GET" if body is None else "POST",
        "root_path": "",
        "path": where,
        "raw_path": where.encode(),
        "query_string": query.encode(),
        "headers": headers,
        "state": {},
    }


async def call(app: Any, scope: Scope, body: bytes | None) -> tuple[int, bytes]:
    """One call: the status and the body sent."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body or b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(dict(scope), receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def calls(app: Any, scope: Scope, body: bytes | None, count: int) -> float:
    """Microseconds per call over ``count`` calls in a row."""

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body or b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        return None

    start = time.perf_counter()
    for _ in range(count):
        await app(dict(scope), receive, send)
    return (time.perf_counter() - start) / count * 1e6


def build_apps(root: Path, concepts: int) -> dict[bool, Any]:
    """The apps of the checkout ``root`` as ``bench_server.serve_workbench`` builds them (one
    worker), by whether they have the answer memo (a checkout from before the memo: the
    same app twice, without one)."""
    sys.path.insert(0, str(root))
    import workbench
    from workbench import Workbench
    from workbench.server import create_app
    from workbench.server.offload import Limits

    print(f"  workbench from {Path(workbench.__file__).parent}", file=sys.stderr)

    wb = Workbench()
    wb.load(root / "valuesets", progress=False)
    wb.load(bench_server().big_codesystem(concepts), progress=False)
    apps = {True: create_app(wb, token=TOKEN, base=bench_server().BASE)}
    try:
        limits = Limits(memo_bytes=0)
    except TypeError:  # no memo in that checkout
        apps[False] = apps[True]
    else:
        apps[False] = create_app(wb, token=TOKEN, base=bench_server().BASE, limits=limits)
    gc.freeze()  # as server.py does once the content is loaded
    return apps


def bench_server() -> Any:
    """``bench_server.py`` of this checkout (its scenarios, its synthetic code system)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_server as module

    return module


def measure(args: argparse.Namespace) -> dict[str, list[float]]:
    """Microseconds per call of every workbench scenario, one figure per round."""
    apps = build_apps((args.root or ROOT).resolve(), args.big_concepts)
    scenarios = [s for s in bench_server().SCENARIOS if s.workbench and s.workers == 1]
    app_of = {sc.name: apps[getattr(sc, "memo", True)] for sc in scenarios}
    loop = asyncio.new_event_loop()
    for sc in scenarios:
        app = app_of[sc.name]
        status, body = loop.run_until_complete(call(app, scope_of(sc.path, sc.body), sc.body))
        print(f"  {sc.name}: {status}, {len(body)} bytes", file=sys.stderr)
        loop.run_until_complete(calls(app, scope_of(sc.path, sc.body), sc.body, 200))  # warm
    figures: dict[str, list[float]] = {sc.name: [] for sc in scenarios}
    for _ in range(args.rounds):
        for sc in scenarios:
            scope, app = scope_of(sc.path, sc.body), app_of[sc.name]
            figures[sc.name].append(loop.run_until_complete(calls(app, scope, sc.body, args.calls)))
    if args.profile:
        sc = next(s for s in scenarios if s.name == args.profile)
        profiler = cProfile.Profile()
        profiler.enable()
        scope, app = scope_of(sc.path, sc.body), app_of[sc.name]
        loop.run_until_complete(calls(app, scope, sc.body, args.calls))
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats(args.sort).print_stats(args.top)
    return figures


def show(columns: dict[str, dict[str, list[float]]]) -> None:
    """One line per scenario: min and median µs per call of each checkout."""
    names = list(next(iter(columns.values())))
    head = "".join(f"{label[-24:]:>28}" for label in columns)
    print(f"{'µs per call (min / median)':28}{head}")
    for name in names:
        cells = "".join(
            f"{min(c[name]):>20.1f} / {statistics.median(c[name]):5.1f}" for c in columns.values()
        )
        print(f"{name:28}{cells}")


def against(args: argparse.Namespace) -> None:
    """This checkout and ``args.against``, alternating in child processes."""
    checkouts = {"this checkout": ROOT, str(args.against): args.against.resolve()}
    columns: dict[str, dict[str, list[float]]] = {label: {} for label in checkouts}
    for _ in range(args.repeat):
        for label, checkout in checkouts.items():
            script = checkout / "benchmarks" / Path(__file__).name
            if not script.is_file():  # an older checkout: this script, on its code
                script = Path(__file__).resolve()
            cmd = [sys.executable, str(script), "--json", "--root", str(checkout)]
            cmd += ["--rounds", str(args.rounds), "--calls", str(args.calls)]
            cmd += ["--big-concepts", str(args.big_concepts)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=checkout)
            for name, values in json.loads(done.stdout).items():
                columns[label].setdefault(name, []).extend(values)
    show(columns)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--big-concepts", type=int, default=20_000)
    parser.add_argument("--profile", metavar="NAME", help="profile this scenario")
    parser.add_argument("--sort", default="tottime", choices=("tottime", "cumulative"))
    parser.add_argument("--top", type=int, default=40, help="profile lines shown")
    parser.add_argument("--against", type=Path, help="another checkout, measured alternately")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each with --against")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.against is not None:
        against(args)
        return 0
    figures = measure(args)
    if args.json:
        print(json.dumps(figures))
    else:
        show({"this checkout": figures})
    return 0


if __name__ == "__main__":
    sys.exit(main())
