"""FHIR search over the served terminology resources (R4 ``search.html``).

Search parameters per resource type with their FHIR types (string, token, uri), the
modifiers of each type (``:exact``, ``:contains``, ``:missing``, ``:not``, ``:below``,
``:above``), ``system|code`` tokens, commas as OR and repeated parameters as AND; the result
parameters ``_count``, ``_offset``, ``_sort``, ``_summary``, ``_elements``; and the searchset
Bundle with ``total`` and absolute ``self``/``first``/``previous``/``next``/``last`` links.
The ``self`` link holds only what was applied: parameters that were ignored are left out.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from workbench.errors import InvalidRequestError
from workbench.resources import Resource

DEFAULT_COUNT = 100
MAX_COUNT = 1000
SUBSETTED = {
    "system": "http://terminology.hl7.org/CodeSystem/v3-ObservationValue",
    "code": "SUBSETTED",
}
PUBLICATION_STATUS = "http://hl7.org/fhir/publication-status"
CONTENT_MODE = "http://hl7.org/fhir/codesystem-content-mode"
_WHOLE = re.compile(r"[0-9]{1,9}")
_TRUE_FALSE = {"true": True, "false": False}

# The elements marked isSummary at the top level of the R4 StructureDefinitions.
_COMMON_SUMMARY = [
    "id",
    "meta",
    "implicitRules",
    "url",
    "identifier",
    "version",
    "name",
    "title",
    "status",
    "experimental",
    "date",
    "publisher",
    "contact",
    "useContext",
    "jurisdiction",
]
SUMMARY_ELEMENTS: dict[str, frozenset[str]] = {
    "ValueSet": frozenset([*_COMMON_SUMMARY, "immutable"]),
    "CodeSystem": frozenset(
        [
            *_COMMON_SUMMARY,
            *[
                "caseSensitive",
                "valueSet",
                "hierarchyMeaning",
                "compositional",
                "versionNeeded",
                "content",
                "supplements",
                "count",
                "filter",
                "property",
            ],
        ]
    ),
    "ConceptMap": frozenset(
        [*_COMMON_SUMMARY, "sourceUri", "sourceCanonical", "targetUri", "targetCanonical"]
    ),
}
MANDATORY_ELEMENTS: dict[str, tuple[str, ...]] = {
    "ValueSet": ("status",),
    "CodeSystem": ("status", "content"),
    "ConceptMap": ("status",),
}
SUMMARY_MODES = ("true", "false", "text", "data", "count")

Token = tuple[str | None, str]


def _strings(*names: str) -> Callable[[Resource], list[str]]:
    def values(resource: Resource) -> list[str]:
        return [v for n in names if isinstance(v := resource.get(n), str)]

    return values


def _tokens(name: str, system: str | None = None) -> Callable[[Resource], list[Token]]:
    def values(resource: Resource) -> list[Token]:
        value = resource.get(name)
        return [(system, value)] if isinstance(value, str) else []

    return values


def _identifiers(resource: Resource) -> list[Token]:
    found = resource.get("identifier")
    items = found if isinstance(found, list) else [found] if isinstance(found, Mapping) else []
    return [
        (i.get("system"), str(i["value"]))
        for i in items
        if isinstance(i, Mapping) and isinstance(i.get("value"), str)
    ]


def _concept_codes(resource: Resource) -> list[Token]:
    system = resource.get("url") if isinstance(resource.get("url"), str) else None
    out: list[Token] = []
    todo = list(resource.get("concept") or [])
    while todo:
        concept = todo.pop()
        if isinstance(concept, Mapping):
            if isinstance(concept.get("code"), str):
                out.append((system, concept["code"]))
            todo.extend(concept.get("concept") or [])
    return out


def _compose_systems(resource: Resource) -> list[str]:
    compose = resource.get("compose")
    if not isinstance(compose, Mapping):
        return []
    return [
        clause["system"]
        for part in ("include", "exclude")
        for clause in compose.get(part) or []
        if isinstance(clause, Mapping) and isinstance(clause.get("system"), str)
    ]


def _scopes(*names: str) -> Callable[[Resource], list[str]]:
    """A ConceptMap's source or target scope: the canonical as given and its URL without
    the version, so that ``url`` finds every version and ``url|version`` only that one."""

    def values(resource: Resource) -> list[str]:
        out: list[str] = []
        for name in names:
            value = resource.get(name)
            if isinstance(value, str):
                out.extend(dict.fromkeys((value, value.partition("|")[0])))
        return out

    return values


def _groups(resource: Resource) -> list[Mapping[str, Any]]:
    groups = resource.get("group")
    return [g for g in groups if isinstance(g, Mapping)] if isinstance(groups, list) else []


def _group_systems(side: str) -> Callable[[Resource], list[str]]:
    def values(resource: Resource) -> list[str]:
        return [g[side] for g in _groups(resource) if isinstance(g.get(side), str)]

    return values


def _map_codes(side: str) -> Callable[[Resource], list[Token]]:
    """(group system, code) of every element (source) or every element's target (target)."""

    def values(resource: Resource) -> list[Token]:
        out: list[Token] = []
        for group in _groups(resource):
            system = group.get(side) if isinstance(group.get(side), str) else None
            for element in group.get("element") or []:
                if not isinstance(element, Mapping):
                    continue
                items = [element] if side == "source" else element.get("target") or []
                out.extend(
                    (system, item["code"])
                    for item in items
                    if isinstance(item, Mapping) and isinstance(item.get("code"), str)
                )
        return out

    return values


@dataclass(frozen=True)
class SearchParameter:
    """One search parameter: its name, FHIR type and how to read its values."""

    name: str
    type: str  # string | token | uri | reference (a canonical, matched exactly)
    values: Callable[[Resource], list[Any]]
    sortable: bool = True
    documentation: str = ""


_COMMON = (
    SearchParameter("_id", "token", lambda r: [(None, r["id"])], documentation="Logical id"),
    SearchParameter("url", "uri", _strings("url"), documentation="Canonical URL"),
    SearchParameter("version", "token", _tokens("version"), documentation="Business version"),
    SearchParameter("name", "string", _strings("name"), documentation="Computer-friendly name"),
    SearchParameter("title", "string", _strings("title"), documentation="Human-friendly name"),
    SearchParameter(
        "status", "token", _tokens("status", PUBLICATION_STATUS), documentation="draft | active …"
    ),
    SearchParameter("publisher", "string", _strings("publisher"), documentation="Publisher"),
    SearchParameter(
        "description", "string", _strings("description"), False, "Natural language description"
    ),
    SearchParameter("identifier", "token", _identifiers, False, "External identifier"),
)
SEARCH_PARAMETERS: dict[str, dict[str, SearchParameter]] = {
    "ValueSet": {
        p.name: p
        for p in (
            *_COMMON,
            SearchParameter(
                "reference", "uri", _compose_systems, False, "A code system included or excluded"
            ),
        )
    },
    "CodeSystem": {
        p.name: p
        for p in (
            *_COMMON,
            SearchParameter("code", "token", _concept_codes, False, "A code defined here"),
            SearchParameter("system", "uri", _strings("url"), documentation="The system's URI"),
            SearchParameter(
                "content-mode", "token", _tokens("content", CONTENT_MODE), documentation="content"
            ),
            SearchParameter(
                "supplements",
                "reference",
                _strings("supplements"),
                documentation="The code system supplemented (its canonical)",
            ),
        )
    },
    "ConceptMap": {
        p.name: p
        for p in (
            *_COMMON,
            SearchParameter(
                "source",
                "reference",
                _scopes("sourceCanonical", "sourceUri"),
                documentation="The source value set (canonical or uri)",
            ),
            SearchParameter(
                "target",
                "reference",
                _scopes("targetCanonical", "targetUri"),
                documentation="The target value set (canonical or uri)",
            ),
            SearchParameter(
                "source-uri", "reference", _scopes("sourceUri"), documentation="sourceUri"
            ),
            SearchParameter(
                "target-uri", "reference", _scopes("targetUri"), documentation="targetUri"
            ),
            SearchParameter(
                "source-system",
                "uri",
                _group_systems("source"),
                False,
                "A group's source code system",
            ),
            SearchParameter(
                "target-system",
                "uri",
                _group_systems("target"),
                False,
                "A group's target code system",
            ),
            SearchParameter(
                "source-code", "token", _map_codes("source"), False, "A mapped source code"
            ),
            SearchParameter("target-code", "token", _map_codes("target"), False, "A target code"),
        )
    },
}
MODIFIERS = {
    "string": ("exact", "contains", "missing"),
    "token": ("not", "missing"),
    "uri": ("below", "above", "missing"),
    "reference": ("missing",),
}
COMMON_PARAMETERS = frozenset(p.name for p in _COMMON)
# Result parameters the server applies; _format and _pretty are kept in links as given.
_RESULT = frozenset({"_count", "_offset", "_sort", "_summary", "_elements"})
_PASSED_ON = frozenset({"_format", "_pretty"})
_IGNORED = frozenset({"_total"})


def fold(text: str) -> str:
    """Case- and accent-insensitive form of a string (FHIR string search)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


@dataclass
class Criterion:
    """One search criterion: parameter, modifier and the values (any of which matches)."""

    param: SearchParameter
    modifier: str | None
    values: list[str]

    def matches(self, resource: Resource) -> bool:
        have = self.param.values(resource)
        if self.modifier == "missing":
            return (not have) == _TRUE_FALSE[self.values[0]]
        if self.modifier == "not":
            return not any(_token_match(h, v) for h in have for v in self.values)
        if not have:
            return False
        kind = self.param.type
        if kind == "token":
            return any(_token_match(h, v) for h in have for v in self.values)
        if kind in ("uri", "reference"):
            return any(_uri_match(h, v, self.modifier) for h in have for v in self.values)
        return any(_string_match(h, v, self.modifier) for h in have for v in self.values)


def _token_match(have: Token, wanted: str) -> bool:
    system, code = have
    if "|" not in wanted:
        return code == wanted
    want_system, _, want_code = wanted.partition("|")
    if not want_system:
        return system is None and code == want_code
    return system == want_system and (not want_code or code == want_code)


def _uri_match(have: str, wanted: str, modifier: str | None) -> bool:
    if modifier == "below":
        return have == wanted or have.startswith(wanted.rstrip("/") + "/")
    if modifier == "above":
        return wanted == have or wanted.startswith(have.rstrip("/") + "/")
    return have == wanted


def _string_match(have: str, wanted: str, modifier: str | None) -> bool:
    if modifier == "exact":
        return have == wanted
    if modifier == "contains":
        return fold(wanted) in fold(have)
    return fold(have).startswith(fold(wanted))


@dataclass
class Query:
    """A parsed search: criteria, paging, sort and the shape of the returned resources."""

    rtype: str
    tests: list[Criterion] = field(default_factory=list)
    count: int = DEFAULT_COUNT
    offset: int = 0
    sort: list[tuple[SearchParameter, bool]] = field(default_factory=list)
    summary: str | None = None
    elements: list[str] | None = None
    applied: list[tuple[str, str]] = field(default_factory=list)
    count_given: bool = False
    warnings: list[str] = field(default_factory=list)

    def run(self, resources: Iterable[Resource]) -> list[Resource]:
        """The matching resources, sorted as asked (else in store order)."""
        found = [r for r in resources if all(t.matches(r) for t in self.tests)]
        for param, descending in reversed(self.sort):
            keyed = [(_sort_key(param, r), r) for r in found]
            present = [(k, r) for k, r in keyed if k is not None]
            present.sort(key=lambda item: item[0], reverse=descending)
            found = [r for _, r in present] + [r for k, r in keyed if k is None]
        return found


def _sort_key(param: SearchParameter, resource: Resource) -> str | None:
    values = param.values(resource)
    if not values:
        return None
    first = values[0]
    text = first[1] if isinstance(first, tuple) else first
    return fold(text) if param.type == "string" else str(text)


def whole_number(name: str, value: str, limit: int | None = None) -> int:
    """A ``_count``/``_offset`` value: ASCII digits, at most 9 (at most ``limit``)."""
    if not _WHOLE.fullmatch(value):
        raise InvalidRequestError(
            f"{name} must be a whole number (ASCII digits, at most 9), not '{value}'"
        )
    number = int(value)
    return number if limit is None else min(number, limit)


def parse(rtype: str, params: Iterable[tuple[str, str]], *, strict: bool = False) -> Query:
    """Parse the query string of a search. Unknown parameters are ignored (and left out of
    the ``self`` link) unless ``strict``; a known parameter with an unsupported modifier or a
    bad value is always an error (400)."""
    known = SEARCH_PARAMETERS[rtype]
    query = Query(rtype)
    for raw_name, value in params:
        name, _, modifier = raw_name.partition(":")
        if name in _RESULT:
            _result_parameter(query, name, value, strict)
        elif name in _PASSED_ON:
            query.applied.append((raw_name, value))
        elif name in _IGNORED:
            continue
        elif name not in known:
            if strict:
                raise InvalidRequestError(
                    f"Unknown search parameter '{name}' for {rtype} (supported: {', '.join(known)})"
                )
        else:
            param = known[name]
            if modifier and modifier not in MODIFIERS[param.type]:
                raise InvalidRequestError(
                    f"The modifier ':{modifier}' is not supported on the {param.type} parameter "
                    f"'{name}' (supported: "
                    + ", ".join(":" + m for m in MODIFIERS[param.type])
                    + ")"
                )
            if modifier == "missing" and value not in _TRUE_FALSE:
                raise InvalidRequestError(f"{raw_name} must be true or false, not '{value}'")
            if value == "" and modifier != "missing":
                continue  # an empty value is ignored (search.html 3.1.1.4)
            query.tests.append(Criterion(param, modifier or None, value.split(",")))
            query.applied.append((raw_name, value))
    return query


def _result_parameter(query: Query, name: str, value: str, strict: bool) -> None:
    if name == "_count":
        query.count = whole_number("_count", value, MAX_COUNT)
        query.count_given = True
        return  # added to the links by the bundle, with the page
    if name == "_offset":
        query.offset = whole_number("_offset", value)
        return
    if name == "_summary":
        if value not in SUMMARY_MODES:
            raise InvalidRequestError(
                f"_summary must be one of {', '.join(SUMMARY_MODES)}, not '{value}'"
            )
        query.summary = None if value == "false" else value
    elif name == "_elements":
        query.elements = [e.strip() for e in value.split(",") if e.strip()]
    elif name == "_sort":
        known = SEARCH_PARAMETERS[query.rtype]
        sort, kept = [], []
        for item in (v.strip() for v in value.split(",") if v.strip()):
            param = known.get(item.lstrip("-"))
            if param is None or not param.sortable:
                sortable = ", ".join(p.name for p in known.values() if p.sortable)
                text = f"Cannot sort {query.rtype} by '{item}' (sortable: {sortable})"
                if strict:
                    raise InvalidRequestError(text)
                query.warnings.append(f"{text}; that sort key was ignored")
                continue
            sort.append((param, item.startswith("-")))
            kept.append(item)
        query.sort = sort
        if not kept:
            return  # nothing applied: left out of the self link
        value = ",".join(kept)
    query.applied.append((name, value))


def shape(resource: Resource, summary: str | None, elements: list[str] | None) -> Resource:
    """A resource as ``_summary`` and ``_elements`` ask (marked SUBSETTED when cut)."""
    if summary in (None, "count", "false") and elements is None:
        return resource
    if summary == "data":
        return {k: v for k, v in resource.items() if k != "text"}
    rtype = resource["resourceType"]
    mandatory = MANDATORY_ELEMENTS.get(rtype, ())
    if summary == "true":
        keep = set(SUMMARY_ELEMENTS.get(rtype, ()))
    elif summary == "text":
        keep = {"id", "meta", "text", *mandatory}
    else:
        keep = {"id", "meta", *mandatory, *(elements or [])}
    keep |= {"_" + k for k in keep}
    out = {k: v for k, v in resource.items() if k == "resourceType" or k in keep}
    meta = dict(out.get("meta") or {})
    meta["tag"] = [*(meta.get("tag") or []), SUBSETTED]
    out["meta"] = meta
    return out


def bundle(
    query: Query,
    found: list[Resource],
    *,
    type_url: str,
    served: Callable[[Resource], Resource] = lambda r: r,
) -> dict[str, Any]:
    """The searchset Bundle of one page of ``found``, with absolute paging links; ``served``
    turns a stored resource of the page into the one served."""
    total = len(found)
    count = query.count
    offset = query.offset
    links = [{"relation": "self", "url": _link(type_url, query, offset, query.count_given)}]
    out: dict[str, Any] = {"resourceType": "Bundle", "type": "searchset", "total": total}
    if query.summary == "count":
        out["link"] = links
        if query.warnings:
            out["entry"] = [_outcome_entry(query.warnings)]
        return out
    page = found[offset : offset + count] if count else []
    if count:
        if offset > 0 or total > count:
            links.append({"relation": "first", "url": _link(type_url, query, 0, True)})
        if offset > 0:
            back = max(0, offset - count)
            links.append({"relation": "previous", "url": _link(type_url, query, back, True)})
        if offset + count < total:
            links.append({"relation": "next", "url": _link(type_url, query, offset + count, True)})
            last = ((total - 1) // count) * count
            links.append({"relation": "last", "url": _link(type_url, query, last, True)})
    out["link"] = links
    if page:
        out["entry"] = [
            {
                "fullUrl": f"{type_url}/{r['id']}",
                "resource": shape(served(r), query.summary, query.elements),
                "search": {"mode": "match"},
            }
            for r in page
        ]
    if query.warnings:
        out["entry"] = [*out.get("entry", ()), _outcome_entry(query.warnings)]
    return out


def _outcome_entry(warnings: list[str]) -> dict[str, Any]:
    """What the search did not apply, as FHIR search asks: an OperationOutcome entry with
    ``search.mode`` outcome (not counted in ``total``)."""
    issues = [
        {"severity": "warning", "code": "not-supported", "details": {"text": text}}
        for text in warnings
    ]
    return {
        "resource": {"resourceType": "OperationOutcome", "issue": issues},
        "search": {"mode": "outcome"},
    }


def _link(type_url: str, query: Query, offset: int, with_count: bool) -> str:
    params = list(query.applied)
    if with_count:
        params.append(("_count", str(query.count)))
    if offset:
        params.append(("_offset", str(offset)))
    if not params:
        return type_url
    return type_url + "?" + urlencode(params, safe=":/,|")
