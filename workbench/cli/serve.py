"""Serve FHIR R4 terminology from the workbench: what ``python server.py`` and ``workbench serve``
run (one option parser, one function)."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

import uvicorn

from workbench import Workbench, WorkbenchError, unpacking
from workbench.content import default_content
from workbench.extras import MissingExtraError
from workbench.releases import grammar, kinds
from workbench.server import create_app
from workbench.server.auth import new_token
from workbench.server.offload import Limits
from workbench.server.protocol import http_protocol
from workbench.server.request_ids import RequestIdFilter
from workbench.server.workers import WorkersFailed, serve_workers, worker_count
from workbench.terminology.cache_ends import parse_duration

# How long a stop (SIGTERM, SIGINT) waits for requests in flight before cancelling them.
GRACEFUL_SECONDS = 30


def parse_args(argv: list[str] | None = None, prog: str | None = None) -> argparse.Namespace:
    """Read the command line (``prog`` names the command in the help)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        epilog="example: %(prog)s --port 8080 --load my-valuesets/",
        description="Serve the workbench's value sets and code systems as a FHIR R4 "
        "terminology server (ValueSet/$validate-code, $expand, CodeSystem/$lookup, "
        "$validate-code, $subsumes, and read/create/update/delete/search).",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    parser.add_argument("--base", default="/fhir/R4", help="base path (default /fhir/R4)")
    parser.add_argument(
        "--root-path",
        default="",
        help="the path prefix a reverse proxy strips before forwarding (e.g. /terminology); "
        "links and Location headers carry it",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="folder that persists writes (a SQLite database in it); loaded again at the "
        "next start",
    )
    parser.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="a postgresql:// URL: keep writes in that database, shared by every server "
        "given it (see docs/server/fleet.md); --data then holds only the client caches",
    )
    parser.add_argument(
        "--token", default=None, help="bearer token (default: $WORKBENCH_TOKEN, else a random one)"
    )
    _add_content_options(parser)
    _add_limit_options(parser)
    parser.add_argument(
        "--no-default-content",
        action="store_true",
        help="do not load the default content (the value sets the package ships)",
    )
    add_workers_option(parser)
    return parser.parse_args(argv)


def _add_content_options(parser: argparse.ArgumentParser) -> None:
    """``--load``, ``--package``, ``--release`` and ``--release-cache``."""
    parser.add_argument(
        "--load",
        action="append",
        default=[],
        metavar="PATH",
        help="also load a file, folder, Bundle or .tgz package (repeatable)",
    )
    parser.add_argument(
        "--package",
        action="append",
        default=[],
        metavar="NAME#VERSION",
        help="also load a FHIR package, installing it into the package cache "
        "if needed (repeatable)",
    )
    parser.add_argument(
        "--release",
        action="append",
        default=[],
        metavar="PATH[|VERSION]",
        help="also load a terminology release folder or zip ("
        + ", ".join(kind.title for kind in kinds.release_kinds())
        + "), its kind detected from its files and imported once into the release "
        "cache; '|VERSION' overrides its version (repeatable)",
    )
    parser.add_argument(
        "--release-cache",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="where releases are imported (default: $WORKBENCH_RELEASE_CACHE, "
        "else ~/.cache/workbench/releases)",
    )


def _add_limit_options(parser: argparse.ArgumentParser) -> None:
    """``--grammar-limit``, ``--unpack-limit`` and ``--limit``."""
    parser.add_argument(
        "--grammar-limit",
        action="append",
        default=[],
        metavar="LANGUAGE.LIMIT=VALUE",
        help="change a limit on the expressions read (LANGUAGE ecl, scg for post-coordinated "
        "expressions, ucum, or fhirpath; LIMIT length, depth or terms), e.g. ecl.length=50000 "
        "(repeatable; defaults in docs/terminologies/releases.md)",
    )
    parser.add_argument(
        "--unpack-limit",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a limit on what the archives loaded at start unpack to (release zips, "
        "package tarballs): member_bytes, resource_bytes, total_bytes, ratio, ratio_bytes; "
        "sizes may end in K, M, G or T, e.g. member_bytes=16G (repeatable; defaults in "
        "docs/terminologies/releases.md)",
    )
    parser.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a limit on the work of one operation call, e.g. seconds=10, steps=1000000, "
        "tx_resources=200, tx_resource_bytes=1000000 "
        "(repeatable; defaults in docs/server/limits.md)",
    )
    parser.add_argument(
        "--cache-idle",
        type=_duration,
        default=None,
        metavar="DURATION",
        help="how long a client cache ($cache-control, X-Cache-Id) lives unused: seconds, or "
        "a number ending in m, h or d, e.g. 90m, 8h (default 4h; any request naming the "
        "cache, $cache-control?mode=check included, keeps it alive; the same as --limit "
        "cache_idle_seconds=SECONDS)",
    )


def _duration(text: str) -> float:
    """``--cache-idle``'s seconds."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_workers_option(parser: argparse.ArgumentParser) -> None:
    """``--workers N|auto``."""
    parser.add_argument(
        "--workers",
        type=worker_count,
        default=1,
        metavar="N",
        help="serve from N processes sharing what is loaded (auto: one per core; default 1); "
        "writes reach every process before they are answered, through the --data folder (a "
        "temporary one, removed at exit, when none is given)",
    )


def operation_limits(args: argparse.Namespace) -> Limits:
    """The limits of ``--limit`` and ``--cache-idle`` (ValueError naming a bad one)."""
    limits = Limits.from_options(args.limit)
    if args.cache_idle is not None:
        limits = dataclasses.replace(limits, cache_idle_seconds=args.cache_idle)
    return limits


def configure_logging() -> None:
    """Log at INFO to stderr, each line naming its request's ``X-Request-Id`` (``-`` for a
    line written outside a request)."""
    logging.basicConfig(
        level=logging.INFO, format="%(levelname)s %(name)s [%(request_id)s]: %(message)s"
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(RequestIdFilter())


def print_banner(args: argparse.Namespace, base: str, r5_base: str | None, token: str) -> None:
    """Print where the server answers (R4, and R5 beside it), its token and a curl example."""
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{args.port}{base}"
    print(f"\nFHIR R4 terminology server: {url}")
    if r5_base is not None:  # the same data in R5 (workbench/server/r5.py)
        print(f"The same in FHIR R5: http://{host}:{args.port}{r5_base}")
    if args.root_path.strip("/"):
        print(f"Behind the proxy its base path is {args.root_path.rstrip('/')}{base}")
    print(f"API documentation (OpenAPI, no token needed): {url}/docs")
    print(f"Access token: {token}")
    if args.workers > 1:
        print(f"Workers: {args.workers} processes")
    print(
        "Try it:\n  curl -H 'Authorization: Bearer "
        + token
        + "' '"
        + url
        + "/ValueSet/$validate-code?url=http://hl7.org/fhir/ValueSet/administrative-gender"
        "&system=http://hl7.org/fhir/administrative-gender&code=female'\n",
        flush=True,
    )


def serve(args: argparse.Namespace, temporary: list[Path]) -> int:
    """Load the content, print how to call the server, and serve until interrupted (a
    temporary data folder it makes is added to ``temporary``)."""
    configure_logging()
    token = args.token or os.environ.get("WORKBENCH_TOKEN") or new_token()
    wb = Workbench()
    try:
        grammar.configure(grammar.GrammarLimits.from_options(args.grammar_limit))
        unpacking.configure(unpacking.UnpackLimits.from_options(args.unpack_limit))
        limits = operation_limits(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        if not args.no_default_content:
            print(wb.load(default_content()))
        for source in args.load:
            print(wb.load(source))
        for ref in args.package:
            print(wb.install_package(ref))
        for release in args.release:
            path, _, version = release.partition("|")
            print(wb.load_release(path, version=version or None, cache_dir=args.release_cache))
        data_dir = args.data
        if data_dir is None and args.workers > 1:
            # the workers see each other's writes through a data folder: a passing one
            data_dir = Path(tempfile.mkdtemp(prefix="workbench-writes-"))
            temporary.append(data_dir)
        app = create_app(
            wb.service,
            token=token,
            base=args.base,
            data_dir=data_dir,
            database=args.database,
            limits=limits,
        )
    except (WorkbenchError, MissingExtraError) as exc:  # (psycopg for --database)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # What is loaded lives as long as the server: keep it out of the collector's full passes
    # (on a large terminology one pass takes long enough to show in request latency).
    gc.freeze()
    print_banner(args, app.state.base, app.state.r5_base, token)
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        root_path=args.root_path.rstrip("/"),
        log_level="info",
        access_log=False,
        http=http_protocol(),
        ws="none",  # no WebSocket upgrade: such a request is answered as plain HTTP
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
    )
    try:
        stopped_by = serve_workers(config, args.workers)
    except WorkersFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if stopped_by:
        print(f"Stopped by {stopped_by}; requests in flight were answered.", flush=True)
    return 0


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """Serve as ``serve`` does; remove the temporary data folder it made, if any."""
    temporary: list[Path] = []
    try:
        return serve(parse_args(argv, prog), temporary)
    finally:
        for folder in temporary:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
