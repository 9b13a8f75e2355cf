"""The ISO currency kind, built in (see ``iso``)."""

from __future__ import annotations

from workbench.releases.codes.iso import CurrencyProvider, _IsoKind

KIND = _IsoKind("iso-currency", CurrencyProvider)
