"""The UCUM kind: built in (the units, prefixes and grammar ship with the package), so it
has no release files; every workbench has its provider."""

from __future__ import annotations

from workbench.releases.kinds import BuiltinKind
from workbench.releases.ucum.units import SYSTEM
from workbench.terminology.provider import CodeSystemProvider


class UcumKind(BuiltinKind):
    """UCUM, the Unified Code for Units of Measure: a grammar, always loaded."""

    name = "ucum"
    title = "UCUM (built in)"
    system = SYSTEM

    def provider(self) -> CodeSystemProvider:
        """A new ``UcumProvider``."""
        from workbench.releases.ucum.provider import UcumProvider

        return UcumProvider()


KIND = UcumKind()
