"""A perfect hash table over 64-bit hashes, by hash and displace (CHD): every key of the
table has a slot of its own, so a lookup is two gathers and no probing.

A hash's top bits choose its bucket (about four keys each), the bucket's seed is mixed into
the hash, and the top bits of the product choose the slot::

    slot = ((hash ^ seeds[hash >> bucket_shift]) * MIX) >> slot_shift

The seeds are found bucket by bucket, the largest buckets first (while most slots are
free): a seed is kept when it puts every key of its bucket in a free slot of its own.
The slots hold each key's position (an empty slot holds 0, so the caller must compare the
key at position 0 as it does any other). A hash proposes a position, it never proves one:
a hash that is no key's lands in some slot too, and the caller compares the keys.

The seed table (8 bytes per bucket, two bytes per key) stays in a core's cache, and the
slot table is two to four slots per key: the pass over the rows reads two small tables,
where open addressing with several levels reads a larger one, a table of the keys'
hashes to confirm a slot, and again for the rows whose slot was taken.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

MIX = np.uint64(0x9E3779B97F4A7C15)  # odd: the product is a bijection of the mixed hash
KEYS_PER_BUCKET = 4
ROUNDS = 256  # seeds tried per bucket; a bucket of distinct hashes needs a handful
SEED = 20240611  # the build is deterministic: the same hashes give the same table


@dataclass(frozen=True)
class PerfectHash:
    """Slots for a set of 64-bit hashes (see the module). ``unplaced``: the positions of
    the keys without a slot, whose hash another key has (or, vanishingly rarely, whose
    bucket found no seed in ``ROUNDS`` tries); the caller finds them another way."""

    seeds: np.ndarray  # uint64 per bucket
    slots: np.ndarray  # uint32 per slot: a key's position, 0 for none
    bucket_shift: np.uint64
    slot_shift: np.uint64
    unplaced: np.ndarray  # int64 positions

    @classmethod
    def of(cls, hashes: np.ndarray) -> PerfectHash:
        """The table of ``hashes`` (uint64), key ``i`` at position ``i``.

        >>> import numpy as np
        >>> keys = np.array([7, 1 << 40, 12345678901234567], dtype=np.uint64)
        >>> PerfectHash.of(keys).positions(keys).tolist()
        [0, 1, 2]
        """
        n = len(hashes)
        bucket_bits = max(int(-(-n // KEYS_PER_BUCKET) - 1).bit_length(), 1)
        slot_bits = max(int(2 * n - 1).bit_length(), 4)  # at most half the slots hold a key
        table = cls(
            np.zeros(1 << bucket_bits, dtype=np.uint64),
            np.zeros(1 << slot_bits, dtype=np.uint32),
            np.uint64(64 - bucket_bits),
            np.uint64(64 - slot_bits),
            np.zeros(0, dtype=np.int64),
        )
        # by hash, so by bucket (the hash's top bits); of equal hashes, the first key
        order = np.argsort(hashes, kind="stable")
        ordered = hashes.take(order)
        twin = np.zeros(n, dtype=bool)
        twin[1:] = ordered[1:] == ordered[:-1]
        left = table._place(hashes, order[~twin])
        return replace(table, unplaced=np.sort(np.concatenate([order[twin], left])))

    def positions(self, hashes: np.ndarray) -> np.ndarray:
        """The position each hash's slot holds (uint32; 0 for an empty slot)."""
        return self.slots.take(self.slot_of(hashes))

    def slot_of(self, hashes: np.ndarray) -> np.ndarray:
        """Each hash's slot (int64): one gather of its bucket's seed, and three passes of
        arithmetic."""
        mixed = self.seeds.take((hashes >> self.bucket_shift).view(np.int64))
        np.bitwise_xor(mixed, hashes, out=mixed)
        np.multiply(mixed, MIX, out=mixed)
        np.right_shift(mixed, self.slot_shift, out=mixed)
        return mixed.view(np.int64)

    def _place(self, hashes: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """Seeds for the buckets of ``keys`` (positions of distinct hashes, in the order of
        their buckets), written into ``seeds`` and ``slots``; the positions left without a
        slot."""
        bucket = (hashes.take(keys) >> self.bucket_shift).view(np.int64)
        sizes = np.bincount(bucket, minlength=len(self.seeds))
        taken = np.zeros(len(self.slots), dtype=bool)
        claim = np.full(len(self.slots), -1, dtype=np.int64)
        random = np.random.default_rng(SEED)
        left = [np.zeros(0, dtype=np.int64)]
        for size in np.unique(sizes[sizes > 0])[::-1]:
            buckets = np.flatnonzero(sizes == size)
            members = keys[np.searchsorted(bucket, buckets)[:, None] + np.arange(size)]
            for _ in range(ROUNDS):
                if not len(buckets):
                    break
                seeds = random.integers(0, 1 << 63, len(buckets), dtype=np.int64).view(np.uint64)
                slot = self._slots_of(hashes.take(members), seeds)
                placed = _free_and_own(slot, taken, claim)
                done = slot[placed].ravel()
                taken[done] = True
                self.slots[done] = members[placed].ravel()
                self.seeds[buckets[placed]] = seeds[placed]
                buckets, members = buckets[~placed], members[~placed]
            left.append(members.ravel())
        return np.concatenate(left)

    def _slots_of(self, hashes: np.ndarray, seeds: np.ndarray) -> np.ndarray:
        """The slots of a (buckets, keys) array of hashes under one seed per bucket."""
        return (((hashes ^ seeds[:, None]) * MIX) >> self.slot_shift).view(np.int64)


def _free_and_own(slot: np.ndarray, taken: np.ndarray, claim: np.ndarray) -> np.ndarray:
    """Per bucket (a row of ``slot``), whether each of its keys' slots is free and claimed
    by no other key in this round (of two keys on one slot, the later one keeps the claim:
    the other's bucket waits for another seed). ``claim`` is all -1 before and after."""
    flat = slot.ravel()
    mine = np.arange(len(flat), dtype=np.int64)
    claim[flat] = mine
    own = (claim.take(flat) == mine).reshape(slot.shape)
    claim[flat] = -1
    return (own & ~taken.take(slot)).all(axis=1)
