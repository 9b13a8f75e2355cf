"""``Workbench``: the one object users hold. It owns a Registry and a Terminology engine
and delegates to them; the server, the widgets and the pandas accessor all use this object."""

from __future__ import annotations

import functools
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pandas as pd

from workbench import bulk, collector, frames, loading, packages
from workbench.errors import (
    CodeSystemNotFoundError,
    InvalidRequestError,
    ValueSetNotFoundError,
)
from workbench.registry import Registry
from workbench.releases import kinds
from workbench.resources import Resource
from workbench.terminology.conceptmap import Translation, select_maps
from workbench.terminology.engine import Terminology
from workbench.terminology.expansion import DEFAULT_MAX_EXPANSION, Expansion
from workbench.terminology.lookup import LookupResult
from workbench.terminology.requests import (
    CodeSystemValidateRequest,
    ExpandRequest,
    LookupRequest,
    SubsumesRequest,
    TranslateRequest,
    ValidateRequest,
)
from workbench.terminology.service import EngineService
from workbench.terminology.validation import CheckOptions, ValidationResult
from workbench.terminology.versions import VersionPolicy

if TYPE_CHECKING:
    from workbench.loading import LoadSummary
    from workbench.releases.loading import ReleaseSummary
    from workbench.server.embedded import ServerHandle


_CURRENT: list[weakref.ReferenceType[Workbench]] = []
_Method = TypeVar("_Method", bound=Callable[..., Any])


def _hinting(method: _Method) -> _Method:
    """Add "Did you mean <url>?" (the nearest loaded canonical URLs) as a note to an unknown
    value set or code system error; the error and its text stay as they are."""

    @functools.wraps(method)
    def wrapper(self: Workbench, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (ValueSetNotFoundError, CodeSystemNotFoundError) as exc:
            self._add_hint(exc)
            raise

    return cast(_Method, wrapper)


def current() -> Workbench:
    """The Workbench created last in this process (what the ``.fhir`` accessor uses).

    Raises InvalidRequestError when there is none.
    """
    found = _CURRENT[0]() if _CURRENT else None
    if found is None:
        raise InvalidRequestError(
            "No Workbench exists yet: create one with Workbench() or pass workbench=..."
        )
    return found


class Workbench:
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
        self.package_cache = Path(package_cache) if package_cache is not None else None
        _CURRENT[:] = [weakref.ref(self)]

    def __repr__(self) -> str:
        vs = len(self.registry.all("ValueSet"))
        cs = len(self.registry.all("CodeSystem"))
        return f"<Workbench: {vs} ValueSets, {cs} CodeSystems>"

    def _add_hint(self, exc: ValueSetNotFoundError | CodeSystemNotFoundError) -> None:
        from workbench.bulk.suggest import url_hint

        kind = "ValueSet" if isinstance(exc, ValueSetNotFoundError) else "CodeSystem"
        known = {
            str(r["url"]): r.get("title") or r.get("name")
            for r in self.registry.all(kind)
            if r.get("url")
        }
        hint = url_hint(str(getattr(exc, "url", "")).split("|", 1)[0], known)
        exc.hint = hint  # type: ignore[union-attr]
        if hint and hasattr(exc, "add_note") and hint not in getattr(exc, "__notes__", []):
            exc.add_note(hint)

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
    ) -> ReleaseSummary:
        """Load a terminology from its release files as distributed (a folder or a zip).

        ``kind`` (``"snomed"``, ``"loinc"``, ``"icd10cm"``, ``"rxnorm"``) is detected from
        the files when omitted; ``version`` overrides the release's own (for SNOMED CT the
        version URI, e.g. ``http://snomed.info/xsct/31000003106/version/20250909``; for
        RxNorm the release date, MMDDYYYY, from the readme's name). The release is imported
        once into ``cache_dir`` (default ``$WORKBENCH_RELEASE_CACHE`` or
        ``~/.cache/workbench/releases``) and reopened from there afterwards; a progress bar
        shows while it imports. Returns the summary (system, version, concepts, time, cache).
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
        )
        self.terminology.add_provider(provider)
        return summary

    # --- frames -----------------------------------------------------------------------

    @property
    def valuesets(self) -> pd.DataFrame:
        """One row per loaded ValueSet (url, version, name, title, status, …)."""
        return frames.valuesets_frame(self.registry.all("ValueSet"))

    @property
    def conceptmaps(self) -> pd.DataFrame:
        """One row per loaded ConceptMap (url, version, name, status, source, target, …)."""
        return frames.conceptmaps_frame(self.registry.all("ConceptMap"))

    def mappings(self, url: str, version: str | None = None) -> pd.DataFrame:
        """One row per source code -> target code of the ConceptMap ``url`` (latest version)."""
        return frames.mappings_frame(select_maps(self.conceptmaps_for(url), url, version)[0])

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
        target_system: str | None = None,
        reverse: bool = False,
    ) -> Any:
        """Translate a column: result, equivalence, target_system/code/display, matches, message.

        ``data`` is a pandas DataFrame (``code`` and ``system`` name columns; a ``system``
        that is not a column is the system of every row) or Series, a dask DataFrame or
        Series (a lazy result; the distinct codes are gathered once, translated on the
        client and the answers shipped to the workers once) or a polars DataFrame or
        Series (a polars result). Work is done once per distinct (system, code); a row
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
            target_system=target_system,
            reverse=reverse,
        )

    @property
    def codesystems(self) -> pd.DataFrame:
        """One row per loaded CodeSystem (url, version, name, title, status, content, …),
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

    def resource(self, resource_type: str, url: str, version: str | None = None) -> Resource:
        """Return a stored ValueSet or CodeSystem by canonical URL (as FHIR JSON)."""
        if resource_type == "ValueSet":
            return self.terminology.valueset_resource(url, version)
        return self.terminology.require_codesystem(url, version).resource

    # --- terminology ------------------------------------------------------------------

    @_hinting
    def expand(
        self,
        valueset: str | Mapping[str, Any],
        *,
        version: str | None = None,
        filter: str | None = None,
        offset: int = 0,
        count: int | None = None,
        active_only: bool = False,
        include_designations: bool = False,
        display_language: str | None = None,
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
        include_definition: bool = False,
        properties: Sequence[str] | None = None,
        exclude_nested: bool | None = None,
        system_version: str | Sequence[str] | None = None,
        force_system_version: str | Sequence[str] | None = None,
        check_system_version: str | Sequence[str] | None = None,
        default_valueset_version: str | Sequence[str] | None = None,
        accept_language: str | None = None,
        use_supplements: Sequence[str] | None = None,
        designations: Sequence[str] | None = None,
    ) -> Expansion:
        """Expand a value set given by canonical URL (``url`` or ``url|version``) or as a dict.

        ``filter`` keeps codes whose code or display contains every word; ``offset``/``count``
        page the result (``.frame`` and ``.to_fhir()`` show the page; ``total`` counts all).
        Raises ValueSetNotFoundError, CodeSystemNotFoundError, IncompleteCodeSystemError,
        ImportCycleError or UnsupportedFilterError; ``.to_fhir()`` raises TooCostlyError for
        an unpaged expansion over the size limit. ``tx_resources`` are CodeSystems and
        ValueSets used for this call only, before the stored ones (``tx-resource``).
        ``include_definition`` adds each concept's definition, ``properties`` the named
        concept properties, ``designations`` keeps only designations of those languages or
        uses, ``exclude_nested=False`` nests codes under their parents; the version
        parameters work as in ``validate_code`` (a version
        that ``check_system_version`` does not allow raises VersionCheckError). Every
        parameter, assumed defaults included, is echoed in ``expansion.parameter`` with the
        ``used-codesystem`` and ``used-valueset`` versions.
        """
        return self.service.expand(
            ExpandRequest(
                valueset=valueset,
                version=version,
                filter=filter,
                offset=offset,
                count=count,
                active_only=active_only,
                include_designations=include_designations,
                include_definition=include_definition,
                properties=tuple(properties or ()),
                exclude_nested=exclude_nested,
                designations=tuple(designations or ()),
                policy=VersionPolicy.from_parameters(
                    system_version=system_version,
                    force_system_version=force_system_version,
                    check_system_version=check_system_version,
                    default_valueset_version=default_valueset_version,
                ),
                display_language=display_language,
                accept_language=accept_language,
                use_supplements=tuple(use_supplements or ()),
                tx_resources=tuple(tx_resources or ()),
            )
        )

    def engine(self, tx_resources: Sequence[Mapping[str, Any]] | None = None) -> Terminology:
        """The terminology engine, or a view of it that sees ``tx_resources`` first (used for
        one call: nothing is stored, nothing leaks into other calls)."""
        return self.service.engine(tx_resources or ())

    @_hinting
    def validate_code(
        self,
        valueset: Mapping[str, Any] | str | None = None,
        *,
        url: str | None = None,
        code: str | None = None,
        system: str | None = None,
        version: str | None = None,
        display: str | None = None,
        coding: Mapping[str, Any] | None = None,
        codeable_concept: Mapping[str, Any] | None = None,
        abstract: bool = False,
        valueset_version: str | None = None,
        system_version: str | Sequence[str] | None = None,
        force_system_version: str | Sequence[str] | None = None,
        check_system_version: str | Sequence[str] | None = None,
        default_valueset_version: str | Sequence[str] | None = None,
        lenient_display: bool = False,
        membership_only: bool = False,
        active_only: bool = False,
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
        display_language: str | None = None,
        accept_language: str | None = None,
        use_supplements: Sequence[str] | None = None,
    ) -> ValidationResult:
        """Validate a code (or a Coding, or a CodeableConcept) against a value set.

        ``valueset`` is a canonical URL (``url`` or ``url|version``) or a ValueSet dict, as in
        ``expand`` and ``validate_column`` (``url=`` is a deprecated name for it).

        Returns a ValidationResult; a code that fails is ``result=False`` with a message, a
        ``reason`` and its ``issues``, never an exception. Raises ValueSetNotFoundError for
        an unknown value set. When ``system`` is omitted it is inferred: the value set's one
        system, else the one system of the value set that has the code. A ``display`` given
        with a ``coding`` is checked in place of the Coding's own, as in ``$validate-code``.

        Versions (see the README's "Versions"): ``system_version``, ``force_system_version``
        and ``check_system_version`` take ``"system|version"`` strings (one or a list; a
        version may be a pattern such as ``1.x``); ``default_valueset_version`` takes
        ``"url|version"`` for value sets imported without a version. ``lenient_display``
        makes a wrong display a warning, ``membership_only`` checks membership alone, and
        ``active_only`` refuses inactive codes. ``tx_resources`` are CodeSystems and ValueSets
        used for this call only, before the stored ones (``tx-resource``).
        ``display_language`` (a weighted list such as ``"de, *;q=0"``; else the value set's
        expansion-parameter extension, ``accept_language``, then ``ValueSet.language``) gives
        the display in that language and checks a given display against it (see the README's
        "Languages").

        >>> wb = Workbench()
        >>> _ = wb.load([{"resourceType": "CodeSystem", "url": "http://x", "version": v,
        ...     "content": "complete", "concept": [{"code": "a", "display": f"A {v}"}]}
        ...     for v in ("1.0.0", "2.0.0")])
        >>> vs = {"resourceType": "ValueSet", "compose": {"include": [{"system": "http://x"}]}}
        >>> wb.validate_code(valueset=vs, code="a", system="http://x").version
        '2.0.0'
        >>> wb.validate_code(valueset=vs, code="a", system="http://x",
        ...                  system_version="http://x|1.x").display
        'A 1.0.0'
        """
        if url is not None:
            warnings.warn(
                "validate_code(url=...) is deprecated: name the value set valueset=... (a "
                "canonical URL or a ValueSet), as expand, validate_column and the widgets do",
                DeprecationWarning,
                stacklevel=2,
            )
        target = valueset if valueset is not None else url
        if target is None:
            raise InvalidRequestError("Give the value set: a canonical url or a ValueSet")
        if code is None and coding is None and codeable_concept is None:
            raise InvalidRequestError(
                "Give something to validate: code, coding or codeable_concept"
            )
        return self.service.validate(
            ValidateRequest(
                valueset=target,
                valueset_version=valueset_version,
                code=code,
                system=system,
                version=version,
                display=display,
                coding=coding,
                codeable_concept=codeable_concept,
                options=CheckOptions(
                    abstract=abstract,
                    lenient_display=lenient_display,
                    membership_only=membership_only,
                    active_only=active_only,
                ),
                policy=VersionPolicy.from_parameters(
                    system_version=system_version,
                    force_system_version=force_system_version,
                    check_system_version=check_system_version,
                    default_valueset_version=default_valueset_version,
                ),
                display_language=display_language,
                accept_language=accept_language,
                use_supplements=tuple(use_supplements or ()),
                tx_resources=tuple(tx_resources or ()),
            )
        )

    def validate_in_codesystem(
        self,
        system: str,
        code: str | None,
        *,
        version: str | None = None,
        display: str | None = None,
        abstract: bool = True,
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
    ) -> ValidationResult:
        """Validate a code against a whole code system (abstract codes are valid unless
        ``abstract=False``)."""
        return self.service.validate_in_codesystem(
            CodeSystemValidateRequest(
                system=system,
                code=code,
                version=version,
                display=display,
                abstract=abstract,
                tx_resources=tuple(tx_resources or ()),
            )
        )

    def lookup(
        self,
        system: str,
        code: str,
        *,
        version: str | None = None,
        properties: Sequence[str] | None = None,
        display_language: str | None = None,
        accept_language: str | None = None,
        use_supplements: Sequence[str] = (),
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
    ) -> LookupResult:
        """Look a code up in its code system: display, designations and properties.

        ``display_language`` (a weighted list like Accept-Language, e.g. ``de, en;q=0.5``;
        before ``accept_language``, the HTTP header) picks the display in the first wanted
        language the code system or its supplements have (for SNOMED CT, the preferred term
        of its dialect), else the concept's own display: $lookup's display is required (R4),
        so even ``*;q=0`` falls back to it.
        ``use_supplements`` names supplements that must be loaded (else
        SupplementNotFoundError)."""
        return self.service.lookup(
            LookupRequest(
                system=system,
                code=code,
                version=version,
                properties=None if properties is None else tuple(properties),
                display_language=display_language,
                accept_language=accept_language,
                use_supplements=tuple(use_supplements),
                tx_resources=tuple(tx_resources or ()),
            )
        )

    def subsumes(
        self,
        system: str,
        code_a: str,
        code_b: str,
        *,
        version: str | None = None,
        tx_resources: Sequence[Mapping[str, Any]] | None = None,
    ) -> str:
        """Return equivalent, subsumes, subsumed-by or not-subsumed for A against B."""
        return self.service.subsumes(
            SubsumesRequest(
                system=system,
                code_a=code_a,
                code_b=code_b,
                version=version,
                tx_resources=tuple(tx_resources or ()),
            )
        )

    # --- columns ----------------------------------------------------------------------

    @_hinting
    def validate_column(
        self,
        data: Any,
        valueset: str | Mapping[str, Any],
        *,
        code: str | None = None,
        system: str | None = None,
        display: str | None = None,
        abstract: bool = False,
        progress: bool = False,
    ) -> Any:
        """Validate a column of codes against a value set, with validate_code's semantics.

        ``data`` is a Series of codes (or of Coding / CodeableConcept dicts), or a DataFrame
        with ``code`` naming the code column. ``system`` is a column name or one system URI;
        when omitted and the value set draws on one system, that one is used. ``display``
        names a column of displays to check. Returns a ValidationFrame aligned to the input
        (result, message, display, issue, system) with ``.summary()`` and
        ``.failure_cases``; missing codes give result NA and the issue ``missing``. A dask
        DataFrame or Series gives a lazy dask DataFrame (``progress=True`` shows Dask's
        progress bar while it computes). A polars DataFrame or Series gives a polars
        DataFrame of the same columns.

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
            display=display,
            abstract=abstract,
            progress=progress,
        )

    # --- serving ----------------------------------------------------------------------

    def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        *,
        base: str = "/fhir/R4",
        data_dir: str | Path | None = None,
    ) -> ServerHandle:
        """Serve this Workbench as a FHIR R4 terminology server in a background thread.

        The server works on this very object: what you load here is visible over HTTP at
        once, and writes over HTTP are visible here. ``port=0`` picks a free port. Returns a
        handle with ``.url``, ``.token`` and ``.stop()``; use it as a context manager.
        """
        from workbench.server.embedded import serve

        handle = serve(
            self.service, host=host, port=port, token=token, base=base, data_dir=data_dir
        )
        self.__dict__.setdefault("_servers", []).append(weakref.ref(handle))
        return handle
