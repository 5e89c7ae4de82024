"""Disruptions made through the API, as on any cluster (a vendor's, with --disruptive; always on
kind): the driver's pod deleted while it prepares claims (FAULT-1), a node drained of the suite's
pods and uncordoned (FAULT-7), and, where the profile grants node access (a privileged pod in the
host's namespaces), the node's kubelet restarted (FAULT-2) and, with a reboot command, the
machine (FAULT-5). Each with pods served before and pods arriving around it, judged by the same
convergence oracle as the fault stage (conformance/lib/oracles/recovery.py).

Only the suite's own pods are evicted ("drained"): on a vendor's cluster nothing else on the node
is touched."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import RESOURCE_API
from conformance.lib.oracles import recovery
from conformance.lib.scenarios import node_access
from conformance.lib.scenarios.disruption import (
    ARRIVING,
    RUNNING,
    arrive,
    driver_killed_while_preparing,
    kubelet_restarted,
    machine_restarted,
    start_served,
)
from conformance.suite.conftest import Target
from kube.api import Obj

pytestmark = pytest.mark.serial
PODS_AT_ONCE = len(RUNNING) + len(ARRIVING)  # one device each


@pytest.fixture(autouse=True)
def _asked(request: pytest.FixtureRequest) -> None:
    if not request.config.getoption("--disruptive"):
        pytest.skip(
            "not tested: the disruptive tests delete the driver's pod on a node and drain a node of the "
            "suite's pods; run with --disruptive"
        )


@pytest.fixture
def node(target: Target) -> str:
    """The node with the most devices of the driver: every pod of these tests is kept to it."""
    capacity = pods.dra_capacity(target.api, target.profile.driver)
    fullest = max(sorted(capacity), key=capacity.get, default=None)
    if fullest is None or capacity[fullest] < PODS_AT_ONCE:
        pytest.skip(
            f"not tested: these tests need a node with {PODS_AT_ONCE} devices of {target.profile.driver}, "
            f"the cluster has {capacity or 'none'}"
        )
    return fullest


@pytest.mark.requirement("FAULT-1")
def test_pods_are_served_after_the_driver_pod_is_deleted_while_preparing(
    target: Target, check: Checks, namespace: str, node: str, held_at_start: dict[str, frozenset[str]]
) -> None:
    pods_api = target.api.resource("v1", "Pod")

    @contextmanager
    def deleted_at_once(drivers: list[Obj]) -> Iterator[None]:
        # Through the API nothing can hold the driver: the deletion is sent the moment a pod is bound.
        yield
        for d in drivers:
            pods_api.delete(
                name=d["metadata"]["name"], namespace=d["metadata"]["namespace"], body={"gracePeriodSeconds": 0}
            )

    driver_killed_while_preparing(
        target, check, namespace, node, deleted_at_once, "pod was deleted (grace period 0)", held_at_start
    )


@pytest.mark.requirement("FAULT-2")
def test_pods_keep_their_devices_when_the_kubelet_restarts(
    target: Target, check: Checks, namespace: str, node: str, held_at_start: dict[str, frozenset[str]]
) -> None:
    if target.profile.node_access is None:
        pytest.skip(f"not tested: {node_access.NO_CAPABILITY}")
    kubelet_restarted(
        target,
        check,
        namespace,
        node,
        lambda: node_access.restart_kubelet(target.api, target.profile, node),
        held_at_start,
    )


@pytest.mark.requirement("FAULT-5")
def test_pods_run_again_with_the_same_devices_after_the_machine_restarts(
    target: Target, check: Checks, namespace: str, node: str, held_at_start: dict[str, frozenset[str]]
) -> None:
    access = target.profile.node_access
    if access is None or not access.reboot:
        pytest.skip(f"not tested: {node_access.NO_REBOOT if access else node_access.NO_CAPABILITY}")
    machine_restarted(
        target, check, namespace, node, lambda: node_access.reboot(target.api, target.profile, node), held_at_start
    )


@pytest.mark.requirement("FAULT-7")
def test_pods_are_served_after_their_node_is_drained_and_uncordoned(
    target: Target, check: Checks, namespace: str, node: str, held_at_start: dict[str, frozenset[str]]
) -> None:
    api = target.api
    before = start_served(target, check, "FAULT-7", namespace, node)
    api.cordon(node)
    try:
        for snap in before:
            api.evict(namespace, snap.name)
        with check("FAULT-7"):
            for snap in before:
                pods.wait_gone(api, "v1", "Pod", snap.name, namespace, timeout=120)
                pods.wait_gone(api, RESOURCE_API, "ResourceClaim", snap.claim, namespace, timeout=120)
        arrive(target, namespace, node, ARRIVING[:1])
        pods.check_stays_unscheduled(api, check, namespace, ARRIVING[0], "FAULT-7", duration=10)
    finally:
        api.cordon(node, False)
    arrive(target, namespace, node, ARRIVING[1:])
    recovery.converged(
        target,
        check,
        "FAULT-7",
        namespace,
        ARRIVING,
        after=f"{node} was drained and uncordoned",
        held_at_start=held_at_start,
    )
