"""Which stages the runner plans per Kubernetes version (no cluster needed)."""

from __future__ import annotations

from clusters.topology import ClusterSpec
from clusters.versions import supported_versions, upgrade_partner
from conformance.runner.options import RunOptions
from conformance.runner.plan import Step, kind_plan, lanes
from kube.versions import KubeVersion

ALL = RunOptions()


def label(step: Step, version: KubeVersion) -> str:
    return ClusterSpec(step.topology, version, kubelet_version=step.kubelets).label


def topologies(version, args=ALL, gates=None) -> list[str]:
    return [label(step, version) for step in kind_plan(version, args, gates or {})]


def test_every_version_gets_clusters_for_the_gate_cycle_and_for_faults_and_upgrade() -> None:
    for version in supported_versions():
        assert topologies(version)[:4] == ["dra", "mixed", "gate-cycle", "in-place"], version


def test_kubelets_one_pinned_minor_older_run_the_main_stages_in_a_lane_of_their_own() -> None:
    pinned = sorted(supported_versions())
    for older, version in zip(pinned, pinned[1:]):
        plan = kind_plan(version, ALL, {})
        skew = [step for step in plan if step.kubelets]
        assert [(s.kubelets, s.lane, s.every_profile, s.after_first_cluster) for s in skew] == [
            (older, "skew", False, True)
        ]
    assert not any(step.kubelets for step in kind_plan(pinned[0], ALL, {})), "nothing older is pinned"
    assert not any(step.kubelets for step in kind_plan(pinned[-1], RunOptions(no_skew=True), {}))


def lane_topologies(args=ALL, one_cluster_at_a_time=False) -> list[list[str]]:
    version = min(supported_versions())
    plan = kind_plan(version, args, {})
    return [[label(step, version) for step in lane] for lane in lanes(plan, one_cluster_at_a_time)]


def test_each_version_upgrades_to_a_neighbour_one_minor_away_and_the_newest_rolls_back_first() -> None:
    pinned = sorted(supported_versions())
    for version in pinned:
        partner = upgrade_partner(version)
        assert partner is not None and abs(partner.minor - version.minor) == 1, (version, partner)
        assert (partner < version) == (version == pinned[-1]), (version, partner)


def test_skip_flags_and_gate_overrides_leave_only_what_was_asked() -> None:
    oldest = min(supported_versions())
    args = RunOptions(no_mixed=True, no_faults=True, no_gate_cycle=True, no_upgrade=True)
    assert topologies(oldest, args) == ["dra"]
    only_faults = RunOptions(no_mixed=True, no_faults=False, no_gate_cycle=True, no_upgrade=True)
    assert topologies(oldest, only_faults) == ["dra", "in-place"]
    only_gate_cycle = RunOptions(no_mixed=True, no_faults=True, no_gate_cycle=False, no_upgrade=True)
    assert topologies(oldest, only_gate_cycle) == ["dra", "gate-cycle"]
    assert topologies(oldest, gates={"DRAExtendedResource": False}) == ["dra", "mixed"]


def test_every_profile_gets_the_main_and_mixed_stages_the_first_one_the_in_place_changes() -> None:
    plan = kind_plan(min(supported_versions()), ALL, {})
    assert {step.topology: step.every_profile for step in plan} == {
        "dra": True,
        "mixed": True,
        "gate-cycle": False,
        "in-place": False,
    }


def test_three_lanes_the_gate_cycle_after_the_mixed_stage_unless_one_cluster_at_a_time() -> None:
    assert lane_topologies() == [["dra"], ["mixed", "gate-cycle"], ["in-place"]]
    assert lane_topologies(one_cluster_at_a_time=True) == [["dra", "mixed", "gate-cycle", "in-place"]]
    without_mixed = RunOptions(no_mixed=True, no_faults=False, no_gate_cycle=False, no_upgrade=False)
    assert lane_topologies(without_mixed) == [["dra"], ["gate-cycle"], ["in-place"]]
    only_main = RunOptions(no_mixed=True, no_faults=True, no_gate_cycle=True, no_upgrade=True)
    assert lane_topologies(only_main) == [["dra"]]


def test_only_the_in_place_lane_waits_for_the_first_cluster() -> None:
    plan = kind_plan(min(supported_versions()), ALL, {})
    assert {step.topology: step.after_first_cluster for step in plan} == {
        "dra": False,
        "mixed": False,
        "gate-cycle": False,
        "in-place": True,
    }


def test_the_disruptive_permissions_are_asked_for_only_with_the_disruptive_tests():
    from conformance.lib.profile import load
    from conformance.lib.setup import permissions

    plain, disruptive = (permissions.required(load("example-gpu"), d) for d in (False, True))
    assert {"create pods/eviction", "patch nodes"} <= {str(p) for p in disruptive}
    assert "create pods/eviction" not in {str(p) for p in plain}
    assert len({str(p) for p in permissions.required(load("fake-gpu"), True)}) == len(
        permissions.required(load("fake-gpu"), True)
    )


def test_secret_permissions_are_asked_for_only_with_a_workload_pull_secret():
    import dataclasses

    from conformance.lib.profile import load
    from conformance.lib.setup import permissions

    plain = load("example-gpu")
    with_secret = dataclasses.replace(plain, workload_pull_secret=("drv", "regcred"))
    wanted = {"get secrets", "create secrets", "patch serviceaccounts"}
    assert wanted <= {str(p) for p in permissions.required(with_secret)}
    assert not wanted & {str(p) for p in permissions.required(plain)}
