"""Scheduling and allocation of DRA-backed extended resources (spec §3.3; ALLOC-*, NEG-4).

The headline: a pod written the usual way (`nvidia.com/gpu: 2` for the default profile) runs
with two devices of the driver, through a special claim the scheduler creates for it.
"""
from __future__ import annotations

import uuid

import pytest

from conformance.lib import pods, scenario
from conformance.lib.special_claim import FINALIZER, claim_status, claims_owned_by
from conformance.suite.conftest import Target

RESOURCE = "resource.k8s.io/v1"


@pytest.mark.requirement("ALLOC-1", "ALLOC-7", "NAME-1", "CLAIM-1", "CLAIM-2", "CLAIM-3", "CLAIM-4",
                         "STATUS-1", "STATUS-2", "CTR-1")
def test_pod_asking_for_two_devices_runs_with_them(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    pod = pods.pod("gpu-2", [pods.container("main", p.workload_image, {p.extended_resource_name: 2})])
    served = scenario.run_pod_and_verify(target, namespace, pod)
    pod, claim = served.pod, served.claim
    summary = pods.summary(api, namespace, "gpu-2")

    assert pods.condition(pod, "PodScheduled").get("status") == "True", f"[ALLOC-7] pod is Running but not PodScheduled: {summary}"
    status = claim_status(pod)
    assert claim["metadata"]["name"] == status["resourceClaimName"], f"[STATUS-1] claim name differs from status: {summary}"
    assert [(m["containerName"], m["resourceName"]) for m in status["requestMappings"]] == [("main", p.extended_resource_name)], \
        f"[STATUS-2] expected exactly one mapping for container main and {p.extended_resource_name}: {summary}"
    assert "resource.kubernetes.io/pod-claim-name" not in (claim["metadata"].get("annotations") or {}), \
        f"[CLAIM-1] special claim carries the pod-claim-name annotation: {claim['metadata'].get('annotations')}"
    owner = (claim["metadata"].get("ownerReferences") or [{}])[0]
    # blockOwnerDeletion was set in 1.34 only (BUG-8, removed by PR #134956 in 1.35).
    if target.minor <= (1, 34):
        assert owner.get("blockOwnerDeletion") is True, f"[CLAIM-2] 1.34 sets blockOwnerDeletion: {owner}"
    else:
        assert not owner.get("blockOwnerDeletion"), f"[CLAIM-2] blockOwnerDeletion is set on {target.version}: {owner}"
    assert FINALIZER in (claim["metadata"].get("finalizers") or []), f"[ALLOC-7] finalizers {claim['metadata'].get('finalizers')}"

    devices = [(r["pool"], r["device"]) for r in claim["status"]["allocation"]["devices"]["results"]]
    assert len(devices) == 2 and len(set(devices)) == 2, f"[ALLOC-1] expected 2 distinct devices, got {devices}"
    nodes = pods.pool_nodes(api, p.driver)
    assert {nodes.get(pool) for pool, _ in devices} == {pod["spec"]["nodeName"]}, \
        f"[ALLOC-1] devices {devices} are not all on the pod's node {pod['spec']['nodeName']} (pools: {nodes})"
    assert len(served.seen["main"]) == 2, f"[CTR-1] container main should see 2 devices: {served.seen}"


@pytest.mark.requirement("ALLOC-2", "NEG-4")
def test_more_devices_than_any_node_has_stays_pending(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    capacity = pods.dra_capacity(api, p.driver)
    assert capacity, f"[ALLOC-2] driver {p.driver} publishes no node-local devices"
    # One more than the largest node has: unsatisfiable however busy the other tests keep the
    # cluster (so this test needs no serial slot), and far below the 32-device claim limit.
    want = max([*capacity.values(), p.devices_per_node]) + 1
    api.create(pods.pod("too-many", [pods.container("main", p.workload_image, {p.extended_resource_name: want})]), namespace)
    with pods.requirement("ALLOC-2"):
        pods.wait_unschedulable(api, namespace, "too-many", timeout=90)
        pods.wait_event(api, namespace, "too-many", "FailedScheduling")
    pods.assert_stays_unscheduled(api, namespace, "too-many", "NEG-4", duration=15)
    pod = pods.get(api, namespace, "too-many")
    assert claims_owned_by(api, pod) == [], f"[ALLOC-2] a claim exists for the unscheduled pod: {pods.unscheduled_state(api, namespace, 'too-many')}"
    assert claim_status(pod) is None, f"[ALLOC-2] status set on an unscheduled pod: {pods.summary(api, namespace, 'too-many')}"


@pytest.mark.requirement("ALLOC-3", "NEG-4")
def test_more_than_32_devices_stays_pending(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    api.create(pods.pod("over-32", [pods.container("main", p.workload_image, {p.extended_resource_name: 33})]), namespace)
    with pods.requirement("ALLOC-3"):
        pods.wait_event(api, namespace, "over-32", "FailedScheduling", timeout=90)
    # The claim limit is reported by the allocator; depending on the version that may surface as
    # reason Unschedulable or SchedulerError, so only PodScheduled=False is required here.
    pods.assert_stays_unscheduled(api, namespace, "over-32", "ALLOC-3", duration=15, reason=None)


@pytest.mark.serial
@pytest.mark.requirement("ALLOC-1", "ALLOC-2")
def test_full_nodes_keep_a_pod_pending_until_devices_are_freed(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    capacity = pods.dra_capacity(api, p.driver)
    assert capacity, f"[ALLOC-1] driver {p.driver} publishes no node-local devices"
    fillers: dict[str, tuple[str, list[tuple[str, str]]]] = {}  # pod -> (node, devices)
    # Largest node first, so each filler can only fit on a node nobody else uses.
    for i, count in enumerate(sorted(capacity.values(), reverse=True)):
        name = f"filler-{i}"
        api.create(pods.pod(name, [pods.container("main", p.workload_image, {p.extended_resource_name: count})]), namespace)
        # Generous: devices of pods from earlier tests may still be in the middle of being released.
        with pods.requirement("ALLOC-1"):
            pod = pods.wait_running(api, namespace, name, timeout=300)
        status = claim_status(pod) or {}
        fillers[name] = (pod["spec"]["nodeName"], pods.claim_devices(api, namespace, status.get("resourceClaimName", "")))
    nodes = [node for node, _ in fillers.values()]
    assert len(set(nodes)) == len(nodes), f"[ALLOC-1] two node-filling pods share a node: {fillers}"
    all_devices = [d for _, devs in fillers.values() for d in devs]
    assert len(all_devices) == sum(capacity.values()) == len(set(all_devices)), \
        f"[ALLOC-1] fillers hold {len(all_devices)} devices ({len(set(all_devices))} distinct), nodes have {capacity}: {fillers}"

    api.create(pods.pod("extra", [pods.container("main", p.workload_image, {p.extended_resource_name: 1})]), namespace)
    pods.assert_stays_unscheduled(api, namespace, "extra", "ALLOC-2", duration=15)

    freed_node, freed = fillers.pop("filler-0")
    api.delete("v1", "Pod", "filler-0", namespace)
    with pods.requirement("ALLOC-2"):
        pod = pods.wait_running(api, namespace, "extra", timeout=180)
    served = scenario.verify_served(target, pod)
    got = pods.claim_devices(api, namespace, served.claim["metadata"]["name"])
    held = {d for _, devs in fillers.values() for d in devs}
    assert pod["spec"]["nodeName"] == freed_node and set(got) <= set(freed) and not set(got) & held, \
        (f"[ALLOC-1] extra pod on {pod['spec']['nodeName']} got {got}; freed were {freed} on {freed_node}, "
         f"still held: {sorted(held)}\n{pods.summary(api, namespace, 'extra')}")


@pytest.mark.requirement("ALLOC-6")
def test_own_claim_and_extended_resource_are_allocated_together(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    claim_name = f"own-{uuid.uuid4().hex[:6]}"
    api.create(pods.user_claim(claim_name, p.device_class, count=1), namespace)
    c = pods.container("main", p.workload_image, {p.extended_resource_name: 1})
    c["resources"]["claims"] = [{"name": "own"}]
    pod = pods.pod("mixed", [c])
    pod["spec"]["resourceClaims"] = [{"name": "own", "resourceClaimName": claim_name}]
    api.create(pod, namespace)
    with pods.requirement("ALLOC-6"):
        pod = pods.wait_running(api, namespace, "mixed", timeout=180)
    served = scenario.verify_served(target, pod)

    own = api.get(RESOURCE, "ResourceClaim", claim_name, namespace)
    own_devices = pods.claim_devices(api, namespace, claim_name)
    special_devices = pods.claim_devices(api, namespace, served.claim["metadata"]["name"])
    nodes = pods.pool_nodes(api, p.driver)
    shown = pods.observed("", pod, served.claim) + f"\nown claim status: {(own or {}).get('status')}"
    assert len(own_devices) == 1 and len(special_devices) == 1, f"[ALLOC-6] own claim has {own_devices}, special claim {special_devices}{shown}"
    assert not set(own_devices) & set(special_devices), f"[ALLOC-6] the two claims share a device: {own_devices}{shown}"
    assert {nodes.get(pool) for pool, _ in own_devices + special_devices} == {pod["spec"]["nodeName"]}, \
        f"[ALLOC-6] devices {own_devices + special_devices} are not all on node {pod['spec']['nodeName']} (pools: {nodes}){shown}"
    reserved = [(r.get("resource"), r.get("uid")) for r in ((own or {}).get("status") or {}).get("reservedFor") or []]
    assert reserved == [("pods", pod["metadata"]["uid"])], f"[ALLOC-6] own claim reservedFor {reserved}{shown}"
    assert len(served.seen["main"]) == 2, f"[ALLOC-6] container main should see both devices, expected {served.seen}{shown}"
