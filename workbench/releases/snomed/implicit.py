"""SNOMED CT's implicit value sets (FHIR's SNOMED CT page): ``http://snomed.info/sct?fhir_vs``
(every active concept), ``?fhir_vs=isa/{id}``, ``?fhir_vs=refset/{id}``, ``?fhir_vs=refset``
(the refset concepts) and ``?fhir_vs=ecl/{ecl}``; an edition URI (``…/sct/…`` or
``…/xsct/…``) may stand before the ``?``. Each is a ValueSet whose compose uses SNOMED CT's
filters, and a mask over concept rows.
"""

from __future__ import annotations

import urllib.parse
from typing import Any, Protocol

import numpy as np

from workbench.errors import ImplicitValueSetNotFoundError, InvalidRequestError
from workbench.releases.snomed.ecl_eval import Evaluator, Mask
from workbench.releases.snomed.store import SCT, Store

__all__ = ["XSCT", "kind", "members", "valueset"]

XSCT = "http://snomed.info/xsct"


class Release(Protocol):
    """What an implicit value set reads from a SNOMED CT code system (``SnomedCT``)."""

    @property
    def store(self) -> Store: ...
    @property
    def evaluate(self) -> Evaluator: ...
    @property
    def version(self) -> str: ...
    def row(self, code: str) -> int: ...


def kind(url: str) -> tuple[str, str] | None:
    """Parse an implicit value set URL into ``(kind, argument)``: ``("all", "")``,
    ``("isa", id)``, ``("refsets", "")``, ``("refset", id)`` or ``("ecl", text)``; None
    when the URL is not a SNOMED CT implicit value set. An edition URI may stand before
    the ``?``. Raises InvalidRequestError for an unknown ``fhir_vs`` form."""
    base, _, query = url.partition("?")
    edition = base.startswith((SCT + "/", XSCT + "/"))
    if not (base == SCT or edition) or not query.startswith("fhir_vs"):
        return None
    rest = query[len("fhir_vs") :]
    if rest == "":
        return "all", ""
    rest = urllib.parse.unquote(rest[1:] if rest.startswith("=") else rest)
    for prefix, name in (("isa/", "isa"), ("refset/", "refset"), ("ecl/", "ecl")):
        if rest.startswith(prefix) and rest[len(prefix) :].strip():
            return name, rest[len(prefix) :]
    if rest == "refset":
        return "refsets", ""
    raise InvalidRequestError(
        f"'{url}' is not a SNOMED CT implicit value set: after fhir_vs expected nothing, "
        "=isa/{id}, =refset, =refset/{id} or =ecl/{ecl}"
    )


def valueset(sct: Release, url: str) -> dict[str, Any] | None:
    """The ValueSet resource an implicit value set URL stands for (its compose uses this
    code system's filters), or None when the URL is not one. ImplicitValueSetNotFoundError
    when its root does not exist: ``isa/{id}`` of a concept the release lacks, ``refset/{id}``
    of a concept that is no reference set with members."""
    found = kind(url)
    if found is None:
        return None
    which, arg = found
    _check_root(sct, url, which, arg)
    include: dict[str, Any] = {"system": SCT}
    base = url.partition("?")[0]
    if base != SCT:
        include["version"] = base
    if which == "isa":
        include["filter"] = [{"property": "concept", "op": "is-a", "value": arg}]
    elif which == "refset":
        include["filter"] = [{"property": "concept", "op": "in", "value": arg}]
    elif which == "ecl":
        include["filter"] = [{"property": "constraint", "op": "=", "value": arg}]
    elif which == "refsets":
        include["concept"] = [{"code": str(r)} for r in sct.store.refsets() if sct.row(str(r)) >= 0]
    titles = {
        "all": "All of SNOMED CT",
        "isa": f"SNOMED CT concepts subsumed by {arg}",
        "refset": f"SNOMED CT reference set {arg}",
        "refsets": "SNOMED CT reference sets",
        "ecl": f"SNOMED CT concepts matching the ECL {arg}",
    }
    return {
        "resourceType": "ValueSet",
        "url": url,
        "status": "active",
        "name": "SNOMEDCTImplicit",
        "title": titles[which],
        "compose": {"include": [include]},
    }


def _check_root(sct: Release, url: str, which: str, arg: str) -> None:
    """Raise ImplicitValueSetNotFoundError when an ``isa`` or ``refset`` root is missing
    (from this release: a URL naming another edition is left to that edition)."""
    edition = url.partition("?")[0]
    if edition != SCT and not sct.version.startswith(edition):
        return
    if which == "isa" and sct.row(arg.strip()) < 0:
        raise ImplicitValueSetNotFoundError(
            url, f"the concept {arg!r} is not in this SNOMED CT release"
        )
    if which == "refset":
        code = arg.strip()
        if not code.isdigit() or int(code) not in sct.store.refsets():
            known = "a concept" if sct.row(code) >= 0 else "not a concept"
            raise ImplicitValueSetNotFoundError(
                url, f"{code!r} is {known} of this release, but not a reference set with members"
            )


def members(sct: Release, url: str) -> Mask | None:
    """The members of an implicit value set URL (``http://snomed.info/sct?fhir_vs``,
    ``…=isa/{id}``, ``…=refset/{id}``, ``…=refset`` (the refset concepts), ``…=ecl/{ecl}``),
    or None when the URL is not one."""
    found = kind(url)
    if found is None:
        return None
    which, arg = found
    if which == "all":
        return np.asarray(sct.store.active, dtype=bool).copy()
    if which == "isa":
        return sct.evaluate(f"<< {arg}")
    if which == "refset":
        return sct.evaluate(f"^ {arg}")
    if which == "ecl":
        return sct.evaluate(arg)
    mask = np.zeros(sct.store.n, dtype=bool)
    rows = sct.store.rows(np.array(sct.store.refsets(), dtype=np.int64))
    mask[rows[rows >= 0]] = True
    return mask
