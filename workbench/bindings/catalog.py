"""``Workbench.bindings``: the bindings of the StructureDefinitions held, as a frame, each
with where it came from (the definition along ``baseDefinition`` that first bound the
element that way)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from workbench.bindings.store import Structures
from workbench.bindings.structures import Binding, StructureDef
from workbench.errors import InvalidRequestError

#: The columns of ``Workbench.bindings()``.
COLUMNS = ("type", "profile", "kind", "element", "path", "slice", "discriminator", "strength",
           "valueset", "max_valueset", "source")  # fmt: skip


class ProfileNotFoundError(InvalidRequestError):
    """A profile asked for by url is not loaded (or cannot be used)."""

    msg_id = "WB-BIND-002"


def bindings_frame(structures: Structures, profiles: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per bound element of every definition held (``profiles``: of those urls
    only; ProfileNotFoundError names one that is not loaded)."""
    if profiles is None:
        chosen = structures.all()
    else:
        if isinstance(profiles, str):
            profiles = [profiles]
        chosen = []
        for url in profiles:
            sd = structures.get(url)
            if sd is None:
                why = structures.problems.get(url.split("|", 1)[0], "it is not loaded")
                raise ProfileNotFoundError(f"profile {url}: {why}")
            chosen.append(sd)
    rows = [row for sd in chosen for row in _rows(structures, sd)]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for name in ("type", "kind", "strength"):
        frame[name] = frame[name].astype("category")
    return frame


def _rows(structures: Structures, sd: StructureDef) -> list[tuple[object, ...]]:
    chain, _ = structures.chain(sd.url)
    out: list[tuple[object, ...]] = []
    for element in sd.elements:
        if element.binding is None:
            continue
        b = element.binding
        slice_name = _slice_of(element.id)
        out.append((sd.type, sd.url, sd.role, element.id, element.path, slice_name,
                    _discriminator(sd, element.id) if slice_name else None, b.strength,
                    b.valueset, b.max_valueset, _source(chain, element.id, b)))  # fmt: skip
    return out


def _slice_of(element_id: str) -> str | None:
    names = [part.split(":", 1)[1] for part in element_id.split(".") if ":" in part]
    return "/".join(names) if names else None


def _discriminator(sd: StructureDef, element_id: str) -> str | None:
    """How the innermost slice an element is in is told apart: its sliced element's
    discriminators, ``pattern:code`` (several joined by ``, ``)."""
    head, _, _ = element_id.rpartition(":")
    sliced = sd.element(head) if head else None
    found = sliced.discriminators if sliced is not None else None
    if not found:
        return None
    return ", ".join(f"{kind}:{path}" for kind, path in found)


def _source(chain: list[StructureDef], element_id: str, binding: Binding) -> str:
    """The furthest ancestor that binds the element (by id, else by its path in a base
    definition) the same way."""
    source = chain[0].url if chain else ""
    for ancestor in chain[1:]:
        found = ancestor.element(element_id)
        if found is None and ancestor.derivation == "specialization":
            found = ancestor.element(ancestor.type + element_id[element_id.find(".") :])
        if found is None or found.binding != binding:
            break
        source = ancestor.url
    return source
