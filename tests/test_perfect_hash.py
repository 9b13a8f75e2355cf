"""The perfect hash table of the polars lookup: every key in a slot of its own."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.bulk.perfect_hash import KEYS_PER_BUCKET, PerfectHash


def random_hashes(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1 << 63, n, dtype=np.int64).view(np.uint64) * 2


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 17, 1_000, 105_001, 300_000])
def test_every_key_is_found_at_its_position(n: int) -> None:
    hashes = random_hashes(n)
    table = PerfectHash.of(hashes)
    assert table.unplaced.tolist() == []
    assert table.positions(hashes).tolist() == list(range(n))
    slots = table.slot_of(hashes)
    assert len(np.unique(slots)) == n  # a slot of its own
    assert 2 * n <= len(table.slots) <= max(4 * n, 16)  # at most half the slots hold a key
    assert len(table.seeds) < max(2 * n / KEYS_PER_BUCKET, 2) + 1  # a few keys per bucket


@pytest.mark.parametrize(
    "hashes",
    [
        [0, 0],
        [1 << 63, 5, 1 << 63, 5, 5],
        [(1 << 64) - 1, 0, (1 << 64) - 1],
    ],
    ids=["zeros", "repeated", "extremes"],
)
def test_keys_of_one_hash_leave_all_but_the_first_unplaced(hashes: list[int]) -> None:
    keys = np.array(hashes, dtype=np.uint64)
    table = PerfectHash.of(keys)
    first = {h: hashes.index(h) for h in hashes}
    assert table.unplaced.tolist() == [i for i, h in enumerate(hashes) if first[h] != i]
    assert table.positions(keys).tolist() == [first[h] for h in hashes]


def test_a_hash_no_key_has_proposes_a_position_in_range() -> None:
    keys = random_hashes(10_000)
    others = random_hashes(100_000, seed=2)
    positions = PerfectHash.of(keys).positions(others)
    assert positions.dtype == np.uint32
    assert int(positions.max()) < len(keys)
    assert 0.3 < float((positions == 0).mean()) < 0.9  # empty slots propose 0


def test_the_build_is_deterministic() -> None:
    hashes = random_hashes(50_000, seed=3)
    one, two = PerfectHash.of(hashes), PerfectHash.of(hashes)
    assert np.array_equal(one.seeds, two.seeds)
    assert np.array_equal(one.slots, two.slots)


def test_hashes_that_share_their_low_bits_are_placed() -> None:
    """A slot reads the top bits of the mixed hash: keys alike in their low bits, or all
    in one bucket (alike in their top bits), still get slots of their own."""
    low = np.arange(1, 20_001, dtype=np.uint64) << np.uint64(40)
    top = np.arange(1, 20_001, dtype=np.uint64)
    for hashes in (low, top):
        table = PerfectHash.of(hashes)
        assert table.unplaced.tolist() == []
        assert table.positions(hashes).tolist() == list(range(len(hashes)))
