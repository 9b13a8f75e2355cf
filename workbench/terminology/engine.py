"""The terminology engine over a Registry: ``Terminology`` joins resolution and caches
(``resolution.py``), expansion (``expand/engine.py``) and validation (``validate/engine.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workbench import loading
from workbench.errors import (
    InvalidRequestError,
    InvalidResourceError,
    LoadError,
)
from workbench.registry import OverlayRegistry, Registry
from workbench.resources import Resource
from workbench.terminology import budget
from workbench.terminology.expand.engine import Expanding
from workbench.terminology.validate.engine import Validating

_CHUNK = 256  # inline resources read between two checks of the deadline


class Terminology(Expanding, Validating):
    """Expansion, validation, lookup and subsumption over the resources of a Registry."""

    def with_resources(self, resources: Sequence[Mapping[str, Any]]) -> Terminology:
        """A view of this engine that sees ``resources`` (CodeSystems, ValueSets and
        supplements passed with one request, ``tx-resource``) before the stored ones.

        Nothing is stored and nothing is cached beyond the view, so concurrent requests
        never see each other's resources. Raises InvalidRequestError for anything that is
        not a well-formed CodeSystem or ValueSet with a url. Reading them is charged to the
        request's work budget (a step for each resource and each of its top-level concepts
        or includes), so that many or large ones are bounded like any other work.
        """
        own = Registry()
        checked: list[Resource] = []
        for i, resource in enumerate(resources):
            if not isinstance(resource, Mapping):
                raise InvalidRequestError(f"tx-resource {i + 1} is not a resource")
            budget.charge(1 + _size(resource))
            rtype = resource.get("resourceType")
            if rtype not in ("CodeSystem", "ValueSet"):
                raise InvalidRequestError(
                    f"tx-resource {i + 1} must be a CodeSystem or a ValueSet, not {rtype!r}"
                )
            if not isinstance(resource.get("url"), str) or not resource["url"]:
                raise InvalidRequestError(
                    f"tx-resource {i + 1} ({rtype}) needs a url, so that it can be referred to"
                )
            checked.append(dict(resource))
        found: list[Resource] = []
        for start in range(0, len(checked), _CHUNK):  # the deadline is checked between chunks
            try:
                read, _ = loading.read_source(checked[start : start + _CHUNK], progress=False)
            except (LoadError, InvalidResourceError) as exc:
                raise InvalidRequestError(f"A tx-resource is not valid: {exc.text}") from exc
            found += read
            budget.tick()
        own.add_many(found)
        return Terminology(
            OverlayRegistry(own, self.registry), max_expansion=self.max_expansion, parent=self
        )


def _size(resource: Mapping[str, Any]) -> int:
    """The top-level concepts of a CodeSystem, or the includes and excludes of a ValueSet."""
    concepts = resource.get("concept")
    compose = resource.get("compose")
    size = len(concepts) if isinstance(concepts, list) else 0
    if isinstance(compose, Mapping):
        for part in ("include", "exclude"):
            items = compose.get(part)
            size += len(items) if isinstance(items, list) else 0
    return size
