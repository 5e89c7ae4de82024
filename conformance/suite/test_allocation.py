"""Scheduling and allocation of DRA-backed extended resources (spec §3.3; ALLOC-*, NEG-4).

The headline: a pod written the usual way (`nvidia.com/gpu: 2` for the default profile) runs
with two devices of the driver, through a special claim the scheduler creates for it.
"""

from __future__ import annotations

import re
import uuid

import pytest

from conformance.catalogue import catalogue
from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import (
    CLAIM_LIMIT,
    as_scheduled,
    claim_status,
    claims_owned_by,
    current_version,
    incomplete_at_scheduling,
)
from conformance.lib.objects.workloads import probe_container
from conformance.lib.oracles import scenario
from conformance.suite.conftest import Target
from kube.api import RESOURCE_API


@pytest.mark.requirement(
    "ALLOC-1", "ALLOC-7", "NAME-1", "CLAIM-1", "CLAIM-2", "CLAIM-3", "CLAIM-4", "STATUS-1", "STATUS-2", "CTR-1"
)
def test_pod_asking_for_two_devices_runs_with_them(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    pod = pods.pod("gpu-2", [pods.container("main", p, {p.extended_resource_name: 2})])
    since = current_version(api, namespace)
    served = scenario.run_pod_and_verify(target, check, namespace, pod)
    pod, claim = served.pod, served.claim
    status = claim_status(pod)
    shown = lambda: pods.observed("", pod, claim)  # noqa: E731 - evaluated only on failure

    # The oracle saw all of this once the pod ran; ALLOC-7 says it was so when PodScheduled turned
    # True: the pod at that event and the claims at exactly its resourceVersion.
    with check("ALLOC-7"):
        at_scheduling, claims_then = as_scheduled(api, namespace, "gpu-2", since)
        assert at_scheduling is not None, f"no event of pod gpu-2 with PodScheduled=True since resourceVersion {since}"
        lacking = incomplete_at_scheduling(at_scheduling, claims_then)
        assert not lacking, (
            f"when pod gpu-2 was scheduled (resourceVersion {at_scheduling['metadata']['resourceVersion']}): "
            + "; ".join(lacking)
        )
    with check("STATUS-1", observed=shown):
        owned = [c["metadata"]["name"] for c in claims_owned_by(api, pod)]
        assert owned == [status["resourceClaimName"]], (
            f"the status names {status['resourceClaimName']}, the pod owns {owned}"
        )
    pairs = sorted((m["containerName"], m["resourceName"]) for m in status["requestMappings"])
    check.that(
        "STATUS-2",
        pairs == [("main", p.extended_resource_name)],
        f"mappings {pairs}, expected exactly one for container main and {p.extended_resource_name}",
    )
    annotations = claim["metadata"].get("annotations") or {}
    check.that(
        "CLAIM-1",
        "resource.kubernetes.io/pod-claim-name" not in annotations,
        f"the special claim carries the pod-claim-name annotation: {annotations}",
    )
    owner = (claim["metadata"].get("ownerReferences") or [{}])[0]
    # blockOwnerDeletion was set in 1.34 only (BUG-8, removed by PR #134956 in 1.35).
    if target.minor in catalogue().bug("BUG-8").versions:
        check.that("CLAIM-2", owner.get("blockOwnerDeletion") is True, f"1.34 sets blockOwnerDeletion: {owner}")
    else:
        check.that(
            "CLAIM-2", not owner.get("blockOwnerDeletion"), f"blockOwnerDeletion is set on {target.version}: {owner}"
        )

    with check("ALLOC-1", observed=shown):
        devices = [(r["pool"], r["device"]) for r in claim["status"]["allocation"]["devices"]["results"]]
        assert len(devices) == 2 and len(set(devices)) == 2, f"expected 2 distinct devices, got {devices}"
        nodes = pods.pool_nodes(api, p.driver)
        assert {nodes.get(pool) for pool, _ in devices} == {pod["spec"]["nodeName"]}, (
            f"devices {devices} are not all on the pod's node {pod['spec']['nodeName']} (pools: {nodes})"
        )


@pytest.mark.requirement("ALLOC-2", "NEG-4")
def test_more_devices_than_any_node_has_stays_pending(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    capacity = pods.dra_capacity(api, p.driver)
    assert capacity, f"driver {p.driver} publishes no node-local devices"
    # One more than the largest node has: unsatisfiable however busy the other tests keep the
    # cluster, so this test needs no serial slot.
    want = max([*capacity.values(), *(p.devices_on(n) for n in capacity)]) + 1
    if want > CLAIM_LIMIT:
        check.not_tested(
            "ALLOC-2",
            f"a node publishes {want - 1} devices: asking for more would hit the "
            f"{CLAIM_LIMIT}-device claim limit (ALLOC-3) rather than too few devices",
        )
        return
    api.create(pods.pod("too-many", [pods.container("main", p, {p.extended_resource_name: want})]), namespace)
    with check("ALLOC-2", observed=lambda: pods.unscheduled_state(api, namespace, "too-many")):
        pods.wait_unschedulable(api, namespace, "too-many", timeout=90)
        pods.wait_event(api, namespace, "too-many", "FailedScheduling")
        pod = pods.get(api, namespace, "too-many")
        assert claims_owned_by(api, pod) == [], "a claim exists for the unscheduled pod"
        assert claim_status(pod) is None, "extendedResourceClaimStatus is set on the unscheduled pod"
    pods.check_stays_unscheduled(api, check, namespace, "too-many", "NEG-4", duration=15)


def _mentions_claim_limit(message: str) -> bool:
    """The allocator's refusal names the limit (e.g. "... exceeds the claim limit of 32"); matched
    loosely, since the wording is not part of the spec."""
    return bool(re.search(rf"(?<![/\d]){CLAIM_LIMIT}(?!\d)", message)) and "limit" in message.lower()


@pytest.mark.requirement("ALLOC-3", "NEG-4")
def test_more_than_32_devices_stays_pending(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    capacity = pods.dra_capacity(api, p.driver)
    large = sorted((n for n, count in capacity.items() if count > CLAIM_LIMIT), key=capacity.get, reverse=True)
    if not large:
        check.not_tested(
            "ALLOC-3",
            f"driver {p.driver}'s ResourceSlices show at most {max(capacity.values(), default=0)} "
            f"devices per node: no node publishes more than {CLAIM_LIMIT} devices, so the "
            f"{CLAIM_LIMIT}-device limit cannot be told apart from too few devices",
        )
        return
    # On a node that has the devices, only the claim limit can keep the pod Pending.
    api.create(
        pods.pinned(
            pods.pod("over-32", [pods.container("main", p, {p.extended_resource_name: CLAIM_LIMIT + 1})]), large[0]
        ),
        namespace,
    )
    # The limit surfaces as reason SchedulerError on 1.36 and 1.37, not Unschedulable
    # (docs/upstream/alloc-3-scheduler-error.md): any reason will do.
    pods.check_stays_unscheduled(api, check, namespace, "over-32", "NEG-4", duration=15, reason=None)
    with check("ALLOC-3", observed=lambda: pods.unscheduled_state(api, namespace, "over-32")):
        pods.wait_event(api, namespace, "over-32", "FailedScheduling", timeout=30)
        assert pods.is_unscheduled(api, namespace, "over-32", reason=None), (
            f"asking for {CLAIM_LIMIT + 1} devices on {large[0]} ({capacity[large[0]]} devices), the pod is not Pending"
        )
        events = api.list("v1", "Event", namespace, field_selector="involvedObject.name=over-32")
        messages = [e.get("message", "") for e in events if e.get("reason") == "FailedScheduling"]
        messages.append(pods.condition(pods.get(api, namespace, "over-32"), "PodScheduled").get("message", ""))
        assert any(_mentions_claim_limit(m) for m in messages), (
            f"neither the FailedScheduling events nor PodScheduled name the {CLAIM_LIMIT}-device claim limit: {messages}"
        )


def _chunks(total: int, size: int) -> list[int]:
    """`total` split into parts of at most `size`: 70, 32 -> [32, 32, 6]."""
    return [min(size, total - start) for start in range(0, total, size)]


@pytest.mark.serial
@pytest.mark.requirement("ALLOC-1", "ALLOC-2")
def test_full_nodes_keep_a_pod_pending_until_devices_are_freed(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    capacity = pods.dra_capacity(api, p.driver)
    assert capacity, f"driver {p.driver} publishes no node-local devices"
    # Each node filled by pods pinned to it, none asking for more than the claim limit (ALLOC-3),
    # all created before any is waited for (they start side by side).
    names: list[str] = []
    for node, count in sorted(capacity.items()):
        for i, size in enumerate(_chunks(count, CLAIM_LIMIT)):
            names.append(f"filler-{node.rsplit('-', 1)[-1]}-{i}")
            api.create(
                pods.pinned(pods.pod(names[-1], [pods.container("main", p, {p.extended_resource_name: size})]), node),
                namespace,
            )
    fillers: dict[str, tuple[str, list[tuple[str, str]]]] = {}  # pod -> (node, devices)
    for name in names:
        # A prerequisite; generous: devices of pods from earlier tests may still be being released.
        pod = pods.wait_running(api, namespace, name, timeout=300)
        status = claim_status(pod) or {}
        fillers[name] = (
            pod["spec"]["nodeName"],
            pods.claim_devices(api, namespace, status.get("resourceClaimName", "")),
        )
    with check("ALLOC-1"):
        all_devices = [d for _, devs in fillers.values() for d in devs]
        assert len(all_devices) == sum(capacity.values()) == len(set(all_devices)), (
            f"fillers hold {len(all_devices)} devices ({len(set(all_devices))} distinct), nodes have {capacity}: {fillers}"
        )
        nodes = pods.pool_nodes(api, p.driver)
        strays = {
            name: devs for name, (node, devs) in fillers.items() if {nodes.get(pool) for pool, _ in devs} != {node}
        }
        assert not strays, f"fillers got devices of another node than their own: {strays} (pools: {nodes})"

    api.create(pods.pod("extra", [pods.container("main", p, {p.extended_resource_name: 1})]), namespace)
    pods.check_stays_unscheduled(api, check, namespace, "extra", "ALLOC-2", duration=15)

    first = next(iter(fillers))
    freed_node, freed = fillers.pop(first)
    api.delete("v1", "Pod", first, namespace)
    with check("ALLOC-2", stop=True):
        pod = pods.wait_running(api, namespace, "extra", timeout=180)
    served = scenario.verify_served(target, check, pod)
    got = pods.claim_devices(api, namespace, served.claim["metadata"]["name"])
    held = {d for _, devs in fillers.values() for d in devs}
    with check("ALLOC-1"):
        assert pod["spec"]["nodeName"] == freed_node and set(got) <= set(freed) and not set(got) & held, (
            f"extra pod on {pod['spec']['nodeName']} got {got}; freed were {freed} on {freed_node}, "
            f"still held: {sorted(held)}\n{pods.summary(api, namespace, 'extra')}"
        )


@pytest.mark.requirement("ALLOC-6")
def test_own_claim_and_extended_resource_are_allocated_together(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    claim_name = f"own-{uuid.uuid4().hex[:6]}"
    api.create(pods.user_claim(claim_name, p.device_class, count=1), namespace)
    c = pods.container("main", p, {p.extended_resource_name: 1})
    c["resources"]["claims"] = [{"name": "own"}]
    pod = pods.pod("mixed", [c])
    pod["spec"]["resourceClaims"] = [{"name": "own", "resourceClaimName": claim_name}]
    api.create(pod, namespace)
    with check("ALLOC-6", stop=True):
        pod = pods.wait_running(api, namespace, "mixed", timeout=180)
    served = scenario.verify_served(target, check, pod)

    own = api.get(RESOURCE_API, "ResourceClaim", claim_name, namespace)
    shown = lambda: pods.observed("", pod, served.claim) + f"\nown claim status: {(own or {}).get('status')}"  # noqa: E731
    with check("ALLOC-6", observed=shown):
        own_devices = pods.claim_devices(api, namespace, claim_name)
        special_devices = pods.claim_devices(api, namespace, served.claim["metadata"]["name"])
        assert len(own_devices) == 1 and len(special_devices) == 1, (
            f"own claim has {own_devices}, special claim {special_devices}"
        )
        assert not set(own_devices) & set(special_devices), f"the two claims share a device: {own_devices}"
        nodes = pods.pool_nodes(api, p.driver)
        assert {nodes.get(pool) for pool, _ in own_devices + special_devices} == {pod["spec"]["nodeName"]}, (
            f"devices {own_devices + special_devices} are not all on node {pod['spec']['nodeName']} (pools: {nodes})"
        )
        reserved = [
            (r.get("resource"), r.get("uid")) for r in ((own or {}).get("status") or {}).get("reservedFor") or []
        ]
        assert reserved == [("pods", pod["metadata"]["uid"])], f"own claim reservedFor {reserved}"
        seen, both = probe_container(api, p, pod, "main").device_ids, served.seen.get("main", [])
        assert seen == both, f"container main sees {seen}, expected what both claims hold {both}"
