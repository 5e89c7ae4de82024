"""A higher-priority pod asking for a DRA-backed name whose only device a lower-priority pod
holds (KEP-6). The KEP says nothing of preemption; the scheduler's own rule applies: a victim is
evicted only to make room for the preemptor. Kubernetes 1.35-1.37 do not preempt for DRA devices
at all (the DRA scheduler plugin declares such a pod unresolvable on the node; preemption for
DRA is KEP-5690, not in 1.37.2), so either outcome is allowed and which one happened is shown.
"""

from __future__ import annotations

import uuid

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import allocated_devices, special_claim
from conformance.suite.conftest import Target, lone_device
from kube.api import Api, Obj
from kube.waits import WaitTimeout, wait_for

SCHEDULING_API = "scheduling.k8s.io/v1"
PREEMPTION_WAIT_S = 90  # a preemption needs the victim gone (1 s grace) and its claim released


def _priority_class(api: Api, request: pytest.FixtureRequest, value: int) -> str:
    name = f"kep5004-{value}-{uuid.uuid4().hex[:8]}"
    api.create({"apiVersion": SCHEDULING_API, "kind": "PriorityClass", "metadata": {"name": name}, "value": value})
    if not request.config.getoption("--keep"):
        request.addfinalizer(lambda: api.delete(SCHEDULING_API, "PriorityClass", name))
    return name


def _evicted(pod: Obj | None) -> bool:
    """Gone, terminating, or marked by the scheduler as preempted."""
    if pod is None or pod["metadata"].get("deletionTimestamp"):
        return True
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "DisruptionTarget" and c.get("status") == "True" for c in conditions)


@pytest.mark.serial  # it takes the one device its class selects: tests running alongside could hold it
@pytest.mark.requirement("KEP-6")
def test_a_victim_is_evicted_only_to_make_room_for_the_preemptor(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    api, p = target.api, target.profile
    lone = lone_device(target, request, "contested")
    device, name = lone.device, lone.resource
    low, high = _priority_class(api, request, 1000), _priority_class(api, request, 1000000)

    def asking(pod_name: str, priority_class: str) -> Obj:
        pod = pods.pod(pod_name, [pods.container("main", p, {name: 1})])
        pod["spec"]["priorityClassName"] = priority_class
        return pod

    api.create(asking("victim", low), namespace)
    victim = pods.wait_running(api, namespace, "victim", timeout=180)
    assert allocated_devices(special_claim(api, victim) or {}) == [device], (
        f"the victim should hold the class's only device {device}: {pods.summary(api, namespace, 'victim')}"
    )
    api.create(asking("preemptor", high), namespace)

    def decided() -> bool:
        # Running, or turned down with no node nominated and the victim untouched: the scheduler
        # tries preemption in the very cycle that finds the pod unschedulable and nominates a
        # node when it evicts, so that cycle's answer stands for as long as nothing changes.
        preemptor, victim_now = pods.get(api, namespace, "preemptor"), api.get("v1", "Pod", "victim", namespace)
        status = preemptor.get("status") or {}
        refused = (
            pods.condition(preemptor, "PodScheduled").get("reason") == "Unschedulable"
            and not status.get("nominatedNodeName")
            and not _evicted(victim_now)
        )
        return status.get("phase") == "Running" or refused

    try:
        wait_for(decided, timeout=PREEMPTION_WAIT_S, what="the preemptor to run or be turned down")
    except WaitTimeout:
        pass  # judged below on what is seen then
    preemptor, victim_now = pods.get(api, namespace, "preemptor"), api.get("v1", "Pod", "victim", namespace)
    state = "\n".join(pods.summary(api, namespace, n) for n in ("victim", "preemptor"))
    with check("KEP-6"):
        if (preemptor.get("status") or {}).get("phase") == "Running":
            got = allocated_devices(special_claim(api, preemptor) or {})
            held = allocated_devices(special_claim(api, victim_now) or {}) if victim_now else []
            assert got == [device] and device not in held, (
                f"the preemptor runs: it should hold {device} and the victim no longer (preemptor {got}, "
                f"victim {held})\n{state}"
            )
        else:
            assert not _evicted(victim_now), (
                f"the victim was evicted, yet the preemptor still cannot be placed after {PREEMPTION_WAIT_S} s\n{state}"
            )
            kept = allocated_devices(special_claim(api, victim_now) or {}) if victim_now else []
            assert kept == [device] and not preemptor["spec"].get("nodeName"), (
                f"without preemption the victim should keep {device} (keeps {kept}) and the preemptor stay "
                f"unplaced\n{state}"
            )
