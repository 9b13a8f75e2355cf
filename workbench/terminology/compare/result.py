"""``Comparison``: what ``$compare`` (``Workbench.compare``) answers of two value sets.

A frozen result: the relation (``result``), the codes in both, only in *this* (a) and
only in *other* (b), whether expansions were compared, and one sentence saying so; with
the three pandas frames, the FHIR Parameters of the wire and a notebook repr.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workbench.terminology.concepts import Entry

if TYPE_CHECKING:
    import pandas as pd

#: The relations, as the issue and tx.fhir.org name them.
RESULTS = ("same", "subset", "superset", "overlapping", "disjoint", "empty", "indeterminate")
#: What each relation says of *this* against *other*, in the message.
_SAYS = {
    "same": "has the same codes as",
    "subset": "is a subset of",
    "superset": "is a superset of",
    "overlapping": "overlaps",
    "disjoint": "shares no code with",
    "empty": "has no codes, nor has",
    "indeterminate": "cannot be compared with",
}
_COLUMNS = ["code", "display", "system", "version"]


def relation(a: int, b: int, common: int) -> str:
    """The relation of a set of ``a`` codes to one of ``b`` codes that share ``common``."""
    if a == 0 and b == 0:
        return "empty"
    if common == 0:
        return "disjoint"
    if common == a == b:
        return "same"
    if common == a:
        return "subset"
    if common == b:
        return "superset"
    return "overlapping"


@dataclass(frozen=True)
class Comparison:
    """Value set ``this`` (a) compared with ``other`` (b).

    ``result`` is one of ``RESULTS``; ``common``, ``missing`` (in a, not in b) and
    ``extra`` (in b, not in a) hold the codes when expansions were compared
    (``performed_expansion``); when the two definitions alone decided, they are empty.
    ``reason`` says why the result is ``indeterminate``.
    """

    this: str
    other: str
    result: str
    performed_expansion: bool
    common: tuple[Entry, ...] = ()
    missing: tuple[Entry, ...] = ()
    extra: tuple[Entry, ...] = ()
    reason: str | None = None

    @property
    def message(self) -> str:
        """One sentence naming both value sets and their relation."""
        said = f"The value set {self.this} {_SAYS[self.result]} the value set {self.other}"
        if self.result == "indeterminate" and self.reason:
            return f"{said}: {self.reason}"
        how = "expansions" if self.performed_expansion else "definitions"
        return f"{said} (compared by their {how})"

    @property
    def both(self) -> pd.DataFrame:
        """The codes in both value sets (code, display, system, version)."""
        return _frame(self.common)

    @property
    def only_in_a(self) -> pd.DataFrame:
        """The codes of *this* that *other* lacks."""
        return _frame(self.missing)

    @property
    def only_in_b(self) -> pd.DataFrame:
        """The codes of *other* that *this* lacks."""
        return _frame(self.extra)

    def to_parameters(self) -> dict[str, Any]:
        """The ``$compare`` outputs as a FHIR Parameters resource."""
        out: list[dict[str, Any]] = [{"name": "result", "valueCode": self.result}]
        systems = {e.system for e in (*self.common, *self.missing, *self.extra)}
        for name, entries in (
            ("common-codes", self.common),
            ("missing-codes", self.missing),
            ("extra-codes", self.extra),
        ):
            if entries:
                out.append({"name": name, "valueString": codes_text(entries, len(systems) > 1)})
        out.append({"name": "performed-expansion", "valueBoolean": self.performed_expansion})
        out.append({"name": "message", "valueString": self.message})
        return {"resourceType": "Parameters", "parameter": out}

    def outputs(self) -> dict[str, Any]:
        """The outputs by name, as the operation returns them (empty code lists left out)."""
        return {
            p["name"]: next(v for k, v in p.items() if k.startswith("value"))
            for p in self.to_parameters()["parameter"]
        }

    def __repr__(self) -> str:
        counts = f"both={len(self.common)}, only_in_a={len(self.missing)}, "
        counts += f"only_in_b={len(self.extra)}"
        return (
            f"Comparison({self.result!r}, {self.this} vs {self.other}, {counts}, "
            f"performed_expansion={self.performed_expansion})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th>{label}</th><td>{len(entries)}</td><td>{_sample(entries)}</td></tr>"
            for label, entries in (
                ("in both", self.common),
                ("only in a", self.missing),
                ("only in b", self.extra),
            )
        )
        return (
            f"<div><b>{html.escape(self.result)}</b>: {html.escape(self.message)}"
            f"<table><tr><th></th><th>codes</th><th>first codes</th></tr>{rows}</table></div>"
        )


def codes_text(entries: tuple[Entry, ...], qualified: bool) -> str:
    """The codes comma-separated; ``system|code`` when several systems are involved."""
    if qualified:
        return ",".join(f"{e.system}|{e.code}" for e in entries)
    return ",".join(e.code for e in entries)


def _sample(entries: tuple[Entry, ...], shown: int = 5) -> str:
    """The first codes with their displays, escaped, for the notebook repr."""
    text = ", ".join(
        html.escape(e.code + (f" ({e.display})" if e.display else "")) for e in entries[:shown]
    )
    return text + (", …" if len(entries) > shown else "")


def _frame(entries: tuple[Entry, ...]) -> pd.DataFrame:
    """A frame of the codes: code, display, system, version."""
    import pandas as pd

    return pd.DataFrame(
        [(e.code, e.display, e.system, e.version) for e in entries], columns=_COLUMNS
    )
