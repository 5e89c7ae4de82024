"""The tie test behind SCORE-2 (no cluster)."""

from __future__ import annotations

import pytest

from conformance.lib.oracles.ties import tie_p_value


@pytest.mark.parametrize(
    "on_one, expected", [(6, 1.0), (0, 2 / 4096), (12, 2 / 4096), (1, 26 / 4096), (11, 26 / 4096), (2, 2 * 79 / 4096)]
)
def test_twelve_placements_are_judged_against_a_fair_coin(on_one, expected):
    assert tie_p_value(on_one, 12) == pytest.approx(expected)


def test_at_one_percent_twelve_placements_reject_only_splits_as_uneven_as_eleven_to_one():
    assert [k for k in range(13) if tie_p_value(k, 12) < 0.01] == [0, 1, 11, 12]
