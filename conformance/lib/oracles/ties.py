"""Is a split of placements between two nodes what a tie broken at random gives?

kube-scheduler picks uniformly among the nodes with the highest score, so when nothing scores a
difference between two nodes each pod lands on either with probability 1/2.
"""

from __future__ import annotations

import math


def tie_p_value(on_one: int, placements: int) -> float:
    """Two-sided binomial p-value of `on_one` of `placements` pods on one of two nodes, were each
    pod to pick either node with probability 1/2."""
    tail = min(on_one, placements - on_one)
    outcomes: int = 2**placements  # typeshed: int ** int is Any (a negative power is a float); a count is not
    return min(1.0, 2 * sum(math.comb(placements, k) for k in range(tail + 1)) / outcomes)
