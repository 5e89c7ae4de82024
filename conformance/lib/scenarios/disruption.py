"""The scenario around a disruption (a component killed, a node drained, a driver pod deleted):
pods served before it, pods arriving around it, all on one node that has the driver's devices.
The oracle that judges what follows is conformance/lib/oracles/recovery.py.

One device per pod; at most six pods at a time stay within a node's eight devices while the
previous test's namespace is still being deleted."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import allocated_devices
from conformance.lib.oracles import driver_state, recovery, scenario, survivors
from conformance.lib.setup import driver_setup
from conformance.lib.target import Target
from kube.api import Api, Obj
from kube.waits import wait_for

RUNNING = ["running-1", "running-2"]
ARRIVING = ["arriving-1", "arriving-2", "arriving-3"]


def driver_pods_on(target: Target, node: str) -> list[Obj]:
    """The driver's running pods on `node` (the profile's driverPods namespace and selector)."""
    p = target.profile
    if not (p.driver_namespace and p.driver_selector):
        pytest.fail(
            f"profile {p.name} names no driverPods (namespace and selector): the driver's pods cannot be found",
            pytrace=False,
        )
    found = [
        d
        for d in target.api.list(
            "v1", "Pod", p.driver_namespace, label_selector=p.driver_selector, field_selector=f"spec.nodeName={node}"
        )
        if (d.get("status") or {}).get("phase") == "Running"
    ]
    assert found, f"precondition: no running driver pod ({p.driver_selector}) on {node}"
    return found


def gpu_pod(target: Target, name: str, node: str, restart: str = "Never") -> Obj:
    p = target.profile
    return pods.pinned(
        pods.pod(name, [pods.container("main", p, {p.extended_resource_name: 1})], restart=restart), node
    )


def start_served(
    target: Target, check: Checks, rid: str, namespace: str, node: str, restart: str = "Never"
) -> list[survivors.Snapshot]:
    """The pods running before the disruption, verified end to end (as `rid`) and remembered."""
    return [
        survivors.snapshot(
            scenario.run_pod_and_verify(target, check, namespace, gpu_pod(target, n, node, restart), as_id=rid)
        )
        for n in RUNNING
    ]


def arrive(target: Target, namespace: str, node: str, names: list[str] = ARRIVING) -> None:
    for name in names:
        target.api.create(gpu_pod(target, name, node), namespace)


def wait_one_bound(api: Api, namespace: str, node: str, names: list[str] = ARRIVING) -> None:
    """Until one of `names` is bound: the kubelet asks the driver to prepare a pod's claims right
    after the pod is bound to its node."""
    wait_for(
        lambda: any((pods.get(api, namespace, n).get("spec") or {}).get("nodeName") for n in names),
        timeout=120,
        interval=0.2,
        what=f"one of {names} bound to {node}",
    )


def in_preparation_window(api: Api, namespace: str, names: list[str] = ARRIVING) -> list[str]:
    """Of `names`, those bound and not yet Running: the kubelet starts a bound pod's containers only
    once its claims are prepared, so these were being prepared (or waiting to be)."""
    return [
        n
        for n in names
        if (q := api.get("v1", "Pod", n, namespace))
        and (q.get("spec") or {}).get("nodeName")
        and (q.get("status") or {}).get("phase") != "Running"
    ]


def check_hit_preparation(check: Checks, rid: str, in_window: list[str], what: str) -> None:
    """`rid`'s situation happened only if pods were in the preparation window when `what` landed;
    otherwise the ID is not tested by this run."""
    if in_window:
        check.observe(rid, f"when {what}, {', '.join(in_window)} were bound and not yet running")
    else:
        check.not_tested(rid, f"{what} after every arriving pod was running: no preparation was in progress")


def kubelet_restarted(
    target: Target,
    check: Checks,
    namespace: str,
    node: str,
    restart: Callable[[], None],
    held_at_start: Mapping[str, frozenset[str]],
) -> None:
    """FAULT-2: pods served, the kubelet of `node` restarted by `restart`, more pods arriving: the
    pods served before keep their containers and devices, and everything converges."""
    before = start_served(target, check, "FAULT-2", namespace, node)
    restart()
    arrive(target, namespace, node)
    after = f"the kubelet of {node} restarted"
    survivors.check_unchanged(target, check, before, "FAULT-2", after)
    recovery.converged(
        target, check, "FAULT-2", namespace, RUNNING + ARRIVING, after=after, held_at_start=held_at_start
    )


def machine_restarted(
    target: Target,
    check: Checks,
    namespace: str,
    node: str,
    restart: Callable[[], None],
    held_at_start: Mapping[str, frozenset[str]],
) -> None:
    """FAULT-5: pods that restart their containers served, `node` restarted by `restart` (every
    process ends; only such pods run again): they run again with the same claims and devices, the
    driver publishes again, pods arriving after are served, and everything converges."""
    before = start_served(target, check, "FAULT-5", namespace, node, restart="Always")
    restart()
    after = f"node {node} restarted"
    recovery.wait_restarted(target, check, "FAULT-5", before, after)
    served = recovery.converged(target, check, "FAULT-5", namespace, RUNNING, after=after, held_at_start=held_at_start)
    with check("FAULT-5"):
        kept = {s.name: (s.claim_uid, s.devices) for s in before}
        now = {s.pod["metadata"]["name"]: (s.claim["metadata"]["uid"], allocated_devices(s.claim)) for s in served}
        assert now == kept, f"after {after}, claims and devices changed: before {kept}, now {now}"
    driver_setup.wait_published(target.api, target.profile)
    arrive(target, namespace, node)
    recovery.converged(
        target, check, "FAULT-5", namespace, RUNNING + ARRIVING, after=after, held_at_start=held_at_start
    )


# How a test ends the driver's pods on a node: entered with those pods before any pod arrives (so
# the end can be aimed, or the driver held so that it cannot finish preparing before it), left
# once an arriving pod is bound; the driver ends on leaving. A driver held must be released also
# when the scenario fails in between.
DriverStop = Callable[[list[Obj]], AbstractContextManager[None]]


def driver_killed_while_preparing(
    target: Target,
    check: Checks,
    namespace: str,
    node: str,
    stop: DriverStop,
    how: str,
    held_at_start: Mapping[str, frozenset[str]],
) -> None:
    """FAULT-1: pods served, more arriving, and the driver's pods on `node` ended by `stop` as soon
    as one arriving pod is bound (its claims being prepared); then the convergence oracle, and
    the pods served before the end deleted: the driver that came back must unprepare claims its
    predecessor prepared (one that kept them in memory only cannot)."""
    api = target.api
    before = start_served(target, check, "FAULT-1", namespace, node)
    with stop(driver_pods_on(target, node)):
        arrive(target, namespace, node)
        wait_one_bound(api, namespace, node)
    check_hit_preparation(check, "FAULT-1", in_preparation_window(api, namespace), f"the driver {how}")
    recovery.converged(
        target,
        check,
        "FAULT-1",
        namespace,
        RUNNING + ARRIVING,
        after=f"the driver on {node} {how} while preparing claims",
        held_at_start=held_at_start,
    )
    held = driver_state.held_before(api, target.profile, node, [snap.claim_uid for snap in before])
    for snap in before:
        api.delete("v1", "Pod", snap.name, namespace)
    with check("FAULT-1"):
        for snap in before:
            pods.wait_gone(api, "v1", "Pod", snap.name, namespace, timeout=120)
    driver_state.check_released(api, target.profile, check, "FAULT-1", held)
