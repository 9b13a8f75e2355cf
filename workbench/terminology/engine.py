"""The terminology engine over a Registry: ``Terminology`` joins resolution and caches
(``resolution.py``), expansion (``expanding.py``) and validation (``validating.py``).
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
from workbench.terminology.expanding import Expanding
from workbench.terminology.validating import Validating


class Terminology(Expanding, Validating):
    """Expansion, validation, lookup and subsumption over the resources of a Registry."""

    def with_resources(self, resources: Sequence[Mapping[str, Any]]) -> Terminology:
        """A view of this engine that sees ``resources`` (CodeSystems, ValueSets and
        supplements passed with one request, ``tx-resource``) before the stored ones.

        Nothing is stored and nothing is cached beyond the view, so concurrent requests
        never see each other's resources. Raises InvalidRequestError for anything that is
        not a well-formed CodeSystem or ValueSet with a url.
        """
        own = Registry()
        checked: list[Resource] = []
        for i, resource in enumerate(resources):
            if not isinstance(resource, Mapping):
                raise InvalidRequestError(f"tx-resource {i + 1} is not a resource")
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
        try:
            found, _ = loading.read_source(checked, progress=False)
        except (LoadError, InvalidResourceError) as exc:
            raise InvalidRequestError(f"A tx-resource is not valid: {exc.text}") from exc
        own.add_many(found)
        return Terminology(
            OverlayRegistry(own, self.registry), max_expansion=self.max_expansion, parent=self
        )
