"""BCP-47 language tags (``urn:ietf:bcp:47``), built in.

A code is a language tag by RFC 5646's grammar (``langtag``, ``privateuse`` or a
grandfathered tag) whose subtags are in the IANA Language Subtag Registry, as the
``language-data`` package ships it (its File-Date is the version); ``langcodes`` names it
("English (United States)"). Tags are case-insensitive (RFC 5646 2.1.1): ``EN-us`` is
``en-US``, given back as ``normalized-code``. Tags longer than ``MAX_LENGTH`` are refused
before any parsing. A grammar, so not listable: a value set of all of BCP-47 validates
tags but is not expanded.
"""

from __future__ import annotations

import re
from functools import cache, cached_property
from pathlib import Path

import language_data
import numpy as np
import pandas as pd

from workbench.releases.codes.base import GrammarProvider, resource
from workbench.releases.kinds import BuiltinKind
from workbench.terminology.concepts import Concept
from workbench.terminology.provider import CodeSystemProvider

SYSTEM = "urn:ietf:bcp:47"
#: The longest tag checked (longer ones are unknown without parsing).
MAX_LENGTH = 255

_ALNUM = "[a-z0-9]"
_LANGTAG = re.compile(
    r"(?P<language>[a-z]{2,3}(?:-[a-z]{3}){0,3}|[a-z]{4,8})"
    r"(?:-(?P<script>[a-z]{4}))?"
    r"(?:-(?P<region>[a-z]{2}|[0-9]{3}))?"
    rf"(?P<variants>(?:-(?:{_ALNUM}{{5,8}}|[0-9]{_ALNUM}{{3}}))*)"
    rf"(?P<extensions>(?:-[0-9a-wy-z](?:-{_ALNUM}{{2,8}})+)*)"
    rf"(?:-(?P<private>x(?:-{_ALNUM}{{1,8}})+))?",
)
_PRIVATE = re.compile(rf"x(?:-{_ALNUM}{{1,8}})+")
_NOT_LISTABLE = (
    "BCP-47 (urn:ietf:bcp:47) is a grammar with infinitely many language tags: a value set "
    "that takes all of it can validate tags but cannot be expanded; list the tags instead"
)


class Registry:
    """The IANA Language Subtag Registry: subtags by type, their descriptions, and the
    grandfathered tags."""

    def __init__(self, text: str) -> None:
        self.subtags: dict[str, dict[str, str]] = {}
        self.tags: dict[str, tuple[str, str]] = {}  # lower-case tag -> (tag, description)
        self.date = ""
        for record in text.split("\n%%\n"):
            fields: dict[str, str] = {}
            for line in record.splitlines():
                key, sep, value = line.partition(": ")
                if sep and not line.startswith(" ") and key not in fields:
                    fields[key] = value.strip()
            if "File-Date" in fields:
                self.date = fields["File-Date"]
            kind, description = fields.get("Type", ""), fields.get("Description", "")
            if "Subtag" in fields:
                table = self.subtags.setdefault(kind, {})
                table.setdefault(fields["Subtag"].lower(), description)
            elif "Tag" in fields and kind == "grandfathered":
                self.tags[fields["Tag"].lower()] = (fields["Tag"], description)

    def has(self, kind: str, subtag: str) -> bool:
        """Whether the registry lists ``subtag`` (lower case) as a subtag of ``kind``;
        ranges such as ``qaa..qtz`` count."""
        if subtag in self.subtags.get(kind, {}):
            return True
        return any(
            len(subtag) == len(low) and low <= subtag <= high
            for low, high in self.ranges.get(kind, ())
        )

    @cached_property
    def ranges(self) -> dict[str, list[tuple[str, str]]]:
        """The ranges (``qaa..qtz``) of each kind of subtag."""
        found: dict[str, list[tuple[str, str]]] = {}
        for kind, table in self.subtags.items():
            for key in table:
                low, sep, high = key.partition("..")
                if sep:
                    found.setdefault(kind, []).append((low, high))
        return found


def _registry_path() -> Path:
    return Path(language_data.__file__).parent / "data" / "language-subtag-registry.txt"


@cache
def registry() -> Registry:
    """The registry ``language-data`` ships (read once, on first use)."""
    return Registry(_registry_path().read_text(encoding="utf-8"))


@cache
def file_date() -> str:
    """The registry's File-Date (its first record, RFC 5646 3.1), read without the rest:
    a Workbench names the version at start-up, and parses the registry when a tag is
    first checked."""
    with _registry_path().open(encoding="utf-8") as file:
        for line in file:
            if line.rstrip("\n") == "%%":
                break
            key, sep, value = line.partition(": ")
            if sep and key == "File-Date":
                return value.strip()
    return registry().date


def _cased(subtags: list[str]) -> str:
    """RFC 5646 2.1.1's case: region upper, script title, the rest lower (after a
    singleton, everything lower)."""
    out: list[str] = []
    singleton = False
    for i, sub in enumerate(subtags):
        if len(sub) == 1:
            singleton = True
        if i and not singleton and len(sub) == 2:
            out.append(sub.upper())
        elif i and not singleton and len(sub) == 4 and sub[0].isalpha():
            out.append(sub.title())
        else:
            out.append(sub)
    return "-".join(out)


class Bcp47Provider(GrammarProvider):
    """BCP-47 language tags: RFC 5646's grammar over the IANA subtag registry."""

    url = SYSTEM
    not_listable = _NOT_LISTABLE

    def __init__(self) -> None:
        super().__init__()
        self.version: str | None = file_date() or None
        self.resource = resource(
            SYSTEM,
            "BCP47",
            "BCP-47 language tags",
            self.version,
            publisher="IETF",
            caseSensitive=False,
        )

    def __reduce__(self) -> tuple[type[Bcp47Provider], tuple[()]]:
        """Pickled as a fresh provider."""
        return (Bcp47Provider, ())

    def concepts_frame(self) -> pd.DataFrame:
        """The registry's language subtags (every tag is made of one)."""
        return language_frame()

    def check(self, code: str) -> str | None:
        """Why ``code`` is no valid language tag (None when it is one)."""
        if len(code) > MAX_LENGTH:
            return f"a language tag has at most {MAX_LENGTH} characters"
        tag = code.lower()
        if tag in registry().tags or _PRIVATE.fullmatch(tag):
            return None
        found = _LANGTAG.fullmatch(tag)
        if found is None:
            return "not a well-formed language tag (RFC 5646)"
        return _unregistered(found)

    def concept_of(self, code: str) -> Concept:
        """The tag in its canonical case, named by language, script, region, variants."""
        tag = code.lower()
        known = registry().tags.get(tag)
        if known is not None:
            canonical, display = known
        elif _PRIVATE.fullmatch(tag):
            canonical, display = tag, f"Private use ({tag})"
        else:
            canonical = _cased(tag.split("-"))
            display = _display(canonical)
        return Concept(code=canonical, display=display, definition=None, order=0)


def _unregistered(found: re.Match[str]) -> str | None:
    """Which subtag of a well-formed tag the registry does not have, or a repeated one."""
    reg = registry()
    language, *extlangs = found["language"].split("-")
    if not reg.has("language", language):
        return f"the language subtag '{language}' is not in the IANA registry"
    for extlang in extlangs[:1]:
        if len(extlangs) > 1 or not reg.has("extlang", extlang):
            return f"the extended language subtag '{extlang}' is not in the IANA registry"
    for kind in ("script", "region"):
        if found[kind] and not reg.has(kind, found[kind]):
            return f"the {kind} subtag '{found[kind]}' is not in the IANA registry"
    variants = [v for v in found["variants"].split("-") if v]
    for variant in variants:
        if not reg.has("variant", variant):
            return f"the variant subtag '{variant}' is not in the IANA registry"
    if len(set(variants)) < len(variants):
        return "a variant subtag is repeated"
    singletons = [s for s in found["extensions"].split("-") if len(s) == 1]
    if len(set(singletons)) < len(singletons):
        return "an extension singleton is repeated"
    return None


def _display(canonical: str) -> str:
    """``langcodes``' English name, with the registry's names of the variants."""
    import langcodes  # on first use: importing it compiles large patterns (0.4 s)

    language = langcodes.Language.get(canonical, normalize=False)
    shown = language.display_name("en")
    if shown.startswith("Unknown language"):
        first = canonical.split("-", 1)[0]
        named = registry().subtags.get("language", {}).get(first) or "Private use"
        shown = named + shown[len("Unknown language") :]
    names = [registry().subtags["variant"][v.lower()] for v in language.variants or ()]
    if not names:
        return shown
    if shown.endswith(")"):
        return f"{shown[:-1]}, {', '.join(names)})"
    return f"{shown} ({', '.join(names)})"


def language_frame() -> pd.DataFrame:
    """Every language subtag of the registry (ranges left out), as concepts."""
    table = registry().subtags.get("language", {})
    codes = [code for code in table if ".." not in code]
    return pd.DataFrame(
        {
            "code": codes,
            "display": [table[c] for c in codes],
            "abstract": np.zeros(len(codes), dtype=bool),
            "inactive": np.zeros(len(codes), dtype=bool),
        }
    )


class Bcp47Kind(BuiltinKind):
    """BCP-47 language tags: a grammar, always loaded."""

    name = "bcp47"
    title = "BCP-47 language tags (built in)"
    system = SYSTEM

    def provider(self) -> CodeSystemProvider:
        """A new ``Bcp47Provider``."""
        return Bcp47Provider()


KIND = Bcp47Kind()
