"""ConceptMap checks and the R4 ``$translate`` engine (no web imports).

A ConceptMap is checked once, on load or write (:func:`check_conceptmap`), and then
translated through with :func:`translate`, which follows the R4 semantics of
``ConceptMap/$translate``:

* ``result`` is true when some match has an equivalence other than ``unmatched`` and
  ``disjoint``;
* a target whose ``dependsOn`` does not hold for a supplied ``dependency`` is left out;
* a code without an element in a group falls back to ``group.unmapped``: ``provided``
  (the code itself, equivalence ``equal``), ``fixed`` (``unmapped.code``, equivalence
  ``inexact``) or ``other-map`` (translated through that map, with loop protection);
* ``reverse=True`` maps target codes back to source codes;
* every match names its map (``url|version``) in ``source``.

Maps implied by loaded terminologies (SNOMED CT ``?fhir_cm=``) come from providers
registered with :func:`register_implicit_maps`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench import forksafe
from workbench.errors import InvalidResourceError, RequiredError, WorkbenchError
from workbench.resources import Resource, canonical_of, latest, split_canonical

EQUIVALENCES = (
    "relatedto",
    "equivalent",
    "equal",
    "wider",
    "subsumes",
    "narrower",
    "specializes",
    "inexact",
    "unmatched",
    "disjoint",
)
#: strongest first: the order bulk translation uses to pick one match per row
STRENGTH = (
    "equivalent",
    "equal",
    "wider",
    "subsumes",
    "narrower",
    "specializes",
    "relatedto",
    "inexact",
    "unmatched",
    "disjoint",
)
NEGATIVE = frozenset({"unmatched", "disjoint"})
UNMAPPED_MODES = ("provided", "fixed", "other-map")
MAX_MAP_DEPTH = 10


class ConceptMapNotFoundError(WorkbenchError):
    """The ConceptMap asked for (by url, version or id) is not loaded."""

    code = "not-found"
    status = 404
    msg_id = "WB-CM-404"

    def __init__(self, canonical: str) -> None:
        super().__init__(f"ConceptMap {canonical} not found")
        self.canonical = canonical


class MapCycleError(WorkbenchError):
    """``group.unmapped`` ``other-map`` links loop back to a map already followed."""

    code = "processing"
    status = 422
    msg_id = "WB-CM-002"


def _bad(text: str, path: str) -> InvalidResourceError:
    return InvalidResourceError(text, msg_id="WB-CM-001", expression=[path])


def check_conceptmap(resource: Mapping[str, Any]) -> None:
    """Reject a malformed ConceptMap with the element path of the first fault.

    >>> bad = {"code": "a", "target": [{"code": "b"}]}
    >>> check_conceptmap({"group": [{"element": [bad]}]})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    workbench.errors.InvalidResourceError: ConceptMap.group[0]...: equivalence is required
    """
    groups = resource.get("group", [])
    if not isinstance(groups, list):
        raise _bad("ConceptMap.group: must be a list", "ConceptMap.group")
    for g, group in enumerate(groups):
        gp = f"ConceptMap.group[{g}]"
        if not isinstance(group, dict):
            raise _bad(f"{gp}: must be an object", gp)
        for key in ("source", "target", "sourceVersion", "targetVersion"):
            if key in group and not isinstance(group[key], str):
                raise _bad(f"{gp}.{key}: must be a string", f"{gp}.{key}")
        elements = group.get("element")
        if not isinstance(elements, list) or not elements:
            raise _bad(f"{gp}: element is required (1..*)", f"{gp}.element")
        for e, element in enumerate(elements):
            ep = f"{gp}.element[{e}]"
            if not isinstance(element, dict):
                raise _bad(f"{ep}: must be an object", ep)
            if "code" in element and not isinstance(element["code"], str):
                raise _bad(f"{ep}.code: must be a string", f"{ep}.code")
            targets = element.get("target", [])
            if not isinstance(targets, list):
                raise _bad(f"{ep}.target: must be a list", f"{ep}.target")
            for t, target in enumerate(targets):
                tp = f"{ep}.target[{t}]"
                if not isinstance(target, dict):
                    raise _bad(f"{tp}: must be an object", tp)
                eq = target.get("equivalence")
                if eq is None:
                    raise _bad(f"{tp}: equivalence is required", f"{tp}.equivalence")
                if eq not in EQUIVALENCES:
                    raise _bad(f"{tp}.equivalence: unknown value {eq!r}", f"{tp}.equivalence")
                if eq in ("narrower", "inexact") and not target.get("comment"):
                    raise _bad(
                        f"{tp}: cmd-1: a comment is required when equivalence is {eq}",
                        f"{tp}.comment",
                    )
                for kind in ("dependsOn", "product"):
                    for d, dep in enumerate(target.get(kind, [])):
                        dp = f"{tp}.{kind}[{d}]"
                        if (
                            not isinstance(dep, dict)
                            or not dep.get("property")
                            or "value" not in dep
                        ):
                            raise _bad(f"{dp}: property and value are required", dp)
        unmapped = group.get("unmapped")
        if unmapped is not None:
            up = f"{gp}.unmapped"
            mode = unmapped.get("mode") if isinstance(unmapped, dict) else None
            if mode not in UNMAPPED_MODES:
                raise _bad(f"{up}.mode: must be one of {', '.join(UNMAPPED_MODES)}", f"{up}.mode")
            if mode == "fixed" and not unmapped.get("code"):
                raise _bad(f"{up}: cmd-2: code is required when mode is fixed", f"{up}.code")
            if mode == "other-map" and not unmapped.get("url"):
                raise _bad(f"{up}: cmd-3: url is required when mode is other-map", f"{up}.url")


# --- implicit maps -------------------------------------------------------------------

ImplicitSource = Callable[[str], Resource | None]
_IMPLICIT: list[tuple[re.Pattern[str], ImplicitSource]] = []


def register_implicit_maps(pattern: str, provider: ImplicitSource) -> Callable[[], None]:
    """Register a provider of implicit ConceptMaps for canonical URLs matching ``pattern``.

    The provider takes the URL and returns a ConceptMap resource or None ("not mine").
    Returns a function that removes the registration again.
    """
    entry = (re.compile(pattern), provider)
    _IMPLICIT.append(entry)
    return lambda: _IMPLICIT.remove(entry)


def implicit_map(url: str) -> Resource | None:
    """Return the implicit ConceptMap for ``url`` from the first provider that has it."""
    for pattern, provider in _IMPLICIT:
        if pattern.fullmatch(url):
            found = provider(url)
            if found is not None:
                return found
    return None


# --- translation ---------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    """One ``match`` of ``$translate``."""

    equivalence: str
    system: str | None
    code: str | None
    display: str | None
    source: str
    version: str | None = None
    product: tuple[dict[str, Any], ...] = ()

    def to_part(self) -> dict[str, Any]:
        """Return this match as a Parameters ``match`` part."""
        parts: list[dict[str, Any]] = [{"name": "equivalence", "valueCode": self.equivalence}]
        if self.code is not None or self.system is not None:
            coding = {
                k: v
                for k, v in (
                    ("system", self.system),
                    ("version", self.version),
                    ("code", self.code),
                    ("display", self.display),
                )
                if v
            }
            parts.append({"name": "concept", "valueCoding": coding})
        for prod in self.product:
            concept = {k: prod[k] for k in ("system", "display") if prod.get(k)}
            concept["code"] = str(prod["value"])
            parts.append(
                {
                    "name": "product",
                    "part": [
                        {"name": "element", "valueUri": prod["property"]},
                        {"name": "concept", "valueCoding": concept},
                    ],
                }
            )
        parts.append({"name": "source", "valueUri": self.source})
        # R5's name of the same (tx.fhir.org's R4 endpoint gives both)
        parts.append({"name": "originMap", "valueCanonical": self.source})
        return {"name": "match", "part": parts}


@dataclass(frozen=True)
class Translation:
    """The outcome of one ``$translate``: ``result``, ``message`` and the matches."""

    result: bool
    message: str | None
    match_list: tuple[Match, ...] = field(default_factory=tuple)

    def to_parameters(self) -> Resource:
        """Return the outcome as an R4 Parameters resource."""
        params: list[dict[str, Any]] = [{"name": "result", "valueBoolean": self.result}]
        if self.message:
            params.append({"name": "message", "valueString": self.message})
        params.extend(m.to_part() for m in self.match_list)
        return {"resourceType": "Parameters", "parameter": params}

    @property
    def matches(self) -> Any:
        """The matches as a DataFrame: code, display, system, source (the map) and
        equivalence (narrow, last: pandas shows it beside the code in a terminal)."""
        import pandas as pd

        cols = ["code", "display", "system", "source", "equivalence"]
        return pd.DataFrame(
            [[getattr(m, c) for c in cols] for m in self.match_list], columns=cols, dtype=object
        )


Dependency = tuple[str, Sequence[Mapping[str, Any]]]  # (element uri, codings)


def _depends_hold(depends: Iterable[Mapping[str, Any]], dependencies: Sequence[Dependency]) -> bool:
    supplied: dict[str, list[Mapping[str, Any]]] = {}
    for element, codings in dependencies:
        supplied.setdefault(element, []).extend(codings)
    for dep in depends:
        given = supplied.get(str(dep["property"]))
        if given is None:
            continue
        if not any(
            str(c.get("code")) == str(dep["value"])
            and (not dep.get("system") or not c.get("system") or c.get("system") == dep["system"])
            for c in given
        ):
            return False
    return True


def select_maps(
    maps: Iterable[Resource], url: str | None = None, version: str | None = None
) -> list[Resource]:
    """Pick the maps to translate with: one by url (latest version unless given), else all."""
    items = list(maps)
    if url is None:
        return items
    url, pinned = split_canonical(url)
    version = version or pinned
    same = [m for m in items if m.get("url") == url]
    if version is not None:
        same = [m for m in same if m.get("version") == version]
    chosen = latest(same)
    if chosen is None:
        chosen = implicit_map(url) if version is None else None
    if chosen is None:
        raise ConceptMapNotFoundError(f"{url}|{version}" if version else url)
    return [chosen]


def _fits(cm: Mapping[str, Any], which: str, value: str | None) -> bool:
    if value is None:
        return True
    declared = cm.get(f"{which}Uri") or cm.get(f"{which}Canonical")
    return declared is None or split_canonical(str(declared))[0] == split_canonical(value)[0]


def translate(
    maps: Iterable[Resource],
    *,
    code: str | None = None,
    system: str | None = None,
    url: str | None = None,
    conceptmap_version: str | None = None,
    source: str | None = None,
    target: str | None = None,
    target_system: str | None = None,
    dependencies: Sequence[Dependency] = (),
    reverse: bool = False,
    display_of: Callable[[str, str], str | None] | None = None,
) -> Translation:
    """Translate ``code`` (in ``system``) through the maps, with R4 ``$translate`` semantics.

    ``maps`` are the loaded ConceptMaps (or the one inline ``conceptMap``); ``display_of``
    looks a target display up in the loaded code systems.

    >>> cm = {"resourceType": "ConceptMap", "url": "http://ex/cm", "group": [{
    ...     "source": "http://ex/a", "target": "http://ex/b",
    ...     "element": [{"code": "1", "target": [{"code": "x", "equivalence": "equivalent"}]}]}]}
    >>> t = translate([cm], code="1", system="http://ex/a")
    >>> t.result, [(m.code, m.equivalence) for m in t.match_list]
    (True, [('x', 'equivalent')])
    """
    if not code:
        raise RequiredError(
            "$translate needs a code (code, coding or codeableConcept)", expression=["code"]
        )
    chosen = candidate_maps(
        maps,
        url=url,
        conceptmap_version=conceptmap_version,
        source=source,
        target=target,
        reverse=reverse,
    )
    return translate_code(
        chosen,
        maps,
        code=code,
        system=system,
        target_system=target_system,
        dependencies=dependencies,
        reverse=reverse,
        display_of=display_of,
    )


def candidate_maps(
    maps: Iterable[Resource],
    *,
    url: str | None = None,
    conceptmap_version: str | None = None,
    source: str | None = None,
    target: str | None = None,
    reverse: bool = False,
) -> list[Resource]:
    """The maps a ``$translate`` uses: the one named by ``url`` (latest version unless
    pinned), else every map whose declared source and target scopes fit."""
    return [
        m
        for m in select_maps(maps, url, conceptmap_version)
        if url is not None
        or (
            _fits(m, "source" if not reverse else "target", source)
            and _fits(m, "target" if not reverse else "source", target)
        )
    ]


def translate_code(
    candidates: Sequence[Resource],
    maps: Iterable[Resource],
    *,
    code: str,
    system: str | None = None,
    target_system: str | None = None,
    dependencies: Sequence[Dependency] = (),
    reverse: bool = False,
    display_of: Callable[[str, str], str | None] | None = None,
) -> Translation:
    """Translate one code through maps already chosen with :func:`candidate_maps`
    (``maps`` are all the loaded maps, for ``other-map`` links)."""
    found: list[Match] = []
    notes: list[str] = []
    for cm in candidates:
        found.extend(
            _through(
                cm,
                maps,
                code,
                system,
                target_system,
                dependencies,
                reverse,
                display_of,
                (canonical_of(cm),),
                notes,
            )
        )
    result = any(m.equivalence not in NEGATIVE for m in found)
    message = None
    if notes:
        message = "; ".join(notes)
    elif not found:
        message = f"No mappings found for code {code!r}" + (
            f" in system {system}" if system else ""
        )
    elif not result:
        message = (
            f"Only {', '.join(sorted({m.equivalence for m in found}))} mappings for code {code!r}"
        )
    return Translation(result=result, message=message, match_list=tuple(found))


@dataclass(frozen=True)
class _Group:
    """One group of a ConceptMap, indexed by source code and by target code."""

    group: Mapping[str, Any]
    forward: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]]
    backward: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]]


_COMPILED: dict[int, tuple[Resource, tuple[_Group, ...]]] = {}
_COMPILED_LIMIT = 256
_COMPILED_LOCK = forksafe.lock()


def _compiled(cm: Resource) -> tuple[_Group, ...]:
    """The groups of ``cm`` with their code indexes, built once per map object.

    The cache holds the map itself, so an id is never reused while it is cached; a stored
    map that changes is a new object (the registry never edits a resource in place).
    """
    hit = _COMPILED.get(id(cm))
    if hit is not None and hit[0] is cm:
        return hit[1]
    groups = []
    for group in cm.get("group", []):
        forward: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = {}
        backward: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = {}
        for element in group.get("element", []):
            for tgt in element.get("target", []):
                forward.setdefault(element.get("code"), []).append((element, tgt))
                backward.setdefault(tgt.get("code"), []).append((element, tgt))
        groups.append(_Group(group, forward, backward))
    with _COMPILED_LOCK:
        if len(_COMPILED) >= _COMPILED_LIMIT:
            _COMPILED.pop(next(iter(_COMPILED)))
        _COMPILED[id(cm)] = (cm, tuple(groups))
    return tuple(groups)


def _through(
    cm: Resource,
    maps: Iterable[Resource],
    code: str,
    system: str | None,
    target_system: str | None,
    dependencies: Sequence[Dependency],
    reverse: bool,
    display_of: Callable[[str, str], str | None] | None,
    trail: tuple[str, ...],
    notes: list[str],
) -> list[Match]:
    source = canonical_of(cm)
    out: list[Match] = []
    for indexed in _compiled(cm):
        group = indexed.group
        g_src, g_tgt = group.get("source"), group.get("target")
        if reverse:
            g_src, g_tgt = g_tgt, g_src
        if system is not None and g_src is not None and g_src != system:
            continue
        if target_system is not None and g_tgt is not None and g_tgt != target_system:
            continue
        pairs = (indexed.backward if reverse else indexed.forward).get(code, ())
        out += _mapped(pairs, g_tgt, source, group, reverse, dependencies, display_of)
        if pairs or reverse or "unmapped" not in group:
            continue
        unmapped = group["unmapped"]
        mode = unmapped["mode"]
        if mode == "provided":
            out.append(Match("equal", g_tgt, code, _disp(display_of, g_tgt, code), source))
        elif mode == "fixed":
            fixed = unmapped["code"]
            out.append(
                Match(
                    "inexact",
                    g_tgt,
                    fixed,
                    _disp(display_of, g_tgt, fixed) or unmapped.get("display"),
                    source,
                )
            )
        else:
            other = str(unmapped["url"])
            try:
                nxt = select_maps(maps, other)[0]
            except ConceptMapNotFoundError as exc:
                notes.append(f"{source}: unmapped other-map {exc.text}")
                continue
            if canonical_of(nxt) in trail or len(trail) >= MAX_MAP_DEPTH:
                notes.append(
                    "other-map cycle: " + " -> ".join((*trail, canonical_of(nxt))) + "; stopped"
                )
                continue
            out.extend(
                _through(
                    nxt,
                    maps,
                    code,
                    system,
                    target_system,
                    dependencies,
                    False,
                    display_of,
                    (*trail, canonical_of(nxt)),
                    notes,
                )
            )
    return out


def _mapped(
    pairs: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
    g_tgt: str | None,
    source: str,
    group: Mapping[str, Any],
    reverse: bool,
    dependencies: Sequence[Dependency],
    display_of: Callable[[str, str], str | None] | None,
) -> list[Match]:
    """The matches of a group's (element, target) pairs whose dependencies hold."""
    out: list[Match] = []
    for element, tgt in pairs:
        if reverse:
            out_code, out_display = element.get("code"), element.get("display")
        else:
            out_code, out_display = tgt.get("code"), tgt.get("display")
        if not _depends_hold(tgt.get("dependsOn", ()), dependencies):
            continue
        if display_of and g_tgt and out_code:
            out_display = display_of(g_tgt, out_code) or out_display
        out.append(
            Match(
                tgt["equivalence"],
                g_tgt if out_code else None,
                out_code,
                out_display,
                source,
                group.get("sourceVersion" if reverse else "targetVersion"),
                tuple(tgt.get("product", ())),
            )
        )
    return out


def _disp(
    display_of: Callable[[str, str], str | None] | None, system: str | None, code: str
) -> str | None:
    return display_of(system, code) if display_of and system else None
