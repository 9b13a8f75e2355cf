"""``Workbench``: the one object users hold. It owns a Registry and a Terminology engine
and delegates to them; the server, the widgets and the pandas accessor all use this object."""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, overload

import pandas as pd

from workbench import bulk, collector, frames, loading, packages
from workbench.bindings.store import Structures
from workbench.calls import TerminologyCalls, hinting
from workbench.definitions import Definitions
from workbench.errors import WorkbenchError
from workbench.registry import Registry
from workbench.releases import kinds
from workbench.resources import Resource
from workbench.terminology.conceptmap import Translation, select_maps
from workbench.terminology.engine import Terminology
from workbench.terminology.expand.expansion import DEFAULT_MAX_EXPANSION
from workbench.terminology.requests import (
    TranslateRequest,
)
from workbench.terminology.service import EngineService

if TYPE_CHECKING:
    from dask.dataframe import DataFrame as DaskFrame
    from pyspark.sql import DataFrame as SparkFrame

    from workbench.bindings.report import BindingReport
    from workbench.bulk.impact import Impact
    from workbench.fhirdata import FhirData
    from workbench.loading import LoadSummary
    from workbench.releases.loading import ReleaseSummary
    from workbench.server.embedded import ServerHandle
    from workbench.terminology.diff import Diff


_Method = TypeVar("_Method", bound=Callable[..., Any])
Strength = str | Sequence[str]  # binding strengths: one, or several
Profiles = str | Sequence[str] | None  # "declared", profile urls, or None (the base only)

_LIVE: weakref.WeakValueDictionary[int, Workbench] = weakref.WeakValueDictionary()
_SERIALS = itertools.count(1)
_LOCK = threading.Lock()


def live() -> list[Workbench]:
    """The Workbenches that exist now, oldest first (each is tracked with a weak reference
    when it is made); ``workbench.selection`` picks among them."""
    with _LOCK:
        return [wb for _, wb in sorted(_LIVE.items())]


class Workbench(TerminologyCalls):
    """An in-memory terminology workbench.

    >>> wb = Workbench()
    >>> summary = wb.load({"resourceType": "CodeSystem", "url": "http://example.org/cs",
    ...     "content": "complete", "concept": [{"code": "a", "display": "Alpha"}]})
    >>> wb.validate_code(valueset={"resourceType": "ValueSet", "compose": {"include": [
    ...     {"system": "http://example.org/cs"}]}}, code="a").result
    True
    """

    def __init__(
        self,
        *,
        max_expansion: int = DEFAULT_MAX_EXPANSION,
        package_cache: str | Path | None = None,
    ) -> None:
        self.registry = Registry()
        self.terminology = Terminology(self.registry, max_expansion=max_expansion)
        for kind in kinds.builtin_kinds():  # UCUM: always there
            self.terminology.add_provider(kind.provider())
        self.service = EngineService(self.registry, self.terminology)
        #: Definitions kept beside the terminology: ViewDefinitions, for ``view`` by url.
        self.definitions = Definitions()
        #: StructureDefinitions (reduced), for ``bindings`` and ``check_bindings``.
        self.structures = Structures()
        self.package_cache = Path(package_cache) if package_cache is not None else None
        #: The FHIR packages loaded (``name#version``), in the order they were loaded.
        self.loaded_packages: list[str] = []
        with _LOCK:
            #: Its number in this process (``#1``, ``#2``…), shown by ``repr``.
            self.serial = next(_SERIALS)
            _LIVE[self.serial] = self

    @classmethod
    def around(cls, terminology: Terminology) -> Workbench:
        """A Workbench over an existing engine (its registry and release providers): how an
        engine shipped to a Spark executor answers a view's terminology functions."""
        registry = terminology.registry
        if not isinstance(registry, Registry):
            raise TypeError("a Workbench is made around an engine over its own registry")
        wb = cls()
        wb.registry, wb.terminology = registry, terminology
        wb.service = EngineService(registry, terminology)
        return wb

    def __repr__(self) -> str:
        """Everything it holds, counted: ``<Workbench #2: 1 package (hl7.fhir.r4.examples#4.0.1),
        1,327 ValueSets, 1,063 CodeSystems, 12 ConceptMaps; terminologies: SNOMED CT <version>,
        LOINC 2.80, UCUM 2.2>`` (terminologies: every provider, the release files loaded and
        the built-in ones)."""
        counts = [
            loading.counted(len(self.registry.all(kind)), kind)
            for kind in ("ValueSet", "CodeSystem", "ConceptMap")
        ]
        if self.loaded_packages:
            n = len(self.loaded_packages)
            shown = ", ".join(self.loaded_packages[:3]) + (", …" if n > 3 else "")
            counts.insert(0, f"{loading.counted(n, 'package')} ({shown})")
        releases = [
            f"{p.resource.get('title') or p.url} {p.version or '(no version)'}"
            for p in self.terminology.providers()
        ]
        held = ", ".join(counts) + (f"; terminologies: {', '.join(releases)}" if releases else "")
        return f"<Workbench #{self.serial}: {held}>"

    def _repr_html_(self) -> str:
        """What is loaded: resources per type (and how many canonicals have several
        versions), terminologies from release files with their versions and sizes, and the
        servers this Workbench runs."""
        from workbench.notebook_html import workbench_html

        return workbench_html(self)

    # --- loading ----------------------------------------------------------------------

    def load(self, source: Any, *, progress: bool | None = None) -> LoadSummary:
        """Load ValueSets and CodeSystems from ``source`` and return a summary.

        ``source`` is a JSON file (one resource or a Bundle), a folder (read recursively), a
        FHIR NPM package (``.tgz`` or an extracted folder with ``package/``), a package
        reference ``"name#version"`` from the FHIR package cache, or resource dicts. A
        progress bar shows for large sources (``progress=False`` turns it off). Nothing is
        stored unless the whole source reads cleanly.
        """
        with collector.paused():  # thousands of parsed resources, kept, with no cycles
            resources, summary = loading.read_source(
                source, cache_dir=self.package_cache, progress=progress
            )
            self.registry.add_many(resources)
            self.definitions.add(summary.definitions)
            self.structures.add(summary.structures, summary.unusable)
        if summary.package is not None and summary.package not in self.loaded_packages:
            self.loaded_packages.append(summary.package)
        return summary

    def install_package(
        self,
        name: str,
        version: str | None = None,
        registry: str | None = None,
        *,
        progress: bool | None = None,
    ) -> LoadSummary:
        """Download a FHIR package into the package cache (if not there yet) and load it.

        ``name`` may also be ``"name#version"``. The registry is ``registry``, else
        ``$WORKBENCH_PACKAGE_REGISTRY``, else the npm-configured registry.
        """
        if version is None and "#" in name:
            name, version = packages.parse_package_ref(name)
        folder = packages.install_package(
            name, version, registry=registry, cache_dir=self.package_cache
        )
        return self.load(folder, progress=progress)

    def load_release(
        self,
        path: str | Path,
        *,
        kind: str | None = None,
        version: str | None = None,
        cache_dir: str | Path | None = None,
        progress: bool | None = None,
        verify: bool = False,
    ) -> ReleaseSummary:
        """Load a terminology from its release files as distributed (a folder or a zip).

        ``kind`` (``"snomed"``, ``"loinc"``, ``"icd10cm"``, ``"rxnorm"``) is detected from
        the files when omitted; ``version`` overrides the release's own (for SNOMED CT the
        version URI, e.g. ``http://snomed.info/xsct/31000003106/version/20250909``; for
        RxNorm the release date, MMDDYYYY, from the readme's name). The release is imported
        once into ``cache_dir`` (default ``$WORKBENCH_RELEASE_CACHE`` or
        ``~/.cache/workbench/releases``) and reopened from there afterwards; a progress bar
        shows while it imports. The store is named by a hash of the release files' content
        and checked before it is reopened (``verify=True``: every byte); a changed release
        or a damaged store is imported again, and the summary's ``reason`` says why.
        Returns the summary (system, version, concepts, time, cache).
        Raises ReleaseFormatError (naming the file and line) for a broken release and
        DuplicateCanonicalError when that system and version is already loaded; either way
        nothing changes.
        """
        from workbench.releases.loading import open_release

        provider, summary = open_release(
            path,
            kind=kind,
            version=version,
            cache_dir=cache_dir,
            progress=progress,
            claim=self.terminology.check_new_provider,
            verify=verify,
        )
        self.terminology.add_provider(provider)
        return summary

    def read_fhir(self, source: Any, **options: Any) -> FhirData:
        """Read FHIR data (NDJSON, JSON files, Bundles, dicts) for views: ``read_fhir``."""
        from workbench.fhirdata import read_fhir

        return read_fhir(source, **options)

    # --- frames -----------------------------------------------------------------------

    @property
    def valuesets(self) -> pd.DataFrame:
        """One row per loaded ValueSet (url, name, title, version, …, status)."""
        return frames.valuesets_frame(self.registry.all("ValueSet"))

    @property
    def conceptmaps(self) -> pd.DataFrame:
        """One row per loaded ConceptMap (url, name, title, version, status, …, groups)."""
        return frames.conceptmaps_frame(self.registry.all("ConceptMap"))

    def mappings(self, url: str, version: str | None = None) -> pd.DataFrame:
        """One row per source code -> target code of the ConceptMap ``url`` (latest version).

        ``source_display`` and ``target_display`` come from the loaded code systems (as
        ``translate`` shows a target), else from the map itself."""
        resource = select_maps(self.conceptmaps_for(url), url, version)[0]
        return frames.fill_displays(frames.mappings_frame(resource), self._displays)

    def _displays(self, system: str, codes: list[str]) -> list[str | None]:
        """The displays of ``codes`` in the loaded code system ``system`` (its latest
        version; None for an unknown code, all None for a system that is not loaded)."""
        try:
            found = self.terminology.require_codesystem(system, None)
        except WorkbenchError:
            return [None] * len(codes)
        described = found.describe(codes)
        if described is not None:
            return list(described[2])
        concepts = (found.get(code) for code in codes)
        return [c.display if c is not None else None for c in concepts]

    def conceptmaps_for(self, url: str | None = None) -> list[Resource]:
        """The loaded ConceptMaps, with the implicit one ``url`` names when it is not stored
        (``http://snomed.info/sct?fhir_cm={refsetId}`` of a loaded SNOMED CT release)."""
        return self.service.conceptmaps_for(url)

    def translate(
        self,
        code: str | None = None,
        *,
        system: str | None = None,
        url: str | None = None,
        coding: Mapping[str, Any] | None = None,
        target_system: str | None = None,
        reverse: bool = False,
        maps: Sequence[Resource] | None = None,
        source: str | None = None,
        target: str | None = None,
        conceptmap_version: str | None = None,
        dependencies: Sequence[tuple[str, Sequence[Mapping[str, Any]]]] = (),
    ) -> Translation:
        """Translate a code (or a Coding) through the loaded ConceptMaps (R4 ``$translate``).

        Without ``url`` every loaded map whose groups fit is used; a ``url`` without a
        version uses its latest version. Target displays come from loaded code systems.
        ``maps`` replaces the loaded maps for this call (an inline ``conceptMap``).
        ``dependencies`` are ``(element uri, codings)`` pairs: a target whose ``dependsOn``
        names that element with another code is left out.
        """
        if coding is not None:
            code, system = code or coding.get("code"), system or coding.get("system")
        return self.service.translate(
            TranslateRequest(
                code=code,
                system=system,
                url=url,
                source=source,
                target=target,
                conceptmap_version=conceptmap_version,
                target_system=target_system,
                reverse=reverse,
                dependencies=tuple((element, tuple(codings)) for element, codings in dependencies),
                maps=None if maps is None else tuple(maps),
            )
        )

    def display_of(self, system: str, code: str) -> str | None:
        """The display of ``code`` in the loaded code system ``system`` (None when either
        is unknown): what ``$translate`` shows for a target code."""
        return self.service.display_of(system, code)

    def translate_column(
        self,
        data: Any,
        url: str | None,
        *,
        code: str | None = None,
        system: str | None = None,
        system_column: str | None = None,
        target_system: str | None = None,
        reverse: bool = False,
    ) -> Any:
        """Translate a column: result, equivalence, target_system/code/display, matches, message.

        ``data`` is a pandas DataFrame (``code`` names the code column; ``system`` is the
        system URI of every row, ``system_column`` a column of systems) or Series, a dask
        DataFrame or Series (a lazy result; the distinct codes are gathered once, translated on the
        client and the answers shipped to the workers once) or a polars DataFrame or
        Series (a polars result) or a Spark DataFrame (a lazy Spark result; the distinct
        pairs are collected and translated on the driver at the call, the answers
        broadcast). Work is done once per distinct (system, code); a row
        holds the strongest match and ``matches`` counts them; a missing code gives
        ``result`` NA. ``reverse=True`` maps target codes back to their source codes (as
        ``$translate`` with ``reverse``). Raises ConceptMapNotFoundError for an unknown
        ``url``.

        >>> wb = Workbench()
        >>> _ = wb.load({"resourceType": "ConceptMap", "url": "http://ex/cm", "group": [{
        ...     "source": "http://ex/a", "target": "http://ex/b", "element": [
        ...     {"code": "1", "target": [{"code": "x", "equivalence": "equivalent"}]}]}]})
        >>> wb.translate_column(pd.Series(["1", "2", None]), "http://ex/cm")["target_code"].tolist()
        ['x', None, None]
        >>> back = wb.translate_column(pd.Series(["x"]), "http://ex/cm", reverse=True)
        >>> back[["target_system", "target_code"]].values.tolist()
        [['http://ex/a', '1']]
        """
        return bulk.translate_column(
            self.service,
            data,
            url,
            code=code,
            system=system,
            system_column=system_column,
            target_system=target_system,
            reverse=reverse,
        )

    @property
    def codesystems(self) -> pd.DataFrame:
        """One row per loaded CodeSystem (url, name, title, version, status, …, concepts),
        the ones loaded from release files included."""
        headers = [p.resource for p in self.terminology.providers()]
        return frames.codesystems_frame([*self.registry.all("CodeSystem"), *headers])

    def concepts(self, codesystem: str, version: str | None = None) -> pd.DataFrame:
        """One row per concept of a code system, with parents, flags and properties (for a
        release, straight from its store's columns)."""
        found = self.terminology.require_codesystem(codesystem, version)
        own = found.concepts_frame()
        return own if own is not None else frames.concepts_frame(found)

    def designations(self, codesystem: str, version: str | None = None) -> pd.DataFrame:
        """The designations of a code system's concepts, in long form."""
        found = self.terminology.require_codesystem(codesystem, version)
        own = found.designations_frame()
        return own if own is not None else frames.designations_frame(found)

    def diff(self, url: str, from_version: str, to_version: str) -> Diff:
        """What changed in a code system or value set from ``from_version`` to
        ``to_version`` (both loaded): a ``Diff`` with the frames ``.added``, ``.removed``,
        ``.display_changed``, ``.status_changed`` (active/inactive/deprecated, abstract),
        ``.moved`` (parents changed) and ``.frame`` (all, with a ``change`` column), counts
        per kind in its repr and ``.chart()``. A value set's versions are compared by
        their expansions. Raises InvalidRequestError for a version compared with itself,
        CodeSystemNotFoundError / ValueSetVersionNotFoundError (naming the loaded versions)
        for a version that is not loaded.

        >>> wb = Workbench()
        >>> _ = wb.load([{"resourceType": "CodeSystem", "url": "http://x", "version": v,
        ...     "content": "complete", "concept": [{"code": c} for c in codes]}
        ...     for v, codes in (("1", "ab"), ("2", "bc"))])
        >>> wb.diff("http://x", "1", "2").counts["added"]
        1
        """
        from workbench import changes

        return changes.diff(self, url, from_version, to_version)

    def resource(self, resource_type: str, url: str, version: str | None = None) -> Resource:
        """Return a stored ValueSet or CodeSystem by canonical URL (as FHIR JSON)."""
        if resource_type == "ValueSet":
            return self.terminology.valueset_resource(url, version)
        return self.terminology.require_codesystem(url, version).resource

    # --- columns ----------------------------------------------------------------------

    @hinting
    def validate_column(
        self,
        data: Any,
        valueset: str | Mapping[str, Any],
        *,
        code: str | None = None,
        system: str | None = None,
        system_column: str | None = None,
        display: str | None = None,
        abstract: bool | None = None,
        progress: bool = False,
    ) -> Any:
        """Validate a column of codes against a value set, with validate_code's semantics.

        ``data`` is a Series of codes (or of Coding / CodeableConcept dicts), or a DataFrame
        with ``code`` naming the code column. ``system`` is the system URI of every row,
        ``system_column`` names a column of systems (never guessed: a ``system`` that is a
        column is refused, saying so); when neither is given and the value set draws on one
        system, that one is used. ``display``
        names a column of displays to check. ``abstract`` as in ``validate_code``: abstract
        codes the value set includes are valid unless ``abstract=False`` (the one default
        of every entry point, as a FHIR request without ``abstract`` is read). Every
        distinct key is answered by the code ``validate_code`` runs. Returns a
        ValidationFrame aligned to the input (result, message, display, issue, system)
        with ``.summary()`` and ``.failure_cases``; missing codes give result NA and the
        issue ``missing``. A dask
        DataFrame or Series gives a lazy dask DataFrame (``progress=True`` shows Dask's
        progress bar while it computes). A polars DataFrame or Series gives a polars
        DataFrame of the same columns; a Spark DataFrame a lazy Spark DataFrame of them (no
        job runs at the call: the distinct values are answered on the executors, with the
        engine shipped to them, and joined back by a broadcast join).

        >>> wb = Workbench()
        >>> _ = wb.load({"resourceType": "CodeSystem", "url": "http://x", "content":
        ...     "complete", "concept": [{"code": "a", "display": "A"}]})
        >>> vs = {"resourceType": "ValueSet", "url": "http://x/vs", "compose": {"include":
        ...     [{"system": "http://x"}]}}
        >>> _ = wb.load(vs)
        >>> report = wb.validate_column(pd.Series(["a", "b", None]), "http://x/vs")
        >>> report["result"].tolist(), report.reason.tolist()
        ([True, False, <NA>], ['valid', 'unknown-code', 'missing'])
        """
        return bulk.validate_column(
            self.terminology,
            data,
            valueset,
            code=code,
            system=system,
            system_column=system_column,
            display=display,
            abstract=abstract,
            progress=progress,
        )

    def report(self, result: Any) -> Any:
        """The report of a ``validate_column`` result of any backend: ``.summary()``,
        ``.by_code()``, ``.fix()``, ``.to_html()``, ``.to_excel()``, with the counts of
        ``result`` itself. A pandas result is returned as it is (it has those methods); a
        polars, Dask or Spark result (still that library's frame) is collected into pandas
        with the input columns it is about (one computation, one Spark job). Raises
        InvalidRequestError for anything that is not such a result.

        >>> import polars as pl
        >>> wb = Workbench()
        >>> _ = wb.load({"resourceType": "CodeSystem", "url": "http://x", "content":
        ...     "complete", "concept": [{"code": "a", "display": "A"}]})
        >>> result = wb.validate_column(pl.Series(["a", "b", "b"]), {"resourceType":
        ...     "ValueSet", "compose": {"include": [{"system": "http://x"}]}})
        >>> wb.report(result).summary().counts.to_dict()
        {'unknown-code': 2, 'valid': 1}
        """
        return bulk.report_of(result)

    def impact(
        self,
        data: Any,
        *,
        code: str | None = None,
        system: str,
        from_version: str,
        to_version: str,
    ) -> Impact:
        """What moving a column of ``system`` codes from ``from_version`` to
        ``to_version`` (both loaded) does: an ``Impact`` whose ``.frame`` has one row per
        distinct code with its rows and its ``change`` (unchanged, retired,
        display-changed, became-header with its ``children``, new, unknown), and the
        ``replacements`` the newer release records for an inactive code (SNOMED CT's
        historical associations, LOINC's MAP_TO); ``.fix()`` applies the one-to-one ones
        with an audit. ``data`` is a pandas, polars, Dask or Spark DataFrame (``code``
        names its column of codes, as in ``validate_column``) or Series; its codes are
        counted by its own library.
        """
        from workbench.bulk.dispatch import backend_of
        from workbench.bulk.impact import impact_column

        return impact_column(
            self.terminology,
            backend_of(data).counts,
            data,
            code,
            system=system,
            from_version=from_version,
            to_version=to_version,
        )

    # --- FHIR data ----------------------------------------------------------------------

    def view(self, definition: Any, data: Any, *, engine: str | None = None) -> Any:
        """Run a SQL on FHIR ViewDefinition over FHIR ``data`` (see ``workbench.views.view``),
        its terminology functions (``memberOf``, ``display``, ``translate``, ``subsumes``
        ...) answered by this workbench. ``definition``: a dict, a JSON file, or the url of a
        ViewDefinition loaded with ``load`` or ``install_package``."""
        from workbench.views import view

        if isinstance(definition, str):
            definition = self.definitions.get("ViewDefinition", definition) or definition
        return view(definition, data, engine=engine, terminology=self)

    def bindings(self, profiles: Sequence[str] | None = None) -> pd.DataFrame:
        """The bindings of the StructureDefinitions loaded (resources, data types,
        profiles, extensions), one row per bound element: ``type``, ``profile``, ``kind``,
        ``element``, ``path``, ``slice``, ``strength``, ``valueset``, ``max_valueset`` and
        ``source`` (the definition that first bound it so). ``profiles``: those urls only."""
        from workbench.bindings.catalog import bindings_frame

        return bindings_frame(self.structures, profiles)

    @overload
    def check_bindings(
        self, data: SparkFrame, *, strength: Strength = ..., profiles: Profiles = ...
    ) -> SparkFrame: ...

    @overload
    def check_bindings(
        self, data: DaskFrame, *, strength: Strength = ..., profiles: Profiles = ...
    ) -> DaskFrame: ...

    @overload
    def check_bindings(
        self, data: Any, *, strength: Strength = ..., profiles: Profiles = ...
    ) -> BindingReport: ...

    def check_bindings(
        self,
        data: Any,
        *,
        strength: Strength = ("required", "extensible"),
        profiles: Profiles = "declared",
    ) -> BindingReport | SparkFrame | DaskFrame:
        """Check every bound coded value of FHIR ``data`` (as ``read_fhir`` takes it)
        against the value set its element is bound to, by the base definitions and the
        profiles (``"declared"``: each resource's ``meta.profile``; a list of urls; None:
        the base only); see ``workbench.bindings``. Returns a ``BindingReport``; for a
        Spark or Dask DataFrame of JSON texts, a lazy DataFrame of the report's rows, of
        the same kind."""
        from workbench.bindings.api import check_bindings

        return check_bindings(self, data, strength=strength, profiles=profiles)

    # --- serving ----------------------------------------------------------------------

    def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        *,
        base: str = "/fhir/R4",
        data_dir: str | Path | None = None,
        cache_idle: float | str | None = None,
    ) -> ServerHandle:
        """Serve this Workbench as a FHIR R4 terminology server in a background thread.

        The server works on this very object: what you load here is visible over HTTP at
        once, and writes over HTTP are visible here. ``port=0`` picks a free port. Returns a
        handle with ``.url``, ``.token`` and ``.stop()``; use it as a context manager. The
        same data is served in FHIR R5 at ``.r5_url`` (``/fhir/R5`` beside ``/fhir/R4``; for
        another ``base``, ``{base}/R5``).
        ``cache_idle``: how long a client cache (``$cache-control``) lives unused, seconds or
        a text such as ``"90m"``, ``"8h"`` (default 4 hours; any use keeps it alive).
        """
        from workbench.server.embedded import serve

        handle = serve(
            self.service,
            host=host,
            port=port,
            token=token,
            base=base,
            data_dir=data_dir,
            cache_idle=cache_idle,
        )
        self.__dict__.setdefault("_servers", []).append(weakref.ref(handle))
        return handle
