"""Which stages the runner plans per Kubernetes version (no cluster needed)."""
from __future__ import annotations

import argparse

from clusters.versions import gate_stage, supported_versions
from conformance.run import kind_plan

ALL = argparse.Namespace(no_mixed=False, no_gate_cycle=False, no_upgrade=False)


def topologies(version, args=ALL, gates=None) -> list[str]:
    return [step.topology for step in kind_plan(version, args, gates or {})]


def test_gate_cycle_only_where_the_gate_can_be_switched_off_and_upgrade_from_the_oldest() -> None:
    pinned = sorted(supported_versions())
    for version in pinned:
        plan = topologies(version)
        assert plan[:2] == ["dra", "mixed"]
        assert ("gate-cycle" in plan) == (not gate_stage(version).gate_locked), (version, plan)
        assert ("upgrade" in plan) == (version == pinned[0] and len(pinned) > 1), (version, plan)


def test_skip_flags_and_gate_overrides_leave_only_what_was_asked() -> None:
    oldest = min(supported_versions())
    args = argparse.Namespace(no_mixed=True, no_gate_cycle=True, no_upgrade=True)
    assert topologies(oldest, args) == ["dra"]
    assert topologies(oldest, gates={"DRAExtendedResource": False}) == ["dra", "mixed"]


def test_every_profile_gets_the_main_and_mixed_stages_the_first_one_the_in_place_changes() -> None:
    plan = kind_plan(min(supported_versions()), ALL, {})
    assert {step.topology: step.every_profile for step in plan} == {
        "dra": True, "mixed": True, **{s.topology: False for s in plan if s.topology in ("gate-cycle", "upgrade")}}
