"""ISO 3166 countries (``urn:iso:std:iso:3166``: alpha-2, alpha-3 and numeric codes),
ISO 3166-2 subdivisions (``urn:iso:std:iso:3166:-2``: a subdivision's parent is the
subdivision it lies in, as ISO 3166-2 gives it) and ISO 4217 currencies
(``urn:iso:std:iso:4217``), built in, with the English names ``pycountry`` ships (its
version is theirs). Finite: they expand, and validate in any case (``us`` is ``US``)."""

from __future__ import annotations

import pycountry

from workbench.releases.codes.table import TableProvider
from workbench.releases.kinds import BuiltinKind
from workbench.terminology.provider import CodeSystemProvider

COUNTRIES = "urn:iso:std:iso:3166"
SUBDIVISIONS = "urn:iso:std:iso:3166:-2"
CURRENCIES = "urn:iso:std:iso:4217"


class CountryProvider(TableProvider):
    """ISO 3166-1: every country by its alpha-2, alpha-3 and numeric code."""

    url = COUNTRIES
    name = "ISO3166Part1"
    title = "ISO 3166-1 countries"

    def rows(self) -> list[tuple[str, str, str | None]]:
        """Alpha-2 codes, then alpha-3, then numeric."""
        countries = list(pycountry.countries)
        return [
            (str(getattr(c, key)), str(c.name), None)
            for key in ("alpha_2", "alpha_3", "numeric")
            for c in countries
        ]


class SubdivisionProvider(TableProvider):
    """ISO 3166-2: country subdivisions (``US-CA``), each under the one it lies in."""

    url = SUBDIVISIONS
    name = "ISO3166Part2"
    title = "ISO 3166-2 subdivisions"
    hierarchical = True

    def rows(self) -> list[tuple[str, str, str | None]]:
        """Every subdivision, with its parent subdivision (None at the top)."""
        return [
            (str(s.code), str(s.name), getattr(s, "parent_code", None) or None)
            for s in pycountry.subdivisions
        ]


class CurrencyProvider(TableProvider):
    """ISO 4217: currencies by their alpha-3 code."""

    url = CURRENCIES
    name = "ISO4217"
    title = "ISO 4217 currencies"

    def rows(self) -> list[tuple[str, str, str | None]]:
        """Every currency."""
        return [(str(c.alpha_3), str(c.name), None) for c in pycountry.currencies]


class _IsoKind(BuiltinKind):
    """One of the ISO tables, always loaded."""

    def __init__(self, name: str, provider: type[TableProvider]) -> None:
        self.name = name  # type: ignore[misc]
        self.title = f"{provider.title} (built in)"  # type: ignore[misc]
        self.system = provider.url  # type: ignore[misc]
        self._provider = provider

    def provider(self) -> CodeSystemProvider:
        """A new provider of the table."""
        return self._provider()
