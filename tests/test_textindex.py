"""The text filter's index matches exactly what the plain definition matches: a code matches
when its ``code display`` (case-folded) contains every word of the filter as a substring."""

from __future__ import annotations

import random

import pytest

from workbench.terminology.compose import Entry
from workbench.terminology.textindex import MAX_WORDS, TextIndex

ROWS = [
    ("A1", "Heart attack"),
    ("B2", "heartburn, chronic"),
    ("C3", "Attack of the HEART"),
    ("D4", None),
    ("E5", "Straße\tnew\nline"),
    ("heart", "code only"),
    ("F6", "x-ray  of  chest"),
]


def _index(rows: list[tuple[str, str | None]]) -> TextIndex:
    return TextIndex([Entry("http://x", None, c, d, False, False) for c, d in rows])


def _plain(rows: list[tuple[str, str | None]], text: str) -> list[int]:
    words = sorted(set(text.casefold().split()), key=lambda w: (-len(w), w))[:MAX_WORDS]
    return [
        i
        for i, (code, display) in enumerate(rows)
        if all(w in f"{code} {display or ''}".casefold().replace("\n", " ") for w in words)
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("heart", [0, 1, 2, 5]),  # a substring of a token ("heartburn") matches
        ("HEART attack", [0, 2]),  # every word, in any order, case-folded
        ("eart tack", [0, 2]),  # inside tokens, not only at their start
        ("art", [0, 1, 2, 5]),
        ("1", [0]),  # the code is searched too
        ("strasse line", [4]),  # casefold, and a tab or newline separates tokens
        ("code", [5]),
        ("x-ray chest", [6]),
        ("heart heart heart", [0, 1, 2, 5]),  # a repeated word counts once
        ("nothing", []),
        ("heart nothing", []),
        ("", [0, 1, 2, 3, 4, 5, 6]),  # no word: every code
        ("   ", [0, 1, 2, 3, 4, 5, 6]),
    ],
)
def test_filter_table(text: str, expected: list[int]) -> None:
    assert _index(ROWS).search(text) == expected
    assert _plain(ROWS, text) == expected


def test_many_words_over_many_long_texts_match_the_definition() -> None:
    """Displays of 60 words drawn from 12 (every word common), filters of 1 to 40 words
    (over ``MAX_WORDS``: the longest are used), some words only parts of tokens."""
    rng = random.Random(38)
    vocab = [f"w{k}z" for k in range(12)] + ["alpha", "alphabet", "bet"]
    rows: list[tuple[str, str | None]] = [
        (f"C{i}", " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 60))))
        for i in range(400)
    ]
    index = _index(rows)
    parts = [*vocab, "w1", "1z", "lph", "et", "z"]
    for n in (1, 2, 3, 5, 8, 13, 40):
        for _ in range(5):
            text = " ".join(rng.choice(parts) for _ in range(n))
            assert index.search(text) == _plain(rows, text), text
