"""A throughput ratio measured in alternating slices, for a shared, noisy machine.

On a machine shared with other work, throughput drifts by tens of percent within a minute,
so two loads measured one after the other differ by the drift as much as by themselves.
``paired_ratio`` runs short slices of the two loads in turn, in ABBA order (baseline,
subject, then subject, baseline, ...): each round's ratio compares slices run seconds
apart, a drift that is steady across a round cancels between its two orders, and the
figure is the median of the rounds' ratios (with their range, to show the spread).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class PairedRatio:
    """The subject's throughput over the baseline's, one ratio per round."""

    ratios: tuple[float, ...]

    @property
    def median(self) -> float:
        """The median of the rounds' ratios: the figure."""
        return statistics.median(self.ratios)

    def shown(self) -> str:
        """``0.52 (0.48-0.55, 6 rounds)``."""
        return (
            f"{self.median:.2f} ({min(self.ratios):.2f}-{max(self.ratios):.2f}, "
            f"{len(self.ratios)} rounds)"
        )


def paired_ratio(
    baseline: Callable[[], float], subject: Callable[[], float], rounds: int
) -> PairedRatio:
    """Run ``rounds`` rounds of one slice each of ``baseline`` and ``subject`` (each call
    runs a slice and returns its requests per second), the order reversed every other
    round; return the ratio subject/baseline of each round.

    >>> rates = iter([100.0, 50.0, 40.0, 80.0])  # a drift of a fifth after the first round
    >>> paired_ratio(lambda: next(rates), lambda: next(rates), 2).ratios
    (0.5, 0.5)
    """
    if rounds < 1:
        raise ValueError("paired_ratio needs at least one round")
    ratios = []
    for round_ in range(rounds):
        if round_ % 2 == 0:
            base = baseline()
            ratios.append(subject() / base)
        else:
            sub = subject()
            ratios.append(sub / baseline())
    return PairedRatio(tuple(ratios))
