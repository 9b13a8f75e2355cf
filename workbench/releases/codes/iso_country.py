"""The ISO country kind, built in (see ``iso``)."""

from __future__ import annotations

from workbench.releases.codes.iso import CountryProvider, _IsoKind

KIND = _IsoKind("iso-country", CountryProvider)
