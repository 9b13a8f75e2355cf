"""``check_bindings``: every bound coded value of FHIR data checked against the value set
its element is bound to, by the base definitions and the profiles the resources declare.

The data is read as ``read_fhir`` reads it; each resource is walked along its compiled
bindings (``walk``), the rows' codes answered once per distinct key by the engine
(``judge``), and the rows gathered into a ``BindingReport``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from workbench import collector
from workbench.bindings.judge import Answers, judge
from workbench.bindings.plan import Plans
from workbench.bindings.report import (
    SCHEMA,
    BindingReport,
    Problem,
    problem_table,
    report_frame,
    report_table,
    unread_table,
)
from workbench.bindings.store import Structures
from workbench.bindings.walk import Walk, Walker
from workbench.errors import InvalidRequestError, WorkbenchError
from workbench.fhirdata import FhirData, ReadError, scan
from workbench.fhirdata.intake import Intake, Limits
from workbench.fhirdata.ndjson import read_line
from workbench.terminology.engine import Terminology

STRENGTHS = ("required", "extensible", "preferred", "example")
_EXTENDED = b'xtension"'  # "extension" or "modifierExtension" as a key
#: Rows walked before they are judged and made a table.
BATCH_ROWS = 200_000


class BindingsNotLoadedError(WorkbenchError):
    """No StructureDefinitions are loaded, so there are no bindings to check."""

    code = "not-found"
    status = 400
    msg_id = "WB-BIND-001"


@dataclass(frozen=True)
class BindingCheck:
    """A binding check's request: the ``strengths`` checked and the ``profiles``
    (``"declared"``, a tuple of profile urls, or None for the base definitions only)."""

    strengths: frozenset[str]
    profiles: str | tuple[str, ...] | None

    @classmethod
    def of(cls, strength: str | Iterable[str], profiles: Any) -> BindingCheck:
        """The request from ``check_bindings``' keywords; InvalidRequestError names a
        strength or a profiles value it cannot take."""
        wanted = (strength,) if isinstance(strength, str) else tuple(strength)
        wrong = [s for s in wanted if s not in STRENGTHS]
        if wrong or not wanted:
            raise InvalidRequestError(
                f"strength {wrong or wanted!r}: give one or more of {', '.join(STRENGTHS)}"
            )
        if profiles is None or profiles == "declared":
            return cls(frozenset(wanted), profiles)
        if isinstance(profiles, str):
            profiles = [profiles]
        if not isinstance(profiles, Sequence) or not all(isinstance(p, str) for p in profiles):
            raise InvalidRequestError(
                "profiles takes 'declared', None (the base definitions only) or a list of "
                "profile urls"
            )
        return cls(frozenset(wanted), tuple(profiles))


class BindingChecker:
    """Checks FHIR data against the bindings of ``structures``, answering codes with
    ``engine``; compiled plans are kept per set of strengths while the definitions last."""

    def __init__(self, structures: Structures, engine: Terminology) -> None:
        self.structures = structures
        self.engine = engine
        self._plans: dict[frozenset[str], Plans] = {}

    def plans(self, strengths: frozenset[str]) -> Plans:
        """The compiled plans for ``strengths`` (compiled again after a load)."""
        found = self._plans.get(strengths)
        if found is None or found.generation != self.structures.generation:
            found = self._plans[strengths] = Plans(self.structures, strengths)
        return found

    def require_definitions(self) -> None:
        """Raise BindingsNotLoadedError when no StructureDefinitions are held."""
        if not len(self.structures):
            raise BindingsNotLoadedError(
                "No StructureDefinitions are loaded: load the FHIR R4 definitions first "
                "(wb.install_package('hl7.fhir.r4.core#4.0.1'), or a package that has them)"
            )

    def check(self, request: BindingCheck, data: Any) -> BindingReport:
        """Walk every resource of ``data`` (a ``FhirData``, or a source as ``read_fhir``
        takes it, read as it is walked: nothing is kept but the rows), judge, report."""
        self.require_definitions()
        batches = _Batches(self, request)
        with collector.paused():  # millions of short-lived dicts and tuples, no cycles
            if isinstance(data, FhirData):
                for line in lines_of(data):
                    batches.resource(orjson.loads(line), line)
                errors = list(data.errors)
            else:
                errors = scan(data, lambda _, value, line: batches.resource(value, line))
            table = batches.table()
        problems = self.problems(request, batches.walk, errors)
        return BindingReport(report_frame(table), problems, batches.walk.resources)

    def rows(self, request: BindingCheck, lines: Iterable[bytes]) -> tuple[Walk, pa.Table]:
        """Walk the resources of JSON texts ``lines`` (each a resource or a Bundle, read by
        the reader's rules for a line) and judge their rows: the walk and the rows as an
        Arrow table (``report.SCHEMA``). What a local report lists in ``problems`` is rows
        here: a text that is neither (``report.unread_table``), resource types without a
        definition and declared profiles not loaded (``report.problem_table``)."""
        batches = _Batches(self, request)
        intake = Intake(Limits(), sink=lambda _, value, line: batches.resource(value, line))
        log = intake.log("the JSON texts")
        log.parsed_one()  # texts given as resources: each failure is its own record
        texts = list(lines)
        with collector.paused():
            for number, line in enumerate(texts, 1):
                read_line(intake, line, log, number)
            log.close()
            table = batches.table().cast(SCHEMA)
        walked = problem_table(self.problems(request, batches.walk, []))
        if intake.records or walked.num_rows:
            table = pa.concat_tables([table, walked, unread_table(intake.records, texts)])
        return batches.walk, table

    def problems(
        self, request: BindingCheck, walk: Walk, errors: list[ReadError]
    ) -> tuple[Problem, ...]:
        """What could not be checked, and why: read errors, resource types and profiles
        without definitions, profiles given that are not loaded, unusable definitions."""
        found = [
            Problem("read", e.source if e.line is None else f"{e.source}:{e.line}", 1, e.reason)
            for e in errors
            if e.severity != "warning"  # (a line of another type than its file's: it is read)
        ]
        for kind, n in sorted(walk.unknown_types.items()):
            found.append(Problem("unknown-type", kind, n,
                f"no StructureDefinition for {kind} is loaded: the bindings of {n:,} "
                "resources were not checked"))  # fmt: skip
        for url, n in sorted(walk.missing_profiles.items()):
            why = self._why_missing(url)
            found.append(Problem("profile-not-loaded", url, n,
                f"profile {url} ({n:,} resources) {why}: its bindings were not checked, "
                "the base definition's were"))  # fmt: skip
        for text, n in sorted(walk.wrong_profiles.items()):
            found.append(Problem("profile-of-another-type", text, n,
                f"profile {text} was not applied ({n:,} resources)"))  # fmt: skip
        if isinstance(request.profiles, tuple):
            for url in request.profiles:
                if self.structures.get(url) is None and url not in walk.missing_profiles:
                    found.append(Problem("profile-not-loaded", url, 0,
                        f"profile {url} {self._why_missing(url)}"))  # fmt: skip
        for url, why in sorted(self.structures.problems.items()):
            found.append(Problem("unusable-definition", url, 0, why))
        return tuple(found)

    def _why_missing(self, url: str) -> str:
        why = self.structures.problems.get(url.split("|", 1)[0])
        return f"cannot be used ({why})" if why else "is not loaded"


class _Batches:
    """Rows as they are walked, judged and made an Arrow table every ``BATCH_ROWS`` rows
    (between resources), so what is held is the compact table, not the walked tuples."""

    def __init__(self, checker: BindingChecker, request: BindingCheck) -> None:
        self.walker = Walker(checker.plans(request.strengths), request.profiles)
        self.walk = Walk()
        self.answers = Answers(checker.engine)
        self.tables: list[pa.Table] = []

    def resource(self, value: Any, line: bytes | None) -> None:
        """Walk one resource (whole when its text mentions an extension, or is not known)."""
        self.walker.resource(value, self.walk, full=line is None or _EXTENDED in line)
        if len(self.walk.rows) >= BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        rows = self.walk.rows
        self.tables.append(compact(report_table(rows, judge(rows, self.answers))))
        self.walk.rows = []

    def table(self) -> pa.Table:
        """Every row so far, one table."""
        if self.walk.rows or not self.tables:
            self._flush()
        return (
            pa.concat_tables(self.tables).combine_chunks()
            if len(self.tables) > 1
            else self.tables[0]
        )


def compact(table: pa.Table) -> pa.Table:
    """The table with its repeated texts dictionary-encoded (all but ids and locations):
    millions of rows name a few hundred elements and value sets."""
    columns = [
        column if name in ("id", "location", "result") else column.dictionary_encode()
        for name, column in zip(table.column_names, table.columns, strict=True)
    ]
    return pa.table(columns, names=table.column_names)


def lines_of(data: Any) -> Iterator[bytes]:
    """The NDJSON lines of every resource of a ``FhirData``, type by type."""
    for kind in data.types:
        for chunk in data.ndjson_batches(kind):
            for line in chunk.split(b"\n"):
                if line:
                    yield line
