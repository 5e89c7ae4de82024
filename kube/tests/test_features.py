"""The gate table's answers that the gate-cycle scenario relies on."""

from kube.features import VERSIONS


def test_gate_switchable_in_its_own_minor_until_locked_then_by_emulating_the_last_unlocked_one() -> None:
    assert VERSIONS.switchable_as((1, 35)) == (1, 35)
    assert VERSIONS.switchable_as((1, 36)) == (1, 36)
    assert VERSIONS.switchable_as((1, 37)) == (1, 36)
    assert VERSIONS.switchable_as((1, 38)) == (1, 36)
    assert VERSIONS.switchable_as((1, 33)) is None
