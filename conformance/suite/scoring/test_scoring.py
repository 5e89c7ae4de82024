"""Where pods asking for a DRA-backed name land when scores decide (spec §3.9 SCORE-1, SCORE-2).

Two DRA nodes are made unequal on purpose: one has all its devices but one in use (a seed pod),
the other carries a pod asking for cpu only (ballast). Scoring by devices and scoring by cpu and
memory then point to different nodes, so the node a pod lands on tells what was scored:
- listed among NodeResourcesFit's resources, the name must decide: MostAllocated packs onto the
  seeded node, LeastAllocated spreads to the other one (SCORE-1);
- with the default list (cpu, memory) the name must not count: MostAllocated follows the ballast;
- BalancedAllocation likewise (SCORE-1), for a pod asking for a device and nothing else, and
  preferring the seeded node through NodeAffinity (weight 1; BalancedAllocation outweighs it):
  with the name listed, the seeded node, all its devices in use once the pod is there, is the
  less balanced one, so the pod goes to the other node; with the default list (cpu, memory) the pod
  asks for none of BalancedAllocation's resources, it is not scored, and the preference decides.
  (Not a pod with cpu on a node with or without cpu ballast: since 1.36 BalancedAllocation scores
  how much a pod changes a node's balance, kubernetes/kubernetes#135573, and adding cpu to either
  node changes it by about as much; the scores were 73 and 74 on kind v1.37.2.)
- DynamicResources' own score must give extended resources nothing (SCORE-2): it scores here
  with a weight that outweighs NodeAffinity's, and each pod prefers one of the two nodes through
  NodeAffinity. With DynamicResources' scores equal the preference decides, so each pod lands on
  the node it prefers; a DynamicResources score that favours one node pulls the pods preferring
  the other one to it. (Not a tie broken at random: kube-scheduler 1.35-1.37 sets its random
  tie-breaker only where scheduler extenders scored, so equal scores go to the node whose
  filters finished first, kubernetes/kubernetes#141024. The node with 3 devices beside one with
  36 took 62 % of such ties over eight full runs, and 11 of 12 once.)
The pods pick the suite's scheduler profiles (conftest.py) by name; a kube-scheduler of the
suite's own runs those, so other pods and the cluster's scheduler are unaffected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import own_scheduler, pods
from conformance.lib.scenarios.steps import setup_checks
from conformance.suite.conftest import Target
from conformance.suite.scoring.conftest import (
    BALANCED,
    BALANCED_CPU_MEMORY,
    CPU_MEMORY_ONLY,
    DECIDING_WEIGHT,
    DRA_SCORE_ONLY,
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
)
from kube.api import Api
from kube.waits import WaitTimeout

pytestmark = [pytest.mark.serial, pytest.mark.usefixtures("scoring_scheduler")]
BALLAST_SHARE = 0.25  # of the ballast node's allocatable cpu
BALANCED_WAIT_S = 60  # a scheduler that crashes on the pod never binds it (the wait ends at the crash)
PREFERENCE_ROUNDS = 2  # pods preferring each node
BALANCED_ALLOCATION = "BalancedAllocation"  # in the frames of BUG-12's panic


@dataclass(frozen=True)
class Unequal:
    seeded: str  # all devices but one in use
    ballast: str  # no device in use, a quarter of its cpu requested


def _millicpu(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


@pytest.fixture(scope="module")
def unequal(target: Target, module_namespace: str) -> Unequal:
    api, p = target.api, target.profile
    capacity = pods.dra_capacity(api, p.driver)
    if len(capacity) < 2:
        pytest.skip(
            f"not tested: scoring needs two nodes with devices of {p.driver}, the cluster has {capacity or 'none'}"
        )
    # The node with fewer devices gets the seed: one free device there still means the fuller node.
    seeded, ballast = sorted(capacity, key=lambda n: (capacity[n], n))[:2]
    if capacity[seeded] < 2:
        pytest.skip(f"not tested: node {seeded} publishes {capacity[seeded]} device; scoring needs two")
    setup = setup_checks("making the nodes unequal")
    seed = pods.pinned(
        pods.pod("seed", [pods.container("main", p, {p.extended_resource_name: capacity[seeded] - 1})]), seeded
    )
    cpu = _millicpu(api.get("v1", "Node", ballast)["status"]["allocatable"]["cpu"])
    weight = pods.pinned(pods.pod("ballast", [pods.container("main", p, {}, command=pods.SLEEP)]), ballast)
    weight["spec"]["containers"][0]["resources"] = {"requests": {"cpu": f"{int(cpu * BALLAST_SHARE)}m"}}
    for obj in (seed, weight):
        api.create(obj, module_namespace)
    with setup(p.served_by, stop=True):
        for name in ("seed", "ballast"):
            pods.wait_running(api, module_namespace, name, timeout=180)
    return Unequal(seeded, ballast)


def _landing(
    target: Target,
    namespace: str,
    name: str,
    scheduler: str,
    timeout: float = 120,
    hopeless: Callable[[], str | None] | None = None,
    prefer: str | None = None,
) -> str:
    """The node a pod of `scheduler` asking for one device and nothing else (and preferring node
    `prefer`, if given) is bound to (the pod is gone again after it, so each placement
    starts from the same cluster); `hopeless` as for pods.landing."""
    p = target.profile
    pod = pods.pod(name, [pods.container("main", p, {p.extended_resource_name: 1})])
    if prefer:
        pods.preferring(pod, prefer)
    pod["spec"]["schedulerName"] = scheduler
    return pods.landing(target.api, namespace, pod, timeout=timeout, hopeless=hopeless)["spec"]["nodeName"]


def _scores(target: Target, namespace: str, pod: str) -> str:
    """What decided where `pod` went, for a failure's message."""
    return f"the suite's kube-scheduler scored: {own_scheduler.scores(target.api, namespace, pod)}"


@pytest.mark.requirement("SCORE-1")
def test_listed_name_decides_most_and_least_allocated(
    check: Checks, target: Target, module_namespace: str, unequal: Unequal
) -> None:
    name = target.profile.extended_resource_name
    for pod, scheduler, expected, why in (
        ("packed", MOST_ALLOCATED, unequal.seeded, "MostAllocated packs onto the node whose devices are in use"),
        ("spread", LEAST_ALLOCATED, unequal.ballast, "LeastAllocated spreads to the node with free devices"),
    ):
        with check("SCORE-1"):
            node = _landing(target, module_namespace, pod, scheduler)
            assert node == expected, (
                f"with {name} among NodeResourcesFit's scored resources, {why} ({expected}); "
                f"pod {pod} landed on {node} (the node with cpu ballast is {unequal.ballast}); "
                f"{_scores(target, module_namespace, pod)}"
            )


@pytest.mark.requirement("SCORE-1")
def test_unlisted_name_does_not_count(check: Checks, target: Target, module_namespace: str, unequal: Unequal) -> None:
    name = target.profile.extended_resource_name
    with check("SCORE-1"):
        node = _landing(target, module_namespace, "cpu-memory", CPU_MEMORY_ONLY)
        assert node == unequal.ballast, (
            f"with the default scored resources (cpu, memory), MostAllocated must follow the cpu ballast on "
            f"{unequal.ballast}; pod cpu-memory landed on {node}, where {name}'s devices are in use; "
            f"{_scores(target, module_namespace, 'cpu-memory')}"
        )


@pytest.mark.requirement("SCORE-2")
def test_dynamic_resources_scores_extended_resources_nothing(
    check: Checks, target: Target, module_namespace: str, unequal: Unequal
) -> None:
    state = {unequal.seeded: "all devices but one in use", unequal.ballast: "devices free"}
    landed = []
    for i in range(PREFERENCE_ROUNDS):
        for preferred in (unequal.seeded, unequal.ballast):
            pod = f"prefers-{'seeded' if preferred == unequal.seeded else 'ballast'}-{i}"
            node = _landing(target, module_namespace, pod, DRA_SCORE_ONLY, prefer=preferred)
            landed.append(f"{pod} on {node}")
            with check("SCORE-2"):
                assert node == preferred, (
                    f"with DynamicResources scoring at weight {DECIDING_WEIGHT} and a NodeAffinity preference "
                    f"(weight 1) for {preferred} ({state[preferred]}), pod {pod} landed on {node} ({state[node]}): "
                    f"DynamicResources' score counts the devices; {_scores(target, module_namespace, pod)}"
                )
    check.observe("SCORE-2", "; ".join(landed))


def _ends(api: Api, namespace: str) -> int:
    """How often the suite's kube-scheduler container has ended: its restarts, plus one while it is down."""
    status = own_scheduler.container_status(api, namespace)
    return status.get("restartCount", 0) + (0 if "running" in (status.get("state") or {}) else 1)


def _in_balanced_allocation(panic: str | None) -> bool:
    """Whether `panic` (from own_scheduler.panic) crashed in the BalancedAllocation plugin's frames."""
    return panic is not None and BALANCED_ALLOCATION in panic


def _crashed_in_balanced_allocation(api: Api, namespace: str) -> Callable[[], str | None]:
    """A probe: the panic in BalancedAllocation that ended the suite's kube-scheduler since the
    probe was made, or None. (A scheduler that ended otherwise, or has not ended, may still bind
    the pod.)"""
    before = _ends(api, namespace)

    def probe() -> str | None:
        if _ends(api, namespace) == before:
            return None
        panic = own_scheduler.panic(api, namespace, BALANCED_ALLOCATION)
        return panic if _in_balanced_allocation(panic) else None

    return probe


@pytest.mark.requirement("SCORE-1")
def test_balanced_allocation_balances_the_listed_name(
    check: Checks, target: Target, module_namespace: str, unequal: Unequal
) -> None:
    """Last in the module: the kube-scheduler of BUG-12 crashes on the pod whose name it scores."""
    api, name = target.api, target.profile.extended_resource_name
    # The default list first: BUG-12's scheduler crashes on the other pod, and its restarts crash
    # again while that pod waits.
    for pod, scheduler, expected, why in (
        (
            "balanced-cpu-memory",
            BALANCED_CPU_MEMORY,
            unequal.seeded,
            f"with the default list (cpu, memory), {name} must not count: a pod asking for none of cpu and "
            f"memory is not scored, and its preference for the seeded node decides",
        ),
        (
            "balanced",
            BALANCED,
            unequal.ballast,
            f"with {name} listed, the seeded node, all its devices in use with the pod, is the less balanced "
            f"one (BalancedAllocation at weight {DECIDING_WEIGHT} outweighs the pod's preference for it)",
        ),
    ):
        try:
            node = _landing(
                target,
                module_namespace,
                pod,
                scheduler,
                timeout=BALANCED_WAIT_S,
                hopeless=_crashed_in_balanced_allocation(api, module_namespace),
                prefer=unequal.seeded,
            )
        except (WaitTimeout, pods.Abandoned) as err:
            panic = own_scheduler.panic(api, module_namespace, BALANCED_ALLOCATION)
            api.delete("v1", "Pod", pod, module_namespace)  # while it waits, a crashing scheduler crashes again
            if not _in_balanced_allocation(panic):
                check.that(
                    "SCORE-1",
                    False,
                    f"BalancedAllocation: {err}" + (f"; kube-scheduler: {panic}" if panic else ""),
                )
            else:
                check.known_bug(
                    "SCORE-1",
                    "BUG-12",
                    target.minor,
                    f"kube-scheduler crashed scoring pod {pod} with BalancedAllocation ({why}); the pod "
                    f"stayed unbound: {panic}",
                )
            continue
        with check("SCORE-1"):
            assert node == expected, (
                f"BalancedAllocation: {why}, so pod {pod} should land on {expected}; it landed on {node} "
                f"(seeded: {unequal.seeded}, ballast: {unequal.ballast}); {_scores(target, module_namespace, pod)}"
            )
