"""Resolution and caches of the terminology engine: code systems (stored resources and
release providers), value sets (stored, implicit, contained), compiled value sets and what
is remembered per value set, dropped when a resource they depend on changes (the registry
announces the canonical URLs each write touches).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar, cast

from workbench import collector, forksafe, loading
from workbench.errors import (
    CodeSystemNotFoundError,
    DuplicateCanonicalError,
    ImportCycleError,
    ImportedValueSetNotFoundError,
    InvalidRequestError,
    SupplementNotFoundError,
    TooCostlyError,
    ValueSetNotFoundError,
)
from workbench.registry import Change, OverlayRegistry, Registry
from workbench.resources import Resource, canonical_of, split_canonical
from workbench.terminology import budget, supplements
from workbench.terminology.codesystem import CodeSystemIndex
from workbench.terminology.compose import Clause, CompiledValueSet
from workbench.terminology.definition import check_filter_values, import_refs
from workbench.terminology.expand.expansion import (
    DEFAULT_MAX_EXPANSION,
)
from workbench.terminology.provider import CodeSystemProvider
from workbench.terminology.versions import NO_POLICY, VersionPolicy, is_pattern

T = TypeVar("T")
_NOT_KEPT = object()  # what ``memo`` has not remembered yet


class Resolution:
    """Finds and caches the code systems and compiled value sets of one Registry (the base
    of ``Terminology``; expansion and validation build on it)."""

    def __init__(
        self,
        registry: Registry | OverlayRegistry,
        *,
        max_expansion: int = DEFAULT_MAX_EXPANSION,
        parent: Resolution | None = None,
    ) -> None:
        self.registry = registry
        self.max_expansion = max_expansion
        self._lock = forksafe.rlock()
        self._cs_cache: dict[int, tuple[Resource, CodeSystemProvider]] = {}
        self._vs_cache: dict[tuple[str, str | None], CompiledValueSet] = {}
        self._providers: dict[str, list[CodeSystemProvider]] = {}
        self._parent = parent
        self._releases_added = 0  # providers added (``revision``)
        if parent is not None:
            self._providers = parent._providers
        registry.subscribe(self._on_change)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as what it resolves from (its registry and release providers), without
        its caches and lock: how a Dask or Spark worker gets the engine itself (a request's
        view, ``with_resources``, is never shipped)."""
        if self._parent is not None:
            raise TypeError("a request's view of the engine (with_resources) is not shipped")
        return {
            "registry": self.registry,
            "max_expansion": self.max_expansion,
            "providers": self._providers,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        Resolution.__init__(self, state["registry"], max_expansion=state["max_expansion"])
        self._providers = state["providers"]

    # --- code systems from release files ------------------------------------------------

    def add_provider(self, provider: CodeSystemProvider) -> None:
        """Make a code system provider (a terminology loaded from its release files) known.

        A provider is a ``CodeSystemProvider`` (``provider.py``: the whole contract the
        engine uses, declared on the base class). The latest added is the default
        version. Raises DuplicateCanonicalError when that url and version is already
        loaded, and then changes nothing.
        """
        with self._lock:
            self.check_new_provider(provider.url, provider.version)
            known = self._providers.get(provider.url, [])
            self._providers[provider.url] = [provider, *known]
            self._releases_added += 1
            self._vs_cache.clear()

    def check_new_provider(self, url: str, version: str | None) -> None:
        """Raise DuplicateCanonicalError when a code system ``url|version`` is already loaded
        (from release files or as a CodeSystem resource)."""
        clash = any(p.version == version for p in self._providers.get(url, ())) or (
            self.registry.get("CodeSystem", url, version) is not None
        )
        if clash:
            raise DuplicateCanonicalError(
                f"CodeSystem {url}|{version} is already loaded: load another version, or "
                "pass version= to load this release under another one"
            )

    def revision(self) -> tuple[int, int]:
        """A value that changes whenever the content answers are drawn from changes: a write
        to the registry (a resource loaded, stored, replaced or deleted: its generation) or a
        terminology loaded from its release files (a provider added). Equal revisions, equal
        answers to equal requests (what the server's answer memo relies on)."""
        return self.registry.generation, self._releases_added

    def providers(self) -> list[Any]:
        """Every loaded provider (the default version of each system first)."""
        return [p for found in self._providers.values() for p in found]

    # --- caches -----------------------------------------------------------------------

    def _on_change(self, change: Change) -> None:
        with self._lock:
            for key, compiled in list(self._vs_cache.items()):
                if compiled.dependencies & change.urls:
                    del self._vs_cache[key]
            touched = {url for rtype, url in change.urls if rtype == "CodeSystem"}
            stored = [self.registry.get("CodeSystem", url) for url in touched]
            if any(r is None or supplements.is_supplement(r) for r in stored) and touched:
                # a supplement came or went: the indexes it adds to must be rebuilt
                self._cs_cache.clear()
                self._vs_cache.clear()
            for rid, (resource, _) in list(self._cs_cache.items()):
                if resource.get("url") in touched:
                    del self._cs_cache[rid]

    def codesystem(self, url: str, version: str | None = None) -> CodeSystemProvider | None:
        """Return the index of a code system (latest version when none given), or None."""
        for provider in self._providers.get(url, ()):
            if version is None or provider.version == version or provider.accepts_version(version):
                return provider
        resource = self.registry.get("CodeSystem", url, version)
        if resource is None or supplements.is_supplement(resource):
            return None  # a supplement is never a code system itself
        return self.index_of(resource)

    def index_of(self, resource: Resource) -> CodeSystemProvider:
        """Return the (cached) index of a CodeSystem resource."""
        if self._parent is not None and not self._owns(resource):
            return self._parent.index_of(resource)  # a stored one: the shared cache
        cached = self._cs_cache.get(id(resource))
        if cached is not None and cached[0] is resource:
            return cached[1]
        generation = self.registry.generation
        with budget.building():
            budget.charge(len(resource.get("concept") or ()))
            index = CodeSystemIndex(resource)
            for supplement in supplements.supplements_of(resource, self.registry.all("CodeSystem")):
                index.add_supplement(supplement)
        with self._lock:
            if self.registry.generation == generation:  # no supplement came or went meanwhile
                self._cs_cache[id(resource)] = (resource, index)
        return index

    def require_supplements(self, canonicals: Sequence[str], where: str) -> None:
        """Raise SupplementNotFoundError unless every canonical names a loaded supplement
        (``useSupplement``, the value set's supplement extension)."""
        for canonical in canonicals:
            url, version = split_canonical(canonical)
            found = self.registry.get("CodeSystem", url, version)
            if found is None or not supplements.is_supplement(found):
                raise SupplementNotFoundError(
                    f"The supplement {canonical} that {where} asks for is not loaded"
                    + ("" if found is None else " (it is not a CodeSystem supplement)")
                )
            target, _ = split_canonical(str(found.get("supplements", "")))
            base = self.registry.get("CodeSystem", target)
            if base is None or not supplements.applies_to(found, base):
                raise SupplementNotFoundError(
                    f"The supplement {canonical} supplements {found.get('supplements')}, "
                    "which is not loaded in a version it applies to"
                )

    def _owns(self, resource: Resource) -> bool:
        """True when ``resource`` came with this view's request (tx-resource)."""
        own = self.registry.top if isinstance(self.registry, OverlayRegistry) else None
        if own is None:
            return False
        sent = own.all("CodeSystem")
        return any(r is resource for r in sent) or bool(supplements.supplements_of(resource, sent))

    def require_codesystem(self, url: str | None, version: str | None = None) -> CodeSystemProvider:
        """Return a code system's index or raise CodeSystemNotFoundError (naming the
        loaded versions when only the version asked for is missing)."""
        if not url:
            raise InvalidRequestError("No code system was given (the 'system' or 'url' input)")
        found = self.codesystem(url, version)
        if found is None:
            loaded = self.codesystem_versions(url) if version else []
            said = ", ".join(map(repr, loaded))
            raise CodeSystemNotFoundError(
                url, version, context=f"the loaded versions are {said}" if loaded else ""
            )
        return found

    def codesystem_versions(self, url: str) -> list[str]:
        """Every loaded version of a code system (release providers and resources)."""
        found = [str(p.version) for p in self._providers.get(url, ()) if p.version]
        return found + [v for v in self.registry.versions("CodeSystem", url) if v]

    def include_codesystem(
        self, url: str, pinned: str | None, policy: VersionPolicy = NO_POLICY
    ) -> CodeSystemProvider | None:
        """The code system version an include uses (``versions``: forced, pinned, the
        default, the latest match of ``check-system-version``, the latest), or None when
        that version is not loaded. The version an include names must be an exact version
        or a pattern: ``1`` is no prefix of ``1.0.0`` (b1)."""
        forced = policy.force.get(url)
        if forced is not None or pinned is None:
            wanted = forced or policy.defaults.get(url)
            if wanted is None and url in policy.check:
                return self.codesystem(url, policy.check[url]) or self.codesystem(url)
            return self.codesystem(url, wanted)
        if is_pattern(pinned):
            return self.codesystem(url, pinned)
        for provider in self._providers.get(url, ()):
            if provider.version == pinned or provider.accepts_version(pinned):
                return provider
        if pinned not in self.registry.versions("CodeSystem", url):
            return None
        return self.codesystem(url, pinned)

    def valueset_resource(self, url: str, version: str | None = None) -> Resource:
        """Return a stored ValueSet by canonical, or raise ValueSetNotFoundError (naming the
        loaded versions when only the version asked for is missing)."""
        if version is None:
            url, version = split_canonical(url)
        found = self.registry.get("ValueSet", url, version)
        if found is None and version is None:
            found = self._implicit_valueset(url)
        if found is None:
            loaded = [v for v in self.registry.versions("ValueSet", url) if v] if version else []
            said = ", ".join(map(repr, loaded))
            raise ValueSetNotFoundError(
                f"{url}|{version}" if version else url,
                context=f"the loaded versions are {said}" if loaded else "",
            )
        return found

    def _implicit_valueset(self, url: str) -> Resource | None:
        """A provider's implicit value set (``http://snomed.info/sct?fhir_vs=…``)."""
        base = url.partition("?")[0]
        for system, found in self._providers.items():
            if not found:
                continue
            make = found[0].implicit_valueset
            if base == system or base.startswith(system + "/"):
                return make(url)
            # an edition URI the system spells otherwise (http://snomed.info/xsct/…)
            other = make(url) if "?fhir_vs" in url else None
            if other is not None:
                return other
        return None

    def implicit_conceptmap(self, url: str) -> Resource | None:
        """A provider's implicit ConceptMap (``http://snomed.info/sct?fhir_cm=…``), or None.
        Each provider with the hook decides whether the URL is one of its own (an edition
        URI before the ``?`` need not start with the system's URL)."""
        for provider in self.providers():
            resource = provider.implicit_conceptmap(url)
            if resource is not None:
                return resource
        return None

    def compiled(
        self,
        valueset: str | Mapping[str, Any],
        version: str | None = None,
        policy: VersionPolicy = NO_POLICY,
    ) -> CompiledValueSet:
        """Compile a value set given by canonical URL or as a ValueSet dict (cached by URL
        and by the request's version parameters)."""
        if not isinstance(valueset, str) and isinstance(valueset, Mapping):  # (str first: cheap)
            loading.check_valueset(valueset, "The value set given")  # vsd-1/2/3, as when loading
            return self._compile(dict(valueset), (), policy)
        url, pinned = split_canonical(valueset)
        key = _cache_key(url, version or pinned, policy)
        found = self._vs_cache.get(key)
        if found is None:
            # Cached only when no write came between reading the registry and storing: a
            # write bumps the generation before it invalidates, so a value set compiled from
            # what the write replaced is never cached after its invalidation (no stale answer).
            generation = self.registry.generation
            resource = self.valueset_resource(url, version or pinned)
            with budget.building(), collector.paused():
                found = self._compile(resource, (), policy)
            with self._lock:
                if self.registry.generation == generation:
                    found.kept = True
                    self._vs_cache[key] = found
        return found

    def is_compiled(
        self, valueset: str | Mapping[str, Any], version: str | None, policy: VersionPolicy
    ) -> bool:
        """Whether ``compiled`` would answer this value set from its cache (diagnostics);
        an inline ValueSet is compiled for each request."""
        if not isinstance(valueset, str):
            return False
        url, pinned = split_canonical(valueset)
        return _cache_key(url, version or pinned, policy) in self._vs_cache

    def memo(self, compiled: CompiledValueSet, key: Hashable, factory: Callable[[], T]) -> T:
        """Remember something derived from a compiled value set for as long as it is cached
        (for example the bulk validator's index of plainly valid members)."""
        found = compiled.extras.get(key, _NOT_KEPT)
        if found is not _NOT_KEPT:
            return cast(T, found)
        with collector.paused():  # such indexes are large and kept: no cycles to find
            value = factory()
        with self._lock:
            compiled.extras[key] = value
        return cast(T, compiled.extras[key])

    def _compile(
        self,
        resource: Resource,
        stack: tuple[str, ...],
        policy: VersionPolicy = NO_POLICY,
        memo: dict[str, CompiledValueSet] | None = None,
    ) -> CompiledValueSet:
        """Compile one value set. ``memo`` shares what this compile already built: a value
        set imported along several paths is compiled once (and one already cached is
        reused), so imports cost what they hold, not the number of paths to them."""
        canonical = canonical_of(resource) or "(inline ValueSet)"
        if canonical in stack:
            chain = " -> ".join((*stack, canonical))
            raise ImportCycleError(f"The value sets import each other in a cycle: {chain}")
        if len(stack) >= MAX_IMPORT_DEPTH:
            raise TooCostlyError(
                f"The value set imports nest more than {MAX_IMPORT_DEPTH} levels deep "
                f"(at {canonical})"
            )
        memo = {} if memo is None else memo
        budget.charge(1)
        stack = (*stack, canonical)
        check_filter_values(resource)
        compose = resource.get("compose") or {}
        deps: set[tuple[str, str]] = set()
        if resource.get("url"):
            deps.add(("ValueSet", str(resource["url"])))

        def clause(raw: Mapping[str, Any], exclude: bool) -> Clause:
            system = raw.get("system")
            cs = None
            if system:
                deps.add(("CodeSystem", str(system)))
                cs = self.include_codesystem(str(system), raw.get("version"), policy)
            imports = []
            for url, version in import_refs(raw):
                budget.charge(1)
                if url.startswith("#"):
                    inner = contained(resource, url)
                    imported = self._imported(inner, stack, policy, memo)
                    deps.update(imported.dependencies)
                    imports.append(imported)
                    continue
                deps.add(("ValueSet", url))
                version = version or policy.valueset_defaults.get(url)
                cached = self._vs_cache.get(_cache_key(url, version, policy))
                if cached is None:
                    try:
                        inner = self.valueset_resource(url, version)
                    except ValueSetNotFoundError as exc:
                        raise ImportedValueSetNotFoundError(exc.url, canonical) from None
                    cached = self._imported(inner, stack, policy, memo)
                deps.update(cached.dependencies)
                imports.append(cached)
            return Clause(raw, cs, imports, exclude=exclude)

        includes = [clause(raw, False) for raw in compose.get("include", ()) or ()]
        excludes = [clause(raw, True) for raw in compose.get("exclude", ()) or ()]
        compiled = CompiledValueSet(resource, includes, excludes, frozenset(deps))
        memo[canonical] = compiled
        return compiled

    def _imported(
        self,
        resource: Resource,
        stack: tuple[str, ...],
        policy: VersionPolicy,
        memo: dict[str, CompiledValueSet],
    ) -> CompiledValueSet:
        canonical = canonical_of(resource) or "(inline ValueSet)"
        found = memo.get(canonical)
        return found if found is not None else self._compile(resource, stack, policy, memo)


MAX_IMPORT_DEPTH = 100


def _cache_key(url: str, version: str | None, policy: VersionPolicy) -> tuple[Any, ...]:
    """The key of a compiled value set in the cache: its canonical and the request's version
    parameters."""
    return (url, version, *policy.key()) if policy else (url, version)


def contained(resource: Resource, reference: str) -> Resource:
    """The ValueSet a ``#id`` reference names among ``resource.contained``."""
    for inner in resource.get("contained", ()) or ():
        if isinstance(inner, Mapping) and inner.get("id") == reference[1:]:
            if inner.get("resourceType") != "ValueSet":
                raise InvalidRequestError(f"The contained resource {reference} is not a ValueSet")
            found = dict(inner)
            found.setdefault("url", f"{canonical_of(resource) or 'inline'}{reference}")
            return found
    where = canonical_of(resource) or "the value set"
    raise ImportedValueSetNotFoundError(
        reference, where, f"no contained ValueSet with that id in {where}"
    )
