"""Reading FHIR terminology resources from files, folders, Bundles and NPM packages.

``read_source`` parses everything first and returns the resources; nothing reaches the
registry until the whole source has been read and checked, so a bad file leaves nothing
half-loaded. Only ValueSets, CodeSystems and ConceptMaps are kept as terminology, and SQL on
FHIR ViewDefinitions as definitions; other resource types are counted.
"""

from __future__ import annotations

import html
import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from workbench import jsonio, packages, structure
from workbench.bindings.structures import StructureDef, structure_of
from workbench.errors import InvalidResourceError, LoadError, PackageNotFoundError
from workbench.registry import TERMINOLOGY_TYPES
from workbench.resources import Resource, canonical_of
from workbench.terminology.conceptmap import check_conceptmap

PROGRESS_THRESHOLD = 500
#: Resource types kept whole beside the terminology (``Workbench.definitions``).
DEFINITION_TYPES = frozenset({"ViewDefinition"})
#: The kinds of StructureDefinition kept for binding checks (logical models are counted).
STRUCTURE_KINDS = frozenset({"resource", "complex-type", "primitive-type"})
_SKIP_NAMES = {"package.json", ".index.json", "package-lock.json"}


class OneLine:
    """A summary shown as one line of text (``line``): its repr ``<Type line>``, what
    ``print`` and the command line show ``Loaded line``."""

    def line(self) -> str:
        """The summary as one line of text."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.line()}>"

    def __str__(self) -> str:
        return f"Loaded {self.line()}"


@dataclass(frozen=True, repr=False)
class LoadSummary(OneLine):
    """What one ``load`` call read: the terminology resources kept (their canonicals), the
    other resource types counted, files read, and the FHIR package it was (when it was one).

    It shows as one line of counts of the terminology resources and one line for the rest.
    """

    source: str
    files: int
    valuesets: tuple[str, ...] = ()
    codesystems: tuple[str, ...] = ()
    skipped: Mapping[str, int] = field(default_factory=dict)
    conceptmaps: tuple[str, ...] = ()
    package: str | None = None
    #: What was kept although R4 requires it (issue 22, e2): a CodeSystem or ValueSet
    #: without ``status``, a filter without a value; each ``"<canonical>: <text>"``.
    warnings: tuple[str, ...] = ()
    #: The definitions kept beside the terminology (``DEFINITION_TYPES``: SQL on FHIR
    #: ViewDefinitions), whole.
    definitions: tuple[Resource, ...] = field(default=(), compare=False)
    #: The StructureDefinitions kept for binding checks (each URL once), reduced, and the
    #: ones that cannot be used (``"<url>: <why>"``: no snapshot).
    structures: tuple[StructureDef, ...] = field(default=(), compare=False)
    unusable: tuple[str, ...] = ()

    def counts(self) -> str:
        """``1,327 ValueSets, 1,063 CodeSystems, 42 ConceptMaps`` (and the definitions kept,
        when there are some: ``, 2 ViewDefinitions``)."""
        kinds = Counter(str(r["resourceType"]) for r in self.definitions)
        if self.structures:
            kinds["StructureDefinition"] = len(self.structures)
        return ", ".join(
            [
                counted(len(found), kind)
                for found, kind in (
                    (self.valuesets, "ValueSet"),
                    (self.codesystems, "CodeSystem"),
                    (self.conceptmaps, "ConceptMap"),
                )
            ]
            + [counted(n, kind) for kind, n in sorted(kinds.items())]
        )

    def rest(self) -> str:
        """The other resources in one line: how many, of the three commonest types."""
        total = sum(self.skipped.values())
        if not total:
            return "no other resources"
        common = sorted(self.skipped.items(), key=lambda item: (-item[1], item[0]))
        shown = ", ".join(f"{n:,} {kind}" for kind, n in common[:3])
        more = len(common) - 3
        return f"{counted(total, 'other resource')} skipped ({shown}" + (
            f" and {counted(more, 'more type')})" if more > 0 else ")"
        )

    def line(self) -> str:
        """The summary as one line of text (``OneLine``)."""
        warned = f"; {counted(len(self.warnings), 'warning')}" if self.warnings else ""
        return (
            f"{self.source}: {self.counts()} from {counted(self.files, 'file')}; "
            f"{self.rest()}{warned}"
        )

    def _repr_html_(self) -> str:
        rest = html.escape(self.rest())
        return (
            f"<p>Loaded <code>{html.escape(self.source)}</code>: {html.escape(self.counts())} "
            f"from {counted(self.files, 'file')}.<br>{rest[:1].upper() + rest[1:]}.</p>"
            + "".join(f"<p>Warning: {html.escape(w)}</p>" for w in self.warnings[:10])
        )


def counted(n: int, kind: str) -> str:
    """``1 file``, ``5,306 files``."""
    return f"{n:,} {kind}{'' if n == 1 else 's'}"


def parse_json(data: bytes | str, origin: str, *, exact_decimals: bool = False) -> Any:
    """Parse JSON, raising LoadError that names ``origin`` when it is not valid JSON."""
    try:
        return jsonio.loads(data, exact_decimals=exact_decimals)
    except orjson.JSONDecodeError as exc:
        raise LoadError(f"{origin}: not valid JSON ({exc})") from exc


def check_valueset(resource: Mapping[str, Any], origin: str) -> None:
    """Raise InvalidResourceError when a ValueSet breaks vsd-1, vsd-2 or vsd-3."""
    compose = resource.get("compose")
    if compose is None:
        return
    name = canonical_of(resource) or resource.get("id") or "(without url)"
    if not isinstance(compose, Mapping):
        raise InvalidResourceError(f"{origin}: ValueSet {name}: compose must be an object")
    for part in ("include", "exclude"):
        clauses = compose.get(part) or []
        if not isinstance(clauses, list):
            raise InvalidResourceError(f"{origin}: ValueSet {name}: compose.{part} must be a list")
        for i, clause in enumerate(clauses):
            where = f"{origin}: ValueSet {name}: compose.{part}[{i}]"
            if not isinstance(clause, Mapping):
                raise InvalidResourceError(f"{where} must be an object")
            if not clause.get("system") and not clause.get("valueSet"):
                raise InvalidResourceError(f"{where} breaks vsd-1: it needs a system or a valueSet")
            if (clause.get("concept") or clause.get("filter")) and not clause.get("system"):
                raise InvalidResourceError(
                    f"{where} breaks vsd-2: concepts and filters need a system"
                )
            if clause.get("concept") and clause.get("filter"):
                raise InvalidResourceError(
                    f"{where} breaks vsd-3: it cannot have both concepts and filters"
                )
    if not compose.get("include"):
        raise InvalidResourceError(f"{origin}: ValueSet {name}: compose has no include")


def check_codesystem(resource: Mapping[str, Any], origin: str) -> None:
    """Raise InvalidResourceError when a CodeSystem's concepts lack codes."""
    todo = [("concept", c) for c in resource.get("concept") or []]
    name = canonical_of(resource) or resource.get("id") or "CodeSystem"
    while todo:
        path, concept = todo.pop()
        if not isinstance(concept, Mapping) or not isinstance(concept.get("code"), str):
            raise InvalidResourceError(f"{origin}: CodeSystem {name}: a {path} has no code")
        todo.extend((f"{path}.concept", c) for c in concept.get("concept") or [])


def check_resource(resource: Any, origin: str) -> Resource:
    """Check that a parsed document is a FHIR resource we can store; return it."""
    if not isinstance(resource, dict):
        raise LoadError(f"{origin}: not a FHIR resource (a JSON object is needed)")
    rtype = resource.get("resourceType")
    if not isinstance(rtype, str) or not rtype:
        raise LoadError(f"{origin}: not a FHIR resource (no resourceType)")
    if rtype == "ValueSet":
        check_valueset(resource, origin)
    elif rtype == "CodeSystem":
        check_codesystem(resource, origin)
    elif rtype == "ConceptMap":
        check_conceptmap(resource)
    if rtype in TERMINOLOGY_TYPES and "url" in resource and not isinstance(resource["url"], str):
        raise InvalidResourceError(f"{origin}: {rtype}.url must be a string")
    return resource


def _unbundle(resource: Resource, origin: str) -> Iterator[tuple[Resource, str]]:
    if resource.get("resourceType") != "Bundle":
        yield resource, origin
        return
    for i, entry in enumerate(resource.get("entry") or []):
        if not isinstance(entry, Mapping):
            raise LoadError(f"{origin}: Bundle.entry[{i}] is not an object")
        if (entry.get("request") or {}).get("method") == "DELETE":
            continue
        inner = entry.get("resource")
        if inner is None:
            continue
        where = f"{origin} (Bundle.entry[{i}])"
        yield from _unbundle(check_resource(inner, where), where)


class _Reader:
    """Collects resources from documents, keeping only the terminology types."""

    def __init__(self, exact_decimals: bool = False) -> None:
        self.exact_decimals = exact_decimals
        self.kept: list[Resource] = []
        self.definitions: list[Resource] = []
        self.structures: dict[str, Resource] = {}
        self.skipped: Counter[str] = Counter()
        self.files = 0

    def document(self, data: Any, origin: str) -> None:
        self.files += 1
        for resource, _where in _unbundle(check_resource(data, origin), origin):
            if resource["resourceType"] in TERMINOLOGY_TYPES:
                self.kept.append(resource)
            elif resource["resourceType"] in DEFINITION_TYPES:
                self.definitions.append(resource)
            elif _kept_structure(resource):
                self.structures[str(resource.get("url"))] = resource
            else:
                self.skipped[resource["resourceType"]] += 1

    def raw(self, data: bytes, origin: str) -> None:
        self.document(parse_json(data, origin, exact_decimals=self.exact_decimals), origin)

    def reduced(self) -> tuple[tuple[StructureDef, ...], tuple[str, ...]]:
        """The StructureDefinitions read, reduced, and the texts of those unusable."""
        kept: list[StructureDef] = []
        unusable: list[str] = []
        for url, resource in self.structures.items():
            try:
                kept.append(structure_of(resource))
            except InvalidResourceError as exc:
                unusable.append(f"{url}: {exc}")
        return tuple(kept), tuple(unusable)


def _kept_structure(resource: Resource) -> bool:
    return (
        resource["resourceType"] == "StructureDefinition"
        and resource.get("kind") in STRUCTURE_KINDS
        and isinstance(resource.get("url"), str)
    )


def interactive() -> bool:
    """Whether a progress bar has someone to show it to: a notebook or a terminal (not a
    log file or a pipe, where every redraw would be one more line of noise)."""
    if "IPython" in sys.modules:  # (tqdm.auto draws a notebook's widget only under IPython)
        from tqdm.auto import tqdm

        if any(cls.__module__ == "tqdm.notebook" for cls in tqdm.__mro__):
            return True
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty is not None and isatty())


def progress_bar(shown: bool, **options: Any) -> Any:
    """A ``tqdm.auto`` bar when it is ``shown``, else None: tqdm (and the asyncio it
    imports) is loaded only for a bar someone sees."""
    if not shown:
        return None
    from tqdm.auto import tqdm

    return tqdm(**options)


def _bar(items: list[Any], progress: bool | None, desc: str) -> Iterable[Any]:
    show = len(items) >= PROGRESS_THRESHOLD and interactive() if progress is None else progress
    bar = progress_bar(show, iterable=items, desc=desc, unit="file", leave=False)
    return items if bar is None else bar


def _json_files(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*.json")
        if p.is_file() and p.name not in _SKIP_NAMES and not p.name.startswith(".")
    )


def _read_files(reader: _Reader, files: list[Path], progress: bool | None, desc: str) -> None:
    for path in _bar(files, progress, desc):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise LoadError(f"{path}: cannot be read ({exc.strerror})") from exc
        reader.raw(data, str(path))


def read_source(
    source: Any,
    *,
    cache_dir: Path | None = None,
    progress: bool | None = None,
    exact_decimals: bool = False,
) -> tuple[list[Resource], LoadSummary]:
    """Read every terminology resource of ``source`` without storing anything.

    ``source`` is a resource or Bundle dict, a list of them, a JSON file, a folder (read
    recursively), a FHIR NPM package (``.tgz``, or an extracted folder with ``package/``), or
    a package reference ``"name#version"`` resolved from the FHIR package cache.
    """
    reader = _Reader(exact_decimals)
    label: str
    package: str | None = None
    if isinstance(source, Mapping):
        label = str(source.get("resourceType", "resource"))
        reader.document(dict(source), "<resource>")
    elif isinstance(source, list | tuple):
        label = f"{len(source)} resources"
        for i, item in enumerate(source):
            reader.document(item, f"<resource {i}>")
    elif isinstance(source, str | os.PathLike):
        label = os.fspath(source)
        package = _read_path(reader, label, cache_dir, progress)
    else:
        raise LoadError(
            f"Cannot load {type(source).__name__}: give a path, a package "
            "reference 'name#version', or resource dicts"
        )
    structures, unusable = reader.reduced()
    summary = LoadSummary(
        source=label,
        files=reader.files,
        valuesets=_distinct(r for r in reader.kept if r["resourceType"] == "ValueSet"),
        codesystems=_distinct(r for r in reader.kept if r["resourceType"] == "CodeSystem"),
        skipped=dict(reader.skipped),
        conceptmaps=_distinct(r for r in reader.kept if r["resourceType"] == "ConceptMap"),
        package=package,
        warnings=tuple(
            f"{canonical_of(r) or r.get('id') or r['resourceType']}: {text}"
            for r in reader.kept
            for _where, text in structure.tolerated_gaps(r)
        ),
        definitions=tuple(reader.definitions),
        structures=structures,
        unusable=unusable,
    )
    return reader.kept, summary


def _distinct(resources: Iterable[Resource]) -> tuple[str, ...]:
    """The canonicals, each once (a package may hold a resource and a Bundle repeating it)."""
    return tuple(dict.fromkeys(canonical_of(r) or str(r.get("id")) for r in resources))


def _read_path(
    reader: _Reader, text: str, cache_dir: Path | None, progress: bool | None
) -> str | None:
    """Read a file or folder; return the FHIR package it is (``name#version``, or the
    tarball's name), else None."""
    path = Path(text).expanduser()
    if not path.exists():
        if "#" in text:
            name, version = packages.parse_package_ref(text)
            found = packages.cached_package_dir(name, version, cache_dir)
            if found is None:
                raise PackageNotFoundError(
                    f"Package {text} is not in the FHIR package cache "
                    f"({cache_dir or packages.default_cache_dir()}); install it first with "
                    "Workbench.install_package"
                )
            path = found
        else:
            raise LoadError(f"{text}: no such file or folder")
    if path.is_dir():
        if (path / "package" / "package.json").is_file() or (
            path.name == "package" and (path / "package.json").is_file()
        ):
            files = packages.package_files(path)
            _read_files(reader, files, progress, path.name)
            return _package_id(path)
        _read_files(reader, _json_files(path), progress, path.name)
    elif path.name.endswith((".tgz", ".tar.gz")):
        for name, data in packages.iter_tar_package_members(path):
            reader.raw(data, f"{path}:{name}")
        return path.name
    else:
        _read_files(reader, [path], False, path.name)
    return None


def _package_id(folder: Path) -> str:
    """``name#version`` from a package folder's ``package.json`` (the folder's name when the
    manifest does not say)."""
    manifest = folder / "package" / "package.json"
    if not manifest.is_file():
        manifest = folder / "package.json"
    try:
        data = jsonio.loads(manifest.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return folder.name
    if isinstance(data, Mapping) and data.get("name") and data.get("version"):
        return f"{data['name']}#{data['version']}"
    return folder.name
