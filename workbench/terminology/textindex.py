"""The text filter of ``$expand`` as an index: cost grows with the matches, not words x codes.

A code matches a filter when its text (``code display``, case-folded) contains every word of
the filter. The index holds all texts joined into one string with the offset where each
starts. A word is looked up by ``str.find`` over that string (C speed, no Python step per
code): each hit names its code through the offsets, and the search jumps to the next code's
text, so the Python work per word is one step per matching code. Once the candidates are few,
later words are checked against the candidates' own texts only. Repeated words count once;
at most ``MAX_WORDS`` distinct words are used (the longest, which narrow most).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from itertools import accumulate

from workbench.terminology import budget
from workbench.terminology.compose import Entry

MAX_WORDS = 32
_SEPARATOR = "\n"  # never inside a filter word (words are split on whitespace)


def entry_text(entry: Entry) -> str:
    """The text a filter searches: code and display, case-folded, on one line."""
    return f"{entry.code} {entry.display or ''}".casefold().replace(_SEPARATOR, " ")


class TextIndex:
    """The texts of ``entries`` joined, with the offset of each."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        budget.charge(len(entries))
        self.texts = [entry_text(e) for e in entries]
        self.size = len(self.texts)
        self.starts = list(accumulate((len(t) + 1 for t in self.texts), initial=0))
        self.blob = _SEPARATOR.join(self.texts)

    def search(self, text: str) -> list[int]:
        """Positions (ascending) of the entries whose text contains every word of ``text``."""
        words = sorted(set(text.casefold().split()), key=len, reverse=True)[:MAX_WORDS]
        found: set[int] | None = None
        for word in words:
            if found is not None and len(found) * 8 < self.size:
                budget.charge(len(found))
                texts = self.texts
                found = {i for i in found if word in texts[i]}
            else:
                hits = self._containing(word)
                found = hits if found is None else found & hits
            if not found:
                return []
        return sorted(found) if found is not None else list(range(self.size))

    def _containing(self, word: str) -> set[int]:
        """The entries whose text contains ``word``: one scan, one step per match."""
        blob, starts = self.blob, self.starts
        budget.charge(1 + len(blob) // 65536)
        hits: list[int] = []
        at = blob.find(word)
        while at != -1:
            k = bisect.bisect_right(starts, at) - 1
            hits.append(k)
            at = blob.find(word, starts[k + 1])
        budget.charge(len(hits))
        return set(hits)
