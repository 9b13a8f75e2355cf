"""The ``workbench`` command (Click, with Rich for the progress bar): each command builds a
Workbench from the content options and calls its public methods; exit codes 0 (done, or the
check passed), 1 (the check failed), 2 (a usage or input error, one line on stderr), 141
(stdout's reader left, as with ``| head``: nothing more is written)."""

from __future__ import annotations

import csv
import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import orjson

from workbench.cli import bindings, reading, validate, view
from workbench.cli.content import build_workbench, content_options
from workbench.errors import WorkbenchError

CONTENT = ("load", "package", "release", "release_cache", "no_default_content")
#: The exit code when stdout's reader left: 128 + SIGPIPE, what a shell reports for a
#: process that signal ended.
SIGPIPE_EXIT = 141


def _fails_cleanly(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn the workbench's and the reader's errors (and a missing optional dependency, such
    as openpyxl for Excel) into one line and exit code 2."""

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        try:
            result = command(**kwargs)
            sys.stdout.flush()  # (a reader that left is found here, not at exit)
            return result
        except BrokenPipeError:  # the reader left (``| head``): no message, as cat or grep
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(SIGPIPE_EXIT)
        except (WorkbenchError, reading.InputError, OSError, ImportError) as exc:
            text = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
            click.echo(f"error: {text.splitlines()[0] if text else type(exc).__name__}", err=True)
            sys.exit(2)

    return wrapper


def _workbench(kwargs: dict[str, Any]) -> Any:
    return build_workbench(*(kwargs.pop(name) for name in CONTENT))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Validate, expand, look up and translate FHIR terminology, and run SQL on FHIR views,
    from the command line."""


@cli.command(
    "validate",
    epilog="example: workbench validate patients.parquet --column gender "
    "--valueset http://hl7.org/fhir/ValueSet/administrative-gender --fail-under 99",
)
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--code", "--column", "column", required=True, help="the column of codes (Python's code=)"
)
@click.option("--valueset", help="the value set's canonical URL")
@click.option("--system", help="a code system URL: validate against all of it")
@click.option("--system-column", help="a column holding each row's system")
@click.option(
    "--display", "--display-column", "display_column", help="a column of displays to check"
)
@click.option(
    "--report",
    type=click.Path(path_type=Path),
    help="write the summary: .json, .html (one self-contained page) or .xlsx (two sheets)",
)
@click.option(
    "--fail-under",
    type=click.FloatRange(0, 100),
    default=100.0,
    show_default=True,
    help="exit 1 when the valid share (percent) is below this",
)
@content_options
@_fails_cleanly
def validate_command(**kwargs: Any) -> None:
    """Validate a column of a CSV, TSV, Parquet, NDJSON or Excel file (or a folder of
    Parquet files), read in streamed batches; print the summary."""
    url, system = kwargs.pop("valueset"), kwargs.pop("system")
    if (url is None) == (system is None):
        raise click.UsageError("give one of --valueset URL or --system URL")
    report = kwargs.pop("report")
    if report is not None and report.suffix.lower() not in validate.REPORTS:
        raise click.UsageError(f"--report {report}: write one of " + ", ".join(validate.REPORTS))
    table = reading.open_table(kwargs.pop("file"))
    table.require(kwargs["column"])  # a column, or a dotted path into a column of objects
    table.require(kwargs["system_column"], kwargs["display_column"], dotted=False)
    wb = _workbench(kwargs)
    valueset = url or {"resourceType": "ValueSet", "compose": {"include": [{"system": system}]}}
    # an unknown value set or code system: exit 2 naming it, before any batch
    if url is not None:
        wb.resource("ValueSet", url)
    else:
        wb.resource("CodeSystem", system)
    job = validate.Job(
        table, kwargs["column"], valueset, system, kwargs["system_column"], kwargs["display_column"]
    )
    tally = validate.run(wb, job)
    click.echo("\n".join(tally.lines(kwargs["fail_under"])))
    if report is not None:
        about = {"file": str(table.path), "column": job.column, "valueset": url, "system": system}
        validate.write_report(report, tally, about)
    sys.exit(0 if tally.passed(kwargs["fail_under"]) else 1)


@cli.command(
    epilog="example: workbench expand "
    "http://hl7.org/fhir/ValueSet/administrative-gender --format csv"
)
@click.argument("url")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "json", "ndjson"]),
    default="csv",
    show_default=True,
)
@content_options
@_fails_cleanly
def expand(url: str, fmt: str, **kwargs: Any) -> None:
    """Expand a value set: its codes on stdout."""
    expansion = _workbench(kwargs).expand(url)
    if fmt == "json":
        click.echo(orjson.dumps(expansion.to_valueset(), option=orjson.OPT_INDENT_2).decode())
        return
    frame = expansion.frame
    if fmt == "csv":
        frame.to_csv(sys.stdout, index=False, quoting=csv.QUOTE_MINIMAL)
        return
    for record in frame.to_dict(orient="records"):
        click.echo(orjson.dumps(record).decode())


@cli.command(epilog="example: workbench lookup http://hl7.org/fhir/administrative-gender male")
@click.argument("system")
@click.argument("code")
@content_options
@_fails_cleanly
def lookup(system: str, code: str, **kwargs: Any) -> None:
    """Look a code up in a code system: its display and properties."""
    found = _workbench(kwargs).lookup(system, code)
    click.echo(f"{found.code}\t{found.display or ''}\t{found.name}")
    for name, value in found.properties:
        click.echo(f"  {name}: {value}")


@cli.command(
    epilog="example: workbench translate codes.csv --column code "
    "--map http://example.org/ConceptMap/local-to-loinc > translated.csv"
)
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--code", "--column", "column", required=True, help="the column of codes (Python's code=)"
)
@click.option("--map", "map_url", required=True, help="the ConceptMap's canonical URL")
@content_options
@_fails_cleanly
def translate(file: Path, column: str, map_url: str, **kwargs: Any) -> None:
    """Translate a column through a ConceptMap: CSV of code and targets on stdout."""
    table = reading.open_table(file)
    table.require(column, dotted=False)
    wb = _workbench(kwargs)
    header = True
    for frame in reading.batches(table, [column]):
        result = wb.translate_column(frame[column], map_url)
        result.insert(0, column, frame[column])
        result.to_csv(sys.stdout, index=False, header=header)
        header = False


@cli.command(
    "view",
    epilog="example: workbench view conditions-view.json export/ -o conditions.parquet "
    "--package hl7.fhir.r4.examples#4.0.1",
)
@click.argument("definition", metavar="VIEW.json", type=click.Path(path_type=Path))
@click.argument("data", metavar="DATA...", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="write the rows to a .csv, .parquet or .ndjson file (default: CSV on stdout)",
)
@content_options
@_fails_cleanly
def view_command(**kwargs: Any) -> None:
    """Run a SQL on FHIR ViewDefinition over FHIR data (NDJSON, .ndjson.gz, JSON files,
    Bundles, folders of them) and write its rows as the view makes them. The terminology
    functions (memberOf, display ...) answer from the content options.

    -o by extension: .csv (lists and structs as JSON text), .parquet (nested types kept),
    .ndjson (one object per row, every column, nulls as null); without -o, CSV on stdout.
    One line on stderr: rows written, resources read, read problems, resources skipped.

    Exit 0: written, every resource read; 1: written, but lines that could not be read or
    resources the view skipped; 2: a usage error, a missing or bad file, an invalid view.
    """
    output = kwargs.pop("output")
    view.check_output(output)
    definition = view.check_inputs(kwargs.pop("definition"), kwargs["data"])
    outcome = view.run(_workbench(kwargs), definition, list(kwargs.pop("data")), output)
    sys.stdout.flush()
    click.echo(outcome.line(), err=True)
    sys.exit(0 if outcome.clean else 1)


@cli.command(
    "check-bindings",
    epilog="example: workbench check-bindings export/ --package hl7.fhir.r4.core#4.0.1 "
    "--package hl7.fhir.uv.ips#2.0.0 --report bindings.html",
)
@click.argument("data", metavar="DATA...", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--profile",
    "profiles",
    multiple=True,
    metavar="URL",
    help="check against this profile (repeatable); default: the profiles each resource "
    "declares in meta.profile",
)
@click.option(
    "--strength",
    default="required,extensible",
    show_default=True,
    help="the binding strengths checked, comma-separated",
)
@click.option(
    "--report",
    type=click.Path(path_type=Path),
    help="write the report: .html, .json (the rows), .xlsx, .csv or .parquet",
)
@content_options
@_fails_cleanly
def check_bindings_command(**kwargs: Any) -> None:
    """Check every bound coded value of FHIR data (NDJSON, .ndjson.gz, JSON files, Bundles,
    folders of them) against the value set its element is bound to, by the base
    definitions and the profiles the resources declare. The StructureDefinitions and value
    sets come from the content options (--package hl7.fhir.r4.core#4.0.1 and the IGs').

    Without --report, the rows with an error or a warning are written as CSV on stdout.
    One line on stderr: resources, bound values, errors, warnings, unchecked, problems.

    Exit 0: nothing found at error severity; 1: something was; 2: a usage error, a missing
    or bad file, no StructureDefinitions loaded.
    """
    report = kwargs.pop("report")
    data = kwargs.pop("data")
    strengths = bindings.check_arguments(data, kwargs.pop("strength"), report)
    profiles = list(kwargs.pop("profiles"))
    found = bindings.run(_workbench(kwargs), list(data), strengths, profiles, report)
    sys.stdout.flush()
    click.echo(bindings.summary_line(found, report), err=True)
    sys.exit(1 if len(found.errors) else 0)


@cli.command(epilog="example: workbench install hl7.fhir.r4.core#4.0.1")
@click.argument("reference", metavar="PACKAGE")
@content_options
@_fails_cleanly
def install(reference: str, **kwargs: Any) -> None:
    """Install a FHIR package (NAME#VERSION) into the package cache and load it."""
    click.echo(str(_workbench(kwargs).install_package(reference)))


@cli.command("import", epilog="example: workbench import SnomedCT_InternationalRF2.zip")
@click.argument("release_path", metavar="RELEASE")
@content_options
@_fails_cleanly
def import_release(release_path: str, **kwargs: Any) -> None:
    """Import a terminology release (folder or zip, PATH[|VERSION]) into the release cache."""
    path, _, version = release_path.partition("|")
    cache = kwargs["release_cache"]
    summary = _workbench(kwargs).load_release(path, version=version or None, cache_dir=cache)
    click.echo(str(summary))


@cli.command(
    context_settings={
        "ignore_unknown_options": True,
        "allow_extra_args": True,
        "help_option_names": [],
    },
    add_help_option=False,
)
@click.pass_context
def serve(ctx: click.Context) -> None:
    """Serve as a FHIR R4 terminology server (the options of server.py; --help lists them)."""
    from workbench.cli.serve import main as serve_main

    sys.exit(serve_main(list(ctx.args), prog="workbench serve"))


def main() -> None:
    """The console script: Click's usage errors exit 2 with one line."""
    cli(prog_name="workbench")


if __name__ == "__main__":
    main()
