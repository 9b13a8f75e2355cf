"""The result of expanding a value set: a frozen ``Expansion`` with a frame and FHIR JSON."""

from __future__ import annotations

import html
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pandas as pd

from workbench.errors import TooCostlyError
from workbench.terminology import languages
from workbench.terminology.compose import Entry

if TYPE_CHECKING:
    from workbench.terminology.requests import ExpandRequest

#: The columns of ``Expansion.frame``: what people look for first (the code and its display),
#: the wide system and version in the middle, the narrow flags last (pandas, fitting a frame
#: to a terminal, keeps as many columns from the right as from the left).
FRAME_COLUMNS = ["code", "display", "system", "version", "abstract", "inactive"]
DEFAULT_MAX_EXPANSION = 10_000
#: The size an expansion may reach when the request allows the maximum
#: (``allowMaximumSizeExpansion``).
MAXIMUM_EXPANSION = 100_000


@dataclass(frozen=True)
class Expansion:
    """An expanded value set.

    ``entries`` are the selected codes (after the text filter and ``active_only``); ``total``
    counts them; ``offset``/``count`` describe the page that ``frame`` and ``to_fhir()`` show.

    >>> import workbench
    >>> wb = workbench.Workbench()
    >>> _ = wb.load({"resourceType": "CodeSystem", "url": "http://x", "content": "complete",
    ...              "concept": [{"code": "a", "display": "A"}]})
    >>> wb.expand({"resourceType": "ValueSet", "compose": {"include": [{"system": "http://x"}]}}
    ...           ).frame[["code", "display"]].values.tolist()
    [['a', 'A']]
    """

    valueset: dict[str, Any]
    entries: tuple[Entry, ...]
    offset: int = 0
    count: int | None = None
    parameters: tuple[tuple[str, Any], ...] = ()
    include_designations: bool = False
    include_definition: bool = False
    properties: dict[tuple[str, str], tuple[tuple[str, str, Any], ...]] = field(
        default_factory=dict
    )
    parents: dict[tuple[str, str], tuple[str, str]] | None = None
    max_size: int = DEFAULT_MAX_EXPANSION
    #: Why the value set has codes the expansion does not list (a fragment was expanded).
    unclosed: tuple[str, ...] = ()
    identifier: str = field(default_factory=lambda: f"urn:uuid:{uuid.uuid4()}")
    timestamp: str = field(
        default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds")
    )

    @property
    def url(self) -> str | None:
        """The canonical URL of the expanded value set (None for an anonymous one)."""
        return self.valueset.get("url")

    @property
    def total(self) -> int:
        """The number of codes in the whole expansion (not just the page)."""
        return len(self.entries)

    @property
    def page(self) -> tuple[Entry, ...]:
        """The codes of the requested page (``offset``/``count``)."""
        end = None if self.count is None else self.offset + self.count
        return self.entries[self.offset : end]

    def __len__(self) -> int:
        return self.total

    def __contains__(self, item: object) -> bool:
        if isinstance(item, tuple) and len(item) == 2:
            return any((e.system, e.code) == item for e in self.entries)
        return any(e.code == item for e in self.entries)

    @property
    def frame(self) -> pd.DataFrame:
        """The page as a DataFrame: code, display, system, version, abstract, inactive.

        Not limited by ``max_size``: an unpaged expansion of any size gives its whole frame.
        """
        page = self.page
        frame = pd.DataFrame.from_records(
            [(e.code, e.display, e.system, e.version, e.abstract, e.inactive) for e in page],
            columns=FRAME_COLUMNS,
        )
        frame = frame.astype({"abstract": bool, "inactive": bool})
        if self.include_designations:
            frame["designations"] = pd.Series([list(e.designations) for e in page], dtype=object)
        return frame

    def to_fhir(self) -> dict[str, Any]:
        """Return the ``ValueSet.expansion`` element as FHIR JSON.

        Raises TooCostlyError when the expansion is unpaged and larger than ``max_size``
        (it is never truncated silently; ask for a page with offset/count instead).
        """
        paged = self.count is not None or self.offset > 0
        page = self.page
        if len(page) > self.max_size:
            raise TooCostlyError(
                f"The expansion of {self.url or 'the value set'} has {self.total} codes, more "
                f"than the limit of {self.max_size}; ask for a page with offset and count"
            )
        params = [_parameter(name, value) for name, value in self.parameters]
        if paged:
            params.append({"name": "offset", "valueInteger": self.offset})
            if self.count is not None:
                params.append({"name": "count", "valueInteger": self.count})
        out: dict[str, Any] = {
            "identifier": self.identifier,
            "timestamp": self.timestamp,
            "total": self.total,
        }
        if paged:
            out["offset"] = self.offset
        if params:
            out["parameter"] = params
        declared = sorted({name for values in self.properties.values() for name, _, _ in values})
        extensions = [_property_declaration(name) for name in declared]
        if self.unclosed:
            extensions.append({"url": UNCLOSED, "valueBoolean": True})
            extensions += [{"url": UNCLOSED_REASON, "valueString": r} for r in self.unclosed]
        if extensions:
            out["extension"] = extensions
        several = _several_versions(self.parameters)
        if self.parents is not None and not paged:
            contains = self._nested(page, several)
        else:
            contains = [self._contains(e, several) for e in page]
        if contains:
            out["contains"] = contains
        return out

    def _nested(self, page: tuple[Entry, ...], several: frozenset[str]) -> list[dict[str, Any]]:
        """``contains`` as a hierarchy: each code under its parent in the expansion (codes
        whose parents are not in it stay at the top), in expansion order."""
        parents = self.parents or {}
        items = {(e.system, e.code): self._contains(e, several) for e in page}

        def placed_under(key: tuple[str, str]) -> tuple[str, str] | None:
            parent, seen = parents.get(key), {key}
            if parent is None or parent not in items:
                return None
            up: tuple[str, str] | None = parent
            while up is not None:  # a parent cycle nests nothing
                if up in seen:
                    return None
                seen.add(up)
                up = parents.get(up)
            return parent

        top: list[dict[str, Any]] = []
        for e in page:
            key = (e.system, e.code)
            parent = placed_under(key)
            if parent is not None:
                items[parent].setdefault("contains", []).append(items[key])
            else:
                top.append(items[key])
        return top

    def to_valueset(self) -> dict[str, Any]:
        """Return the expanded ValueSet: its metadata plus ``expansion`` (what $expand returns)."""
        skip = {"compose", "expansion", "text", "meta"}
        vs = {k: v for k, v in self.valueset.items() if k not in skip}
        vs.setdefault("resourceType", "ValueSet")
        vs["expansion"] = self.to_fhir()
        return vs

    def _contains(self, e: Entry, several: frozenset[str]) -> dict[str, Any]:
        """One ``contains`` item; its ``version`` only where the expansion holds several
        versions of its code system (else ``used-codesystem`` names the one, as
        tx.fhir.org's expansions do)."""
        item: dict[str, Any] = {}
        extensions: list[dict[str, Any]] = []
        if self.include_definition and e.definition:
            extensions.append({"url": CONCEPT_DEFINITION, "valueString": e.definition})
        for name, key, value in self.properties.get((e.system, e.code), ()):
            extensions.append(
                {
                    "url": CONTAINS_PROPERTY,
                    "extension": [
                        {"url": "code", "valueCode": name},
                        {"url": "value", key: value},
                    ],
                }
            )
        if extensions:
            item["extension"] = extensions
        item["system"] = e.system
        if e.version and e.system in several:
            item["version"] = e.version
        if e.abstract:
            item["abstract"] = True
        if e.inactive:
            item["inactive"] = True
        item["code"] = e.code
        if e.display is not None:
            item["display"] = e.display
        if self.include_designations and e.designations:
            item["designation"] = list(e.designations)
        return item

    def _repr_html_(self) -> str:
        title = html.escape(
            self.valueset.get("title") or self.valueset.get("name") or self.url or "ValueSet"
        )
        head = f"<p><b>{title}</b> <code>{html.escape(self.url or '')}</code>: {self.total} codes"
        shown = self.frame.head(50)
        more = f" (first {len(shown)} shown)" if len(self.page) > len(shown) else ""
        return head + more + "</p>" + shown.to_html(index=False, na_rep="")

    def __repr__(self) -> str:
        return f"<Expansion {self.url or 'anonymous'}: {self.total} codes>"


CONCEPT_DEFINITION = "http://hl7.org/fhir/StructureDefinition/valueset-concept-definition"
# R5's expansion.property and expansion.contains.property travel in R4 as these cross-version
# extensions (the tx ecosystem's r4 page).
EXPANSION_PROPERTY = (
    "http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.property"
)
CONTAINS_PROPERTY = (
    "http://hl7.org/fhir/5.0/StructureDefinition/extension-ValueSet.expansion.contains.property"
)
CONCEPT_PROPERTIES = "http://hl7.org/fhir/concept-properties#"
UNCLOSED = "http://hl7.org/fhir/StructureDefinition/valueset-unclosed"
UNCLOSED_REASON = "http://hl7.org/fhir/StructureDefinition/valueset-unclosed-reason"
_URI_PARAMETERS = (
    "used-codesystem",
    "used-fragment",
    "used-valueset",
    "version",
    "system-version",
    "check-system-version",
    "force-system-version",
    "default-valueset-version",
)


_STANDARD_PROPERTIES = {"inactive", "parent", "child", "definition", "status", "notSelectable"}


def _property_declaration(name: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"url": "code", "valueCode": name}]
    if name in _STANDARD_PROPERTIES:
        parts.append({"url": "uri", "valueUri": CONCEPT_PROPERTIES + name})
    return {"url": EXPANSION_PROPERTY, "extension": parts}


def _several_versions(parameters: Sequence[tuple[str, Any]]) -> frozenset[str]:
    """The code systems the expansion uses in more than one version, read from its
    ``used-codesystem`` parameters (``url|version``, made from every entry when it was
    expanded): no pass over the entries for each page."""
    used = Counter(str(v).rsplit("|", 1)[0] for n, v in parameters if n == "used-codesystem")
    return frozenset(s for s, times in used.items() if times > 1)


def _parameter(name: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"name": name, "valueBoolean": value}
    if isinstance(value, int):
        return {"name": name, "valueInteger": value}
    if name in _URI_PARAMETERS:
        return {"name": name, "valueUri": str(value)}
    return {"name": name, "valueString": str(value)}


def echoed_parameters(req: ExpandRequest) -> list[tuple[str, Any]]:
    """The parameters an expansion echoes whatever it holds (defaults assumed included)."""
    params: list[tuple[str, Any]] = [
        ("activeOnly", req.active_only),
        ("includeDesignations", req.include_designations),
        ("includeDefinition", req.include_definition),
    ]
    if req.exclude_nested is not None:
        params.append(("excludeNested", req.exclude_nested))
    for name, given in (
        ("system-version", req.policy.defaults),
        ("check-system-version", req.policy.check),
        ("force-system-version", req.policy.force),
        ("default-valueset-version", req.policy.valueset_defaults),
    ):
        params += [(name, f"{url}|{v}") for url, v in given.items()]
    return params


def designations_kept(entries: Sequence[Entry], tokens: Sequence[str]) -> list[Entry]:
    """The entries with only the designations of the wanted languages or uses."""
    wanted = [languages.designation_token(t) for t in tokens]
    return [
        e._replace(
            designations=tuple(
                d for d in e.designations if languages.designation_matches(d, wanted)
            )
        )
        for e in entries
    ]
