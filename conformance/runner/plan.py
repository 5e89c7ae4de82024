"""Which stages run for one Kubernetes version in kind mode, on which cluster, in which lane."""

from __future__ import annotations

from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass

from clusters.versions import older_kubelet, upgrade_partner
from conformance.runner.options import RunOptions
from conformance.runner.reports import log
from conformance.runner.stages import FAULTS_SUITE, GATE_CYCLE_SUITE, UPGRADE_SUITE, Stage, Stages, serial_suites
from conformance.runner.stopping import Interrupts
from kube.versions import KubeVersion


@dataclass(frozen=True)
class Step:
    topology: str
    stage: Stage
    every_profile: bool  # False: the first profile only (stages about Kubernetes changing in place)
    lane: str = "main"  # steps of one lane run in order, on a cluster each; the lanes run at once
    # Its cluster is made once the first lane's is up: clusters made at once slow each other down,
    # and the first lane, the longest, should not wait for one that has time to spare.
    after_first_cluster: bool = False
    kubelets: KubeVersion | None = None  # the workers' version where older than the control plane's


def kind_plan(version: KubeVersion, options: RunOptions, gates: dict[str, bool]) -> list[Step]:
    """The stages to run for one version, each on a cluster of its own topology."""
    plan = [Step("dra", Stages.main, True)]
    if not options.no_mixed:
        plan.append(Step("mixed", Stages.mixed, True, lane="mixed"))
    if gates:
        log(f"{version.tag}: no gate-cycle or upgrade stage with --feature-gates (they start from the defaults)")
        return plan
    # Killing components, switching the gate and the version test Kubernetes with a running
    # driver; doing it again for every profile would double the job for little: the first
    # profile runs them. The faults and the upgrade to the neighbouring pinned minor and back
    # share one cluster (each leaves it as it found it; faults first, on the cluster as made),
    # the longest chain of the job; the gate cycle follows the mixed stage, the shortest, on a
    # cluster of its own, so that no lane waits long for another (full job 1844 -> 1593 s, e9e0402).
    if not options.no_gate_cycle:
        plan.append(Step("gate-cycle", serial_suites([("gate-cycle", GATE_CYCLE_SUITE)]), False, lane="mixed"))
    in_place = []
    if not options.no_faults:
        in_place.append(("faults", FAULTS_SUITE))
    if not options.no_upgrade and upgrade_partner(version):
        in_place.append(("upgrade", UPGRADE_SUITE))
    if in_place:
        # The lane with the most time to spare makes its cluster last (1cb0317: the main lanes'
        # clusters came up sooner, about half a minute off the longest lane).
        plan.append(Step("in-place", serial_suites(in_place), False, lane="in-place", after_first_cluster=True))
    older = older_kubelet(version)
    if not options.no_skew and older is not None:
        # Kubelets one minor behind the control plane, as during every upgrade: what Kubernetes
        # does there is the same for every profile's driver, so the first profile runs it.
        plan.append(
            Step("dra", Stages.with_older_kubelets, False, lane="skew", after_first_cluster=True, kubelets=older)
        )
    return plan


def lanes(plan: list[Step], one_cluster_at_a_time: bool) -> list[list[Step]]:
    """The plan as lanes that run at once, each its steps in order, in the order the plan names
    them. A second cluster at work gains more than it costs while the host has cores to spare
    (docs/timings.md: three lanes cut the full job from 48 to 27 min on two cores)."""
    if one_cluster_at_a_time:
        return [plan]
    names = list(dict.fromkeys(step.lane for step in plan))
    return [[step for step in plan if step.lane == name] for name in names]


def run_lanes(plan: list[list[Step]], run_step: Callable[[Step], bool], interrupts: Interrupts) -> bool:
    """The first lane in this thread, the others in threads of their own; every step runs even
    after another failed. An interrupt (only ever raised here) stops the other lanes' stages, and
    returns once those lanes have cleaned up (their clusters deleted)."""

    def lane(steps: list[Step]) -> bool:
        return all([run_step(step) for step in steps])

    with futures.ThreadPoolExecutor(max(1, len(plan) - 1)) as pool:
        others = [pool.submit(lane, steps) for steps in plan[1:]]
        try:
            passed = lane(plan[0]) if plan else True
            return all([other.result() for other in others]) and passed
        except BaseException:
            interrupts.stop_all()
            futures.wait(others)
            raise
