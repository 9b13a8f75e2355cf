"""``view(definition, data)``: a SQL on FHIR ViewDefinition run over FHIR data.

>>> rows = view(
...     {"resource": "Patient", "select": [{"column": [
...         {"name": "id", "path": "getResourceKey()"},
...         {"name": "family", "path": "name.where(use = 'official').family.first()"}]}]},
...     [{"resourceType": "Patient", "id": "p1",
...       "name": [{"use": "official", "family": "Chalmers"}]}],
... )
>>> rows.to_dict("records")
[{'id': 'p1', 'family': 'Chalmers'}]
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import polars as pl

from workbench.fhirdata.data import FhirData
from workbench.views.errors import ViewDefinitionError
from workbench.views.runner import CompiledView, Skipped, compile_view, run_batches

#: The size of the NDJSON batches a view is run over: smaller chunks are joined up to it.
VIEW_BATCH_BYTES = 12 << 20
ENGINES = ("pandas", "polars")


def view(definition: Any, data: Any, *, engine: str | None = None, terminology: Any = None) -> Any:
    """Run the ViewDefinition ``definition`` (a dict) over ``data`` (a ``FhirData``, a path
    or paths read with ``read_fhir``, or an iterable of resource dicts) and return its rows:
    a pandas DataFrame, or a polars one with ``engine="polars"``. ``terminology``: the
    workbench that answers the terminology functions (``memberOf``, ``display`` ...).

    Resources whose elements have the wrong JSON type for FHIR are skipped, each named in a
    warning and in ``.attrs["skipped"]`` (pandas); the rest is read. Data that is not
    ``FhirData`` is read here: files and folders in one parse (``views.source``), dicts
    with ``read_fhir`` (Bundles opened); its problems (a line that is not JSON ...) are
    named, with file and line, in a warning and in ``.attrs["read_errors"]``.

    In the pandas rows a missing text is NaN under pandas 3 (its ``str`` dtype), a missing
    number NaN (an integer column with one becomes float64), a missing boolean None (see
    ``to_pandas``)."""
    if engine not in (None, *ENGINES):
        raise ViewDefinitionError(f"engine={engine!r}: the engines are {', '.join(ENGINES)}")
    compiled = compile_view(_definition(definition), terminology)
    from workbench.views.spark import is_spark, spark_view

    if is_spark(data):
        return spark_view(compiled, data, terminology)
    owned = not isinstance(data, FhirData)  # read here: files in one parse, dicts, Bundles
    if owned:
        data = _read(data, compiled.view.resource)
    try:
        rows, skipped = _rows(compiled, data)
    finally:
        if owned:
            data.close()
    problems = list(data.errors) if owned else []
    skipped = _placed(data, skipped, problems, compiled.view.resource)
    _warn(compiled.view.resource, skipped, problems)
    if engine == "polars":
        return rows
    found = to_pandas(rows, skipped)
    found.attrs["read_errors"] = problems
    return found


def _rows(compiled: Any, data: Any) -> tuple[pl.DataFrame, list[Skipped]]:
    frames: list[pl.DataFrame] = []
    skipped: list[Skipped] = []
    for frame, bad in _run(compiled, data):
        frames.append(frame)
        skipped += bad
    if not frames:
        frames.append(compiled.apply(compiled.schema.empty_table()))
    rows = pl.concat(frames, how="vertical_relaxed") if len(frames) > 1 else frames[0]
    return rows, skipped


def _warn(resource: str, skipped: list[Skipped], problems: list[Any]) -> None:
    """One warning for the resources the view skipped, one for the data's problems."""
    if skipped:
        warnings.warn(
            f"{len(skipped)} {resource} resource(s) skipped: "
            f"{skipped[0].reason}" + (" ..." if len(skipped) > 1 else ""),
            stacklevel=3,
        )
    if problems:
        warnings.warn(
            f"{len(problems)} problem(s) reading the data, the rest read: {problems[0]}"
            + (" ..." if len(problems) > 1 else ""),
            stacklevel=3,
        )


def _read(data: Any, resource_type: str) -> Any:
    """``data`` read for a view: files and folders in one parse (``ViewSource``), resource
    dicts and Bundles with ``read_fhir``."""
    from workbench.fhirdata import read_fhir
    from workbench.views.source import ViewSource

    if isinstance(data, str | Path) or (
        isinstance(data, list | tuple) and data and isinstance(data[0], str | Path)
    ):
        return ViewSource(list(data) if isinstance(data, list | tuple) else [data], resource_type)
    if isinstance(data, dict | Iterable):
        return read_fhir(data)
    raise ViewDefinitionError(
        f"the data is a {type(data).__name__}: give FhirData, paths or resource dicts"
    )


def _placed(data: Any, skipped: list[Skipped], problems: list[Any], kind: str) -> list[Skipped]:
    """The skipped lines whose file and line are known become read problems (a line of
    another type than the view's is none of its business); the others stay skipped."""
    from workbench.fhirdata.records import ReadError
    from workbench.views.source import ViewSource

    if not isinstance(data, ViewSource):
        return skipped
    kept = []
    for item in skipped:
        place = data.locate(item.index)
        if place is None:
            kept.append(item)
        elif item.resource_type in (None, kind):
            problems.append(ReadError(place[0], place[1], item.reason))
    return kept


def prepare_view(definition: Any, *, terminology: Any = None) -> PreparedView:
    """Check and compile a view (``ViewDefinitionError`` at once, before any data is read)
    to run it later batch by batch, as ``view`` runs it: its rows come as they are made, so
    a caller can write them out without holding them all. Not for Spark data.

    >>> prepared = prepare_view(
    ...     {"resource": "Patient", "select": [{"column": [{"name": "id", "path": "id"}]}]})
    >>> prepared.resource, prepared.empty.schema
    ('Patient', Schema([('id', String)]))
    >>> [(rows["id"].to_list(), skipped) for rows, skipped in prepared.batches(
    ...     [{"resourceType": "Patient", "id": "p1"}])]
    [(['p1'], [])]
    """
    return PreparedView(compile_view(_definition(definition), terminology))


@dataclass(frozen=True)
class PreparedView:
    """A compiled view, ready to run over data batch by batch (``prepare_view``)."""

    compiled: CompiledView

    @property
    def resource(self) -> str:
        """The resource type the view reads."""
        return str(self.compiled.view.resource)

    @property
    def empty(self) -> pl.DataFrame:
        """The view's rows over no resource: its columns, in order, with their types."""
        return self.compiled.apply(self.compiled.schema.empty_table())

    def batches(self, data: Any) -> Iterator[tuple[pl.DataFrame, list[Skipped]]]:
        """The view's rows over ``data`` (as ``view`` takes it) batch by batch (polars),
        each with the resources it skipped (positions counted from the first resource of
        the view's type); data that is not ``FhirData`` is read with ``read_fhir`` first."""
        if not isinstance(data, FhirData):
            data = _read(data, self.resource)
        return _run(self.compiled, data)


def _run(compiled: CompiledView, data: Any) -> Iterator[tuple[pl.DataFrame, list[Skipped]]]:
    """The compiled view's rows over ``data`` (FhirData), batch by batch, with the resources
    skipped."""
    return run_batches(compiled, _coalesced(data.ndjson_batches(compiled.view.resource)))


def to_pandas(rows: pl.DataFrame, skipped: list[Skipped] | None = None) -> Any:
    """A view's rows as pandas: lists as Python lists, complex values as dicts. A null is
    what pandas makes of it: None in a boolean, list or complex (object) column; NaN in a
    text column under pandas 3 (its ``str`` dtype; None under pandas 2) and in a number
    column (an integer column with a null becomes float64). For None everywhere (``to_dict``,
    JSON): ``rows.astype(object).where(rows.notna(), None)``."""
    found = rows.to_pandas()
    for name, kind in rows.schema.items():
        if isinstance(kind, pl.List | pl.Struct):
            found[name] = pd.Series(rows[name].to_list(), index=found.index, dtype=object)
    found.attrs["skipped"] = list(skipped or [])
    return found


def _definition(definition: Any) -> Any:
    """A ViewDefinition given as a dict, or as the path of its JSON file."""
    if isinstance(definition, str | Path) and not str(definition).lstrip().startswith("{"):
        path = Path(definition)
        if not path.is_file():
            raise ViewDefinitionError(
                f"{definition}: neither a ViewDefinition loaded (wb.load or "
                "wb.install_package keeps them by url) nor a JSON file"
            )
        try:
            return orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as error:
            raise ViewDefinitionError(f"{definition}: not JSON ({error})") from None
    return definition


def _coalesced(chunks: Iterable[bytes], size: int = VIEW_BATCH_BYTES) -> Iterator[bytes]:
    """Chunks joined up to about ``size`` bytes: fewer, larger batches for the view (each
    batch is one parse and one query; a small one pays their fixed cost)."""
    held: list[bytes] = []
    total = 0
    for chunk in chunks:
        held.append(chunk)
        total += len(chunk)
        if total >= size:
            yield b"".join(held)
            held, total = [], 0
    if held:
        yield b"".join(held)
