"""The text filter of ``$expand`` as an index: cost grows with the matches, not words x codes.

A code matches a filter when its text (``code display``, case-folded) contains every word of
the filter. The index holds all texts joined into one string with the offset where each
starts, and a sample of that string (a few windows spread over it).

A search takes the words rarest first, as the sample counts them (``str.count``, C speed).
The first word gives the candidates: a rare one by ``str.find`` over the joined string (each
hit names its code through the offsets, and the search jumps to the next code's text, so the
Python work is one step per matching code); a common one by testing every text. Each later
word keeps only the candidates whose own text contains it, and the search stops as soon as
none is left. So a filter of many common words costs (candidates x words) substring tests in
C, and a filter with one rare word costs about one scan. Repeated words count once; at most
``MAX_WORDS`` distinct words are used (the longest, which narrow most).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from itertools import accumulate

from workbench.terminology import budget
from workbench.terminology.compose import Entry

MAX_WORDS = 32
_SEPARATOR = "\n"  # never inside a filter word (words are split on whitespace)
_WINDOWS = 4  # windows of the sample, spread over the joined texts
_WINDOW = 32_768  # characters in each window
_COMMON = 8  # a word found in more than 1 code in _COMMON is tested text by text


def entry_text(entry: Entry) -> str:
    """The text a filter searches: code and display, case-folded, on one line."""
    return f"{entry.code} {entry.display or ''}".casefold().replace(_SEPARATOR, " ")


class TextIndex:
    """The texts of ``entries`` joined, with the offset of each and a sample."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        budget.charge(len(entries))
        self.texts = [entry_text(e) for e in entries]
        self.size = len(self.texts)
        self.starts = list(accumulate((len(t) + 1 for t in self.texts), initial=0))
        self.blob = _SEPARATOR.join(self.texts)
        step = max(len(self.blob) // _WINDOWS, _WINDOW)
        self.sample = [self.blob[at : at + _WINDOW] for at in range(0, len(self.blob), step)]
        sampled = sum(len(w) for w in self.sample)
        # codes per sampled character: turns a count in the sample into a number of codes
        self.scale = len(self.blob) / sampled if sampled else 0.0

    def search(self, text: str) -> list[int]:
        """Positions (ascending) of the entries whose text contains every word of ``text``."""
        words = sorted(set(text.casefold().split()), key=len, reverse=True)[:MAX_WORDS]
        if not words:
            return list(range(self.size))
        estimates = {w: self.estimate(w) for w in words}
        ordered = sorted(words, key=estimates.__getitem__)  # rarest first; ties: longest
        first = ordered[0]
        if estimates[first] * _COMMON > self.size:
            budget.charge(self.size)
            found = [i for i, t in enumerate(self.texts) if first in t]
        else:
            found = self._containing(first)
        texts = self.texts
        for word in ordered[1:]:
            if not found:
                break
            budget.charge(len(found))
            found = [i for i in found if word in texts[i]]
        return found

    def estimate(self, word: str) -> float:
        """About how many times ``word`` occurs in all the texts (counted in the sample)."""
        budget.charge(len(self.sample))
        return sum(w.count(word) for w in self.sample) * self.scale

    def _containing(self, word: str) -> list[int]:
        """The entries whose text contains ``word`` (ascending): one scan, one step per
        match."""
        blob, starts = self.blob, self.starts
        budget.charge(1 + len(blob) // 65536)
        hits: list[int] = []
        at = blob.find(word)
        while at != -1:
            k = bisect.bisect_right(starts, at) - 1
            hits.append(k)
            at = blob.find(word, starts[k + 1])
        budget.charge(len(hits))
        return hits
