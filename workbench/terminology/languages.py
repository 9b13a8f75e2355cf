"""Display languages as the tx ecosystem's languages page specifies them.

A request names the languages it wants as a weighted list, like HTTP's Accept-Language
(``de, en;q=0.5``). ``*`` stands for any other language: ``de, *;q=0.1`` means "German if
there is one, else whatever the code system has"; ``de, *;q=0`` means "German or nothing".
When the list says nothing about ``*``, expansions assume it at a low weight (fall back) and
validation assumes it absent.

The list comes from, first match wins: the ``displayLanguage`` parameter, the value set's
``valueset-expansion-parameter`` extension named ``displayLanguage``, the HTTP
``Accept-Language`` header, and ``ValueSet.language``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workbench.errors import InvalidLanguageError, InvalidRequestError
from workbench.terminology.definition import expansion_parameter

_DISPLAY_USES = {None, "display", "preferredForLanguage"}
#: A BCP 47 language tag: a primary language and subtags (de, en-GB, zh-Hant-TW): RFC
#: 5646's shape of a tag (2.1: subtags of 1 to 8 letters and digits, a primary of letters).
TAG_FORM = r"[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*"
_TAG = re.compile(TAG_FORM)
_OWS = "[ \t]*"
_QVALUE = r"(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)"  # RFC 9110 12.4.2
_RANGE = rf"(?:{TAG_FORM}|\*)(?:{_OWS};{_OWS}[qQ]={_QVALUE})?"
#: A weighted language list as RFC 9110's Accept-Language has it (12.5.4): language ranges
#: (a tag or ``*``), each with an optional weight, joined by commas; empty elements are
#: taken and ignored, as RFC 9110 5.6.1.2 requires of a recipient (``de,,en``, ``de,``).
LIST_FORM = rf"(?:{_OWS},)*{_OWS}{_RANGE}(?:{_OWS},(?:{_OWS}{_RANGE})?)*{_OWS}"
_LIST = re.compile(LIST_FORM)


@dataclass(frozen=True)
class Languages:
    """A weighted language list: the wanted tags in order, and whether any other will do.

    >>> Languages.parse("en;q=0.5, de, *;q=0").tags
    ('de', 'en')
    """

    tags: tuple[str, ...]
    wildcard: bool
    text: str

    @classmethod
    def parse(cls, text: str, *, wildcard: bool = True) -> Languages:
        """Read ``de, en;q=0.5, *;q=0``; ``wildcard`` is assumed when ``*`` is not named.

        Raises InvalidRequestError for a malformed list (``LIST_FORM``, which the OpenAPI
        document states).
        """
        weighted: list[tuple[float, int, str]] = []
        any_other: bool | None = None
        for i, part in enumerate(p.strip() for p in text.split(",")):
            if not part:
                continue
            tag, _, rest = part.partition(";")
            tag = tag.strip()
            q = 1.0
            if rest:
                key, _, value = rest.strip().partition("=")
                try:
                    q = float(value)
                except ValueError:
                    q = -1.0
                if key.strip().lower() != "q" or not 0 <= q <= 1:  # (RFC 9110: any case)
                    raise InvalidRequestError(
                        f"'{part}' in the display language list '{text}' is not a language "
                        "with a weight (for example de;q=0.5)"
                    )
            if tag != "*" and not _TAG.fullmatch(tag):
                raise InvalidLanguageError(
                    f"Invalid displayLanguage: '{tag}' in '{text}' is not a language tag "
                    "(BCP 47, for example de or en-GB)"
                )
            if tag == "*":
                any_other = q > 0
            elif q > 0:
                weighted.append((-q, i, tag))
        if not _LIST.fullmatch(text):
            raise InvalidRequestError(
                f"'{text}' is not a language list (RFC 9110's Accept-Language: for example "
                "de, en;q=0.5, *;q=0)"
            )
        tags = tuple(tag for _, _, tag in sorted(weighted))
        return cls(tags, wildcard if any_other is None else any_other, text)

    def __bool__(self) -> bool:
        return bool(self.tags)


def same_language(wanted: str, language: str | None) -> bool:
    """True when ``language`` is ``wanted`` or one is a more specific form of the other.

    >>> same_language("de", "de-CH"), same_language("de-CH", "de"), same_language("de", "en")
    (True, True, False)
    """
    if not language:
        return False
    a, b = wanted.lower(), language.lower()
    return a == b or a.startswith(b + "-") or b.startswith(a + "-")


def _use_code(designation: Mapping[str, Any]) -> str | None:
    use = designation.get("use")
    return str(use.get("code")) if isinstance(use, Mapping) and use.get("code") else None


def display_in(
    languages: Languages,
    display: str | None,
    codesystem_language: str | None,
    designations: Iterable[Mapping[str, Any]],
) -> str | None:
    """The display to show for the wanted languages: the concept's own display when the code
    system is in a wanted language, else a designation in it (display-like uses first); with
    the wildcard, the concept's display; else None."""
    return shown_in(languages, display, codesystem_language, designations)[0]


def shown_in(
    languages: Languages,
    display: str | None,
    codesystem_language: str | None,
    designations: Iterable[Mapping[str, Any]],
) -> tuple[str | None, str | None]:
    """``display_in``, with the wanted language the display was found in (None when it is
    the wildcard's fallback, or there is none)."""
    listed = [d for d in designations if d.get("value") and d.get("language")]
    for tag in languages.tags:
        if display and same_language(tag, codesystem_language):
            return display, str(codesystem_language)
        found = [d for d in listed if same_language(tag, str(d["language"]))]
        found.sort(key=lambda d: _use_code(d) not in _DISPLAY_USES)
        if found:
            return str(found[0]["value"]), str(found[0]["language"])
    return (display if languages.wildcard else None), None


def valid_in(
    languages: Languages,
    display: str | None,
    codesystem_language: str | None,
    designations: Iterable[Mapping[str, Any]],
) -> list[str]:
    """Every text that is a display of the concept in one of the wanted languages."""
    found: list[str] = []
    for tag in languages.tags:
        if display and (same_language(tag, codesystem_language) or not codesystem_language):
            found.append(display)
        found += [
            str(d["value"])
            for d in designations
            if d.get("value") and same_language(tag, d.get("language"))
        ]
    return list(dict.fromkeys(found))


def requested(
    parameter: str | None,
    valueset: Mapping[str, Any] | None,
    header: str | None,
    *,
    wildcard: bool,
) -> Languages | None:
    """The language list of a request, from the first source that names one. A malformed
    list is an invalid request when the request gives it (the parameter, the header); one
    that a stored value set holds (its extension, its language) is passed over."""
    sources = (
        (parameter, True),
        (_from_extension(valueset), False),
        (header, True),
        ((valueset or {}).get("language"), False),
    )
    for text, given in sources:
        if not text:
            continue
        try:
            return Languages.parse(str(text), wildcard=wildcard)
        except InvalidRequestError:
            if given:
                raise
    return None


def _from_extension(valueset: Mapping[str, Any] | None) -> str | None:
    """The ``displayLanguage`` a ``valueset-expansion-parameter`` extension gives, on the
    ValueSet or on its ``compose`` (both the tools and the core extension URL)."""
    value = expansion_parameter(valueset, "displayLanguage")
    return str(value) if value else None


BCP47 = "urn:ietf:bcp:47"


def designation_token(token: str) -> tuple[str | None, str]:
    """Read a ``designation`` parameter: ``system|code`` (a use, or ``urn:ietf:bcp:47|de`` for
    a language) or a bare language tag.

    >>> designation_token("urn:ietf:bcp:47|de"), designation_token("de")
    (('urn:ietf:bcp:47', 'de'), ('urn:ietf:bcp:47', 'de'))
    """
    system, sep, code = token.rpartition("|")
    if not sep:
        return (BCP47, token)
    if not code:
        raise InvalidRequestError(
            f"Parameter 'designation' must be 'system|code' or a language, not '{token}'"
        )
    return (system or None, code)


def designation_matches(
    designation: Mapping[str, Any], wanted: Iterable[tuple[str | None, str]]
) -> bool:
    """True when a designation has a wanted language or a wanted use."""
    use = designation.get("use") if isinstance(designation.get("use"), Mapping) else {}
    for system, code in wanted:
        if system == BCP47 and same_language(code, designation.get("language")):
            return True
        if use and str(use.get("code")) == code and system in (None, use.get("system")):
            return True
    return False
