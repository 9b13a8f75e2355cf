"""The terminology engine over a Registry: resolution, caches, expand, validate, lookup.

Compiled value sets and code system indexes are cached and dropped when a resource they
depend on changes (the registry announces the canonical URLs each write touches).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any, TypeVar, cast

from workbench import collector, forksafe, loading
from workbench.errors import (
    CodeSystemNotFoundError,
    DuplicateCanonicalError,
    ImportCycleError,
    InvalidRequestError,
    InvalidResourceError,
    LoadError,
    SupplementNotFoundError,
    TooCostlyError,
    ValueSetNotFoundError,
    VersionCheckError,
)
from workbench.registry import Change, OverlayRegistry, Registry
from workbench.resources import Resource, canonical_of, split_canonical
from workbench.terminology import budget, languages, supplements
from workbench.terminology.codesystem import CodeSystemIndex
from workbench.terminology.compose import Clause, CompiledValueSet, Entry, import_refs
from workbench.terminology.expansion import (
    DEFAULT_MAX_EXPANSION,
    Expansion,
    designations_kept,
    echoed_parameters,
)
from workbench.terminology.provider import CodeSystemProvider
from workbench.terminology.requests import ExpandRequest, ValidateRequest
from workbench.terminology.textindex import TextIndex
from workbench.terminology.validation import (
    CheckOptions,
    Issue,
    ValidationResult,
    coding_parts,
    combine_codings,
    failure,
    located,
    status_checks,
    validate_in_codesystem,
    validate_in_valueset,
)
from workbench.terminology.versions import NO_POLICY, VersionPolicy
from workbench.terminology.versions import matches as version_matches

T = TypeVar("T")
# Remembers what depends on the value set alone while it stays compiled: (key, factory).
_PerValueSet = Callable[[Hashable, Callable[[], Any]], Any]


class Terminology:
    """Expansion, validation, lookup and subsumption over the resources of a Registry."""

    def __init__(
        self,
        registry: Registry | OverlayRegistry,
        *,
        max_expansion: int = DEFAULT_MAX_EXPANSION,
        parent: Terminology | None = None,
    ) -> None:
        self.registry = registry
        self.max_expansion = max_expansion
        self._lock = forksafe.rlock()
        self._cs_cache: dict[int, tuple[Resource, CodeSystemProvider]] = {}
        self._vs_cache: dict[tuple[str, str | None], CompiledValueSet] = {}
        self._providers: dict[str, list[CodeSystemProvider]] = {}
        self._parent = parent
        if parent is not None:
            self._providers = parent._providers
        registry.subscribe(self._on_change)

    def with_resources(self, resources: Sequence[Mapping[str, Any]]) -> Terminology:
        """A view of this engine that sees ``resources`` (CodeSystems, ValueSets and
        supplements passed with one request, ``tx-resource``) before the stored ones.

        Nothing is stored and nothing is cached beyond the view, so concurrent requests
        never see each other's resources. Raises InvalidRequestError for anything that is
        not a well-formed CodeSystem or ValueSet with a url.
        """
        own = Registry()
        checked: list[Resource] = []
        for i, resource in enumerate(resources):
            if not isinstance(resource, Mapping):
                raise InvalidRequestError(f"tx-resource {i + 1} is not a resource")
            rtype = resource.get("resourceType")
            if rtype not in ("CodeSystem", "ValueSet"):
                raise InvalidRequestError(
                    f"tx-resource {i + 1} must be a CodeSystem or a ValueSet, not {rtype!r}"
                )
            if not isinstance(resource.get("url"), str) or not resource["url"]:
                raise InvalidRequestError(
                    f"tx-resource {i + 1} ({rtype}) needs a url, so that it can be referred to"
                )
            checked.append(dict(resource))
        try:
            found, _ = loading.read_source(checked, progress=False)
        except (LoadError, InvalidResourceError) as exc:
            raise InvalidRequestError(f"A tx-resource is not valid: {exc.text}") from exc
        own.add_many(found)
        return Terminology(
            OverlayRegistry(own, self.registry), max_expansion=self.max_expansion, parent=self
        )

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
        """Return a code system's index or raise CodeSystemNotFoundError."""
        if not url:
            raise InvalidRequestError("No code system was given (the 'system' or 'url' input)")
        found = self.codesystem(url, version)
        if found is None:
            raise CodeSystemNotFoundError(url, version)
        return found

    def valueset_resource(self, url: str, version: str | None = None) -> Resource:
        """Return a stored ValueSet by canonical, or raise ValueSetNotFoundError."""
        if version is None:
            url, version = split_canonical(url)
        found = self.registry.get("ValueSet", url, version)
        if found is None and version is None:
            found = self._implicit_valueset(url)
        if found is None:
            raise ValueSetNotFoundError(f"{url}|{version}" if version else url)
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
        if isinstance(valueset, Mapping):
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

    def memo(self, compiled: CompiledValueSet, key: Hashable, factory: Callable[[], T]) -> T:
        """Remember something derived from a compiled value set for as long as it is cached
        (for example the bulk validator's index of plainly valid members)."""
        if key not in compiled.extras:
            with collector.paused():  # such indexes are large and kept: no cycles to find
                value = factory()
            with self._lock:
                compiled.extras[key] = value
        return compiled.extras[key]

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
        compose = resource.get("compose") or {}
        deps: set[tuple[str, str]] = set()
        if resource.get("url"):
            deps.add(("ValueSet", str(resource["url"])))

        def clause(raw: Mapping[str, Any], exclude: bool) -> Clause:
            system = raw.get("system")
            cs = None
            if system:
                deps.add(("CodeSystem", str(system)))
                wanted = policy.resolve(str(system), raw.get("version"))
                cs = self.codesystem(str(system), wanted)
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
                    inner = self.valueset_resource(url, version)
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

    # --- operations -------------------------------------------------------------------

    def expand(self, req: ExpandRequest) -> Expansion:
        """Expand a value set; see ``Workbench.expand``."""
        if req.offset < 0:
            raise InvalidRequestError(f"offset must be 0 or more, not {req.offset}")
        if req.count is not None and req.count < 0:
            raise InvalidRequestError(f"count must be 0 or more, not {req.count}")
        policy = req.policy
        compiled = self.compiled(req.valueset, req.version, policy)
        asked = [*req.use_supplements, *supplements.valueset_supplements(compiled.resource)]
        if asked:
            self.require_supplements(asked, f"the expansion of {compiled.canonical}")
        entries: Sequence[Entry] = compiled.entries()
        params = echoed_parameters(req)
        if req.filter:
            entries = self._text_filtered(compiled, req.filter, entries)
        if req.active_only:
            entries = [e for e in entries if not e.inactive]
        if req.filter:
            params.append(("filter", req.filter))
        if req.include_designations or req.display_language:
            entries = self._from_providers(entries, req.include_designations, req.display_language)
        wanted = languages.requested(
            req.display_language, compiled.resource, req.accept_language, wildcard=True
        )
        if wanted:
            entries = [self._shown(e, wanted) for e in entries]
            params.append(("displayLanguage", wanted.text))
        if req.designations:
            entries = designations_kept(entries, req.designations)
            params += [("designation", t) for t in req.designations]
        used = sorted({(e.system, e.version) for e in entries if e.system})
        for system, checked in policy.check.items():
            wrong = [v for s, v in used if s == system and v and not version_matches(checked, v)]
            if wrong:
                raise VersionCheckError(
                    f"The version '{wrong[0]}' of the code system '{system}' is not allowed: "
                    f"required to be '{checked}' by the check-system-version parameter"
                )
        params += [("used-codesystem", f"{s}|{v}" if v else s) for s, v in used]
        params += [("used-valueset", vs.canonical) for vs in compiled.imported() if vs.url]
        return Expansion(
            valueset=compiled.resource,
            entries=tuple(entries),
            offset=req.offset,
            count=req.count,
            parameters=tuple(params),
            include_designations=req.include_designations,
            include_definition=req.include_definition,
            properties=self._properties(entries, req.properties) if req.properties else {},
            parents=self._parents(entries) if req.exclude_nested is False else None,
            max_size=self.max_expansion,
        )

    def _text_filtered(
        self, compiled: CompiledValueSet, text: str, entries: Sequence[Entry]
    ) -> list[Entry]:
        """The entries whose code or display contains every word of ``text``, through the
        value set's text index (built once while it is cached)."""
        with budget.building() if compiled.kept else nullcontext():
            index = self.memo(compiled, "text-index", lambda: TextIndex(entries))
        return [entries[i] for i in index.search(text)]

    def _shown(self, entry: Entry, wanted: languages.Languages) -> Entry:
        """The entry with its display in the wanted languages (None when there is none and
        the request allows no other language)."""
        cs = self.codesystem(entry.system, entry.version)
        if cs is None:
            shown = languages.display_in(wanted, entry.display, None, entry.designations)
        else:
            shown = cs.display_for(entry.code, entry.display, entry.designations, wanted)
        return entry._replace(display=shown)

    def _parents(self, entries: Sequence[Entry]) -> dict[tuple[str, str], tuple[str, str]]:
        """For a nested expansion: each entry's parent among the entries (its first parent
        in the code system's hierarchy that is itself in the expansion)."""
        members = {(e.system, e.code) for e in entries}
        found: dict[tuple[str, str], tuple[str, str]] = {}
        for e in entries:
            cs = self.codesystem(e.system, e.version)
            concept = cs.get(e.code) if cs is not None else None
            for parent in concept.parents if concept is not None else ():
                if (e.system, parent) in members:
                    found[(e.system, e.code)] = (e.system, parent)
                    break
        return found

    def _properties(
        self, entries: Sequence[Entry], wanted: Sequence[str]
    ) -> dict[tuple[str, str], tuple[tuple[str, str, Any], ...]]:
        """The requested concept properties of each entry: ``(code, value[x] key, value)``."""
        found: dict[tuple[str, str], tuple[tuple[str, str, Any], ...]] = {}
        names = set(wanted)
        for e in entries:
            cs = self.codesystem(e.system, e.version)
            concept = cs.get(e.code) if cs is not None else None
            if concept is None:
                continue
            values: list[tuple[str, str, Any]] = []
            for name in wanted:
                for value in concept.properties.get(name, ()):
                    values.append((name, concept.value_keys.get(name, "valueString"), value))
            if "definition" in names and concept.definition:
                values.append(("definition", "valueString", concept.definition))
            if "inactive" in names and "inactive" not in concept.properties:
                values.append(("inactive", "valueBoolean", concept.inactive))
            if "parent" in names and "parent" not in concept.properties:
                values += [("parent", "valueCode", p) for p in concept.parents]
            if values:
                found[(e.system, e.code)] = tuple(values)
        return found

    def _from_providers(
        self, entries: Sequence[Entry], designations: bool, language: str | None
    ) -> list[Entry]:
        """Entries of release code systems read their designations (and their display in a
        language or dialect) from the provider only when an expansion asks for them."""
        out = []
        for e in entries:
            cs = self.codesystem(e.system, e.version) if e.system in self._providers else None
            if cs is not None:
                if designations and not e.designations:
                    e = e._replace(designations=tuple(cs.designations_of(e.code)))
                if language:
                    shown = cs.display_in(e.code, language)
                    if shown:
                        e = e._replace(display=shown)
            out.append(e)
        return out

    def validate_code(self, req: ValidateRequest) -> ValidationResult:
        """Validate a code, Coding or CodeableConcept against a value set.

        ``req.policy`` carries the version parameters (force/default/check per system,
        default value set versions); ``req.options`` the strictness switches. A Coding's own
        version is the default version of its system for the includes that pin none; a
        ``display`` given beside a Coding is checked in place of the Coding's own.
        """
        valueset, policy = req.valueset, req.policy
        first = (
            None
            if isinstance(valueset, Mapping)
            else self.compiled(valueset, req.valueset_version, policy)
        )
        resource: Mapping[str, Any] = (
            first.resource if first is not None else cast(Mapping[str, Any], valueset)
        )

        def per_valueset(key: Hashable, factory: Callable[[], T]) -> T:
            """What depends on the value set alone: remembered while it stays compiled."""
            return factory() if first is None else self.memo(first, key, factory)

        opts = self._check_options(req, resource, per_valueset)

        def one(parts: Mapping[str, str | None], path: str) -> ValidationResult:
            used = policy
            wanted, of = parts.get("version"), parts.get("system")
            if wanted and of and of not in policy.force:
                used = policy.with_default(of, wanted)
            compiled = (
                first
                if first is not None and used is policy
                else self.compiled(valueset, req.valueset_version, used)
            )
            result = validate_in_valueset(
                compiled,
                self.codesystem,
                code=parts.get("code"),
                system=parts.get("system"),
                version=parts.get("version"),
                display=parts.get("display"),
                options=opts,
                versions=self.codesystem_versions,
            )
            return located(result, path)

        if req.codeable_concept is not None:
            codings = req.codeable_concept.get("coding") or []
            if not codings:
                raise InvalidRequestError("The codeableConcept has no coding to validate")
            canonical = self.compiled(valueset, req.valueset_version, policy).canonical
            where = f"the value set '{canonical}'"
            result = combine_codings([one(coding_parts(c), "") for c in codings], where)
        elif req.coding is not None:
            coding = req.coding
            if req.display is not None:
                coding = {**coding, "display": req.display}
            result = one(coding_parts(coding), "Coding")
        else:
            given = {
                "code": req.code,
                "system": req.system,
                "version": req.version,
                "display": req.display,
            }
            result = one(given, "")
        return self._with_status_notes(result, resource, first, per_valueset)

    def _check_options(
        self, req: ValidateRequest, resource: Mapping[str, Any], per_valueset: _PerValueSet
    ) -> CheckOptions:
        """The request's switches with what the validation needs besides: the versions to
        check or force, the wanted display languages. Raises SupplementNotFoundError for a
        supplement the request or the value set asks for that is not loaded."""
        opts, policy = req.options, req.policy
        if policy.check or policy.force or opts.check_versions or opts.force_versions:
            opts = dataclasses.replace(
                opts, check_versions={**policy.check}, force_versions={**policy.force}
            )
        asked = [
            *req.use_supplements,
            *per_valueset(
                ("validate", "supplements"), lambda: supplements.valueset_supplements(resource)
            ),
        ]
        if asked:
            self.require_supplements(asked, f"the validation against {canonical_of(resource)}")
        if req.display_language or req.accept_language:
            wanted = languages.requested(
                req.display_language, resource, req.accept_language, wildcard=False
            )
        else:
            wanted = per_valueset(
                ("validate", "languages"),
                lambda: languages.requested(None, resource, None, wildcard=False),
            )
        return dataclasses.replace(opts, languages=wanted) if wanted else opts

    def _with_status_notes(
        self,
        result: ValidationResult,
        resource: Mapping[str, Any],
        first: CompiledValueSet | None,
        per_valueset: _PerValueSet,
    ) -> ValidationResult:
        """The result with the status-check notes about the value set and the code system
        used; a code system the value set draws on is one of its dependencies, so its notes
        can be remembered with the compiled value set too."""
        own = per_valueset(("validate", "status"), lambda: tuple(status_checks([resource])))
        used = result.system
        if used and first is not None and used in first.systems():
            theirs = self.memo(
                first,
                ("validate", "status", used, result.version),
                lambda: self._codesystem_status(used, result.version),
            )
        else:
            theirs = self._codesystem_status(used, result.version)
        notes = (*own, *theirs)
        return dataclasses.replace(result, issues=(*result.issues, *notes)) if notes else result

    def _codesystem_status(self, system: str | None, version: str | None) -> tuple[Issue, ...]:
        """The status-check notes about the code system a validation used."""
        if not system:
            return ()
        cs = self.codesystem(system, version)
        if cs is None or not cs.resource:
            return ()
        return tuple(status_checks([cs.resource]))

    def codesystem_versions(self, url: str) -> list[str]:
        """Every loaded version of a code system (release providers and resources)."""
        found = [str(p.version) for p in self._providers.get(url, ()) if p.version]
        return found + [v for v in self.registry.versions("CodeSystem", url) if v]

    def validate_in_codesystem(
        self,
        url: str,
        *,
        code: str | None,
        version: str | None = None,
        display: str | None = None,
        abstract: bool = True,
    ) -> ValidationResult:
        """Validate a code against a whole code system."""
        found = self.codesystem(url, version)
        if found is None:
            label = f"{url}|{version}" if version else url
            return failure(
                "unknown-system",
                f"A definition for CodeSystem '{label}' could not be "
                f"found, so the code '{code}' cannot be validated",
                code=code,
                system=url,
                version=version,
            )
        return validate_in_codesystem(found, code=code, display=display, abstract=abstract)


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
    raise ValueSetNotFoundError(f"{reference} (no contained ValueSet with that id in {where})")
