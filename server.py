"""Serve FHIR R4 terminology from the workbench: ``python server.py --help``."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from pathlib import Path

import uvicorn

from workbench import Workbench, WorkbenchError
from workbench.releases import grammar
from workbench.server import create_app
from workbench.server.auth import new_token
from workbench.server.protocol import http_protocol

ROOT = Path(__file__).resolve().parent


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Read the command line."""
    parser = argparse.ArgumentParser(
        description="Serve the workbench's value sets and code systems as a FHIR R4 "
        "terminology server (ValueSet/$validate-code, $expand, CodeSystem/$lookup, "
        "$validate-code, $subsumes, and read/create/update/delete/search)."
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    parser.add_argument("--base", default="/fhir/R4", help="base path (default /fhir/R4)")
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="folder that persists writes; loaded again at the next start",
    )
    parser.add_argument(
        "--token", default=None, help="bearer token (default: $WORKBENCH_TOKEN, else a random one)"
    )
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
        help="also load a terminology release folder or zip (SNOMED CT RF2, LOINC, ICD-10-CM, "
        "RxNorm RRF), its kind detected from its files and imported once into the release "
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
    parser.add_argument(
        "--grammar-limit",
        action="append",
        default=[],
        metavar="LANGUAGE.LIMIT=VALUE",
        help="change a limit on the expressions read (LANGUAGE ecl, scg for post-coordinated "
        "expressions, or ucum; LIMIT length, depth or terms), e.g. ecl.length=50000 "
        "(repeatable; defaults in the README)",
    )
    parser.add_argument(
        "--no-default-content",
        action="store_true",
        help="do not load the shipped valuesets/ folder",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Load the content, print how to call the server, and serve until interrupted."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    token = args.token or os.environ.get("WORKBENCH_TOKEN") or new_token()
    wb = Workbench()
    try:
        grammar.configure(grammar.GrammarLimits.from_options(args.grammar_limit))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        if not args.no_default_content:
            print(wb.load(ROOT / "valuesets"))
        for source in args.load:
            print(wb.load(source))
        for ref in args.package:
            print(wb.install_package(ref))
        for release in args.release:
            path, _, version = release.partition("|")
            print(wb.load_release(path, version=version or None, cache_dir=args.release_cache))
        app = create_app(wb, token=token, base=args.base, data_dir=args.data)
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # What is loaded lives as long as the server: keep it out of the collector's full passes
    # (on a large terminology one pass takes long enough to show in request latency).
    gc.freeze()
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{args.port}{app.state.base}"
    print(f"\nFHIR R4 terminology server: {url}")
    print(f"Access token: {token}")
    print(
        "Try it:\n  curl -H 'Authorization: Bearer "
        + token
        + "' '"
        + url
        + "/ValueSet/$validate-code?url=http://hl7.org/fhir/ValueSet/administrative-gender"
        "&system=http://hl7.org/fhir/administrative-gender&code=female'\n",
        flush=True,
    )
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="info",
        access_log=False,
        http=http_protocol(),
        ws="none",  # no WebSocket upgrade: such a request is answered as plain HTTP
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
