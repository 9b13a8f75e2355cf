"""The options every command takes to choose its content (``--load``, ``--package``,
``--release``), and the Workbench they build."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from workbench.content import default_content
from workbench.workbench import Workbench


def content_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the content options to a click command."""
    options = [
        click.option(
            "--load",
            multiple=True,
            metavar="PATH",
            help="also load a file, folder, Bundle or .tgz package (repeatable)",
        ),
        click.option(
            "--package",
            multiple=True,
            metavar="NAME#VERSION",
            help="also load a FHIR package, installing it into the package cache if needed",
        ),
        click.option(
            "--release",
            multiple=True,
            metavar="PATH[|VERSION]",
            help="also load a terminology release folder or zip, imported once into the cache",
        ),
        click.option(
            "--release-cache",
            type=click.Path(path_type=Path),
            default=None,
            help="where releases are imported",
        ),
        click.option(
            "--no-default-content",
            is_flag=True,
            help="do not load the default content (the value sets the package ships)",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def build_workbench(
    load: tuple[str, ...],
    package: tuple[str, ...],
    release: tuple[str, ...],
    release_cache: Path | None,
    no_default_content: bool,
) -> Workbench:
    """A Workbench with the default content (unless turned off) and what the options name,
    loaded as ``server.py`` loads it (no progress bars: the command shows its own)."""
    wb = Workbench()
    if not no_default_content:
        wb.load(default_content(), progress=False)
    for source in load:
        wb.load(source, progress=False)
    for ref in package:
        wb.install_package(ref, progress=False)
    for item in release:
        path, _, version = item.partition("|")
        wb.load_release(path, version=version or None, cache_dir=release_cache, progress=False)
    return wb
