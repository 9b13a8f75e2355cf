"""The text filter of ``$expand`` as an index: cost grows with the matches, not words x codes.

A code matches a filter when its text (``code display``, case-folded) contains every word of
the filter. A filter word holds no whitespace, so it is inside the text exactly when it is
inside one of the text's whitespace-separated tokens. The index therefore keeps the distinct
tokens (the vocabulary, joined into one string with the offset where each starts) and, for
each token, the codes whose text holds it (one array of code positions, sliced per token).

A search takes the words rarest first (the length of their postings, known from the slices).
A word's tokens are found by ``str.find`` over the joined vocabulary (one Python step per
matching token), and its codes are their postings, marked in a boolean array. A later word
whose postings are longer than a few times the candidates left is tested on those candidates'
own texts instead; the search stops as soon as no candidate is left. So a filter costs about
(words x matching candidates) steps in C, never a scan of every display per word. Repeated
words count once; at most ``MAX_WORDS`` distinct words are used (the longest, which narrow
most; ties by the word itself).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from itertools import accumulate

import numpy as np

from workbench.terminology import budget
from workbench.terminology.compose import Entry

MAX_WORDS = 32
_SEPARATOR = "\n"  # never inside a token (tokens are split on whitespace)
_DIRECT = 4  # a word with postings over _DIRECT x the candidates is tested text by text


def entry_text(entry: Entry) -> str:
    """The text a filter searches: code and display, case-folded, on one line."""
    return f"{entry.code} {entry.display or ''}".casefold().replace(_SEPARATOR, " ")


class TextIndex:
    """The texts of ``entries``, their vocabulary and the postings of each token."""

    def __init__(self, entries: Sequence[Entry]) -> None:
        budget.charge(len(entries))
        self.texts = [entry_text(e) for e in entries]
        self.size = len(self.texts)
        held = [set(text.split()) for text in self.texts]
        vocabulary = sorted(set().union(*held))
        ids = {t: k for k, t in enumerate(vocabulary)}
        tokens = np.fromiter((ids[t] for one in held for t in one), dtype=np.int64)
        owners = np.repeat(np.arange(self.size), [len(one) for one in held])
        budget.charge(tokens.size // 64)
        order = np.argsort(tokens, kind="stable")
        self.postings = owners[order]
        counts = np.bincount(tokens, minlength=len(ids))
        self.offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        self.blob = _SEPARATOR.join(vocabulary)
        self.starts = list(accumulate((len(t) + 1 for t in vocabulary), initial=0))

    def search(self, text: str) -> list[int]:
        """Positions (ascending) of the entries whose text contains every word of ``text``."""
        words = sorted(set(text.casefold().split()), key=lambda w: (-len(w), w))[:MAX_WORDS]
        if not words:
            return list(range(self.size))
        held = {w: self._tokens(w) for w in words}
        lengths = {w: self._length(held[w]) for w in words}
        ordered = sorted(words, key=lambda w: (lengths[w], -len(w), w))  # rarest first
        found = np.flatnonzero(self._marked(held[ordered[0]]))
        texts = self.texts
        for word in ordered[1:]:
            if not found.size:
                break
            budget.charge(found.size // 64)
            if lengths[word] > _DIRECT * found.size:
                budget.charge(found.size)
                found = found[[word in texts[i] for i in found.tolist()]]
            else:
                found = found[self._marked(held[word])[found]]
        return [int(i) for i in found.tolist()]

    def _tokens(self, word: str) -> list[int]:
        """The vocabulary tokens that contain ``word``: one scan, one step per match."""
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

    def _length(self, tokens: list[int]) -> int:
        """How many postings the tokens hold together (an entry may count more than once)."""
        offsets = self.offsets
        return int(sum(int(offsets[k + 1] - offsets[k]) for k in tokens))

    def _marked(self, tokens: list[int]) -> np.ndarray:
        """A mark per entry: whether it holds any of ``tokens`` (one step per posting)."""
        offsets, postings = self.offsets, self.postings
        marks = np.zeros(self.size, dtype=bool)
        for k in tokens:
            hold = postings[offsets[k] : offsets[k + 1]]
            budget.charge(1 + hold.size // 64)
            marks[hold] = True
        return marks
