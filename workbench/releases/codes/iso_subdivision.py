"""The ISO subdivision kind, built in (see ``iso``)."""

from __future__ import annotations

from workbench.releases.codes.iso import SubdivisionProvider, _IsoKind

KIND = _IsoKind("iso-subdivision", SubdivisionProvider)
