"""Which Workbench a call that is not given one uses (the ``.fhir`` pandas accessor, a
``ColumnReport`` of raw data): no hidden state.

1. The one chosen with ``workbench.use(wb)``: for the rest of the context (a notebook's
   kernel, a thread, an asyncio task) or, as ``with workbench.use(wb): …``, for the block
   only (the previous choice comes back on exit). The choice lives in a ``ContextVar``, so
   threads and tasks that choose differently do not see each other's choice.
2. Else the only Workbench that exists (``workbench.workbench.live()``: every Workbench is
   tracked with a weak reference when it is made).
3. Else an error that names every live Workbench and says how to choose.

>>> from workbench import Workbench
>>> a, b = Workbench(), Workbench()
>>> with use(b):
...     current() is b
True
>>> current()
Traceback (most recent call last):
    ...
workbench.selection.WorkbenchChoiceError: ... Workbenches exist, and none was chosen, ...
"""

from __future__ import annotations

import gc
from contextvars import ContextVar, Token
from types import TracebackType

from workbench.errors import InvalidRequestError
from workbench.workbench import Workbench, live

_CHOSEN: ContextVar[Workbench | None] = ContextVar("workbench_chosen", default=None)

HOW = (
    "pass workbench=wb to the call, or choose one with workbench.use(wb) "
    "(or for a block: with workbench.use(wb): ...)"
)


class WorkbenchChoiceError(InvalidRequestError):
    """No Workbench was given or chosen, and there is not exactly one to use."""


class use:
    """Choose the Workbench used when a call is given none: ``workbench.use(wb)``.

    The choice holds for the current context (the rest of a notebook, a thread, a task);
    ``with workbench.use(wb): …`` restores the previous choice when the block ends.
    ``use(None)`` clears the choice.
    """

    def __init__(self, wb: Workbench | None) -> None:
        if wb is not None and not isinstance(wb, Workbench):
            raise InvalidRequestError(
                f"workbench.use takes a Workbench (or None), not {type(wb).__name__}"
            )
        self.workbench = wb
        self._token: Token[Workbench | None] = _CHOSEN.set(wb)

    def __enter__(self) -> Workbench | None:
        return self.workbench

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _CHOSEN.reset(self._token)

    def __repr__(self) -> str:
        return f"use({self.workbench!r})"


def chosen() -> Workbench | None:
    """The Workbench chosen with ``use`` in this context, if any."""
    return _CHOSEN.get()


def current() -> Workbench:
    """The Workbench a call without ``workbench=`` uses: the one chosen with ``use``, else the
    only one that exists. Raises WorkbenchChoiceError naming the live Workbenches when there
    is none or more than one."""
    found = _CHOSEN.get()
    if found is not None:
        return found
    candidates = live()
    if len(candidates) > 1:  # unreachable ones in reference cycles are not candidates
        gc.collect()
        candidates = live()
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise WorkbenchChoiceError(
            "No Workbench exists: create one with wb = Workbench() and load what the call "
            f"needs; then {HOW}"
        )
    listed = "; ".join(repr(wb) for wb in candidates[:8])
    if len(candidates) > 8:
        listed += f"; and {len(candidates) - 8} more"
    raise WorkbenchChoiceError(
        f"{len(candidates)} Workbenches exist, and none was chosen, so which one to use is "
        f"not clear: {listed}. To choose, {HOW}"
    )
