"""Serve FHIR R4 terminology from the workbench: ``python server.py --help`` (the same as
``workbench serve``; the code is workbench/cli/serve.py)."""

from __future__ import annotations

import sys

from workbench.cli.serve import main, parse_args, serve

__all__ = ["main", "parse_args", "serve"]

if __name__ == "__main__":
    sys.exit(main())
