"""The special ResourceClaim's life: one per pod, garbage collection, release on completion,
an ordinary claim to the API, and a stable name in the pod status (spec §3.3-3.5)."""

from __future__ import annotations

import pytest

from conformance.catalogue import requirement
from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.quota import CLAIM_COUNT, initialised, quota, settle
from conformance.lib.objects.special_claim import (
    allocated_devices,
    claim_status,
    claims_owned_by,
    plain_init_containers,
    request_naming,
    special_claim,
)
from conformance.lib.objects.workloads import probe_container
from conformance.lib.oracles import driver_state, scenario
from conformance.suite.conftest import Target, lone_device
from kube.api import RESOURCE_API, Obj
from kube.waits import holds_for


@pytest.mark.requirement("ALLOC-4", "ALLOC-5")
def test_one_special_claim_per_pod_with_several_containers(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    ern = p.extended_resource_name
    init = [pods.container("init", p, {ern: 1}, command=p.probe.shell)]
    containers = [pods.container(n, p, {ern: 1}) for n in ("a", "b", "c")]
    served = scenario.run_pod_and_verify(
        target, check, namespace, pods.pod("several", containers, init=init), exact_counts=False
    )
    pod, claim = served.pod, served.claim
    check.observe("ALLOC-5", request_naming(pod, claim))
    if not requirement("ALLOC-4").applies_to(target.minor, gate_enabled=True)[0]:
        return  # 1.34: every init container gets requests of its own (the summary says so from the catalogue)
    with check("ALLOC-4", observed=lambda: pods.observed("", pod, claim)):
        owned = [c["metadata"]["name"] for c in claims_owned_by(api, pod)]
        assert owned == [claim["metadata"]["name"]], (
            f"claims owned by the pod: {owned}, the status names {claim['metadata']['name']}"
        )
        mappings = claim_status(pod)["requestMappings"]
        long_lived = sorted(
            (m["containerName"], m["requestName"])
            for m in mappings
            if m["containerName"] not in plain_init_containers(pod)
        )
        own = [r for _, r in long_lived]
        assert [c for c, _ in long_lived] == ["a", "b", "c"] and len(set(own)) == 3, (
            f"regular containers a, b, c should each be mapped to one request of their own: {long_lived}"
        )
        requests = [r["name"] for r in claim["spec"]["devices"]["requests"]]
        extra = sorted(set(requests) - set(own))
        assert len(extra) <= 1, f"more than one request for the init containers: {extra}"
        # init(1) comes before three long-lived containers with one device each: no shortfall, so it
        # reuses a later container's device and needs no request of its own (CTR-3 arithmetic).
        devices = pods.claim_devices(api, namespace, claim["metadata"]["name"])
        assert len(devices) == 3, f"the pod should use 3 devices in total, the claim holds {devices}"


@pytest.mark.requirement("CLAIM-5", "KUBELET-1")
def test_deleting_the_pod_deletes_its_claim(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    served = scenario.run_pod_and_verify(
        target, check, namespace, pods.pod("doomed", [pods.container("main", p, {p.extended_resource_name: 1})])
    )
    claim_name, claim_uid = served.claim["metadata"]["name"], served.claim["metadata"]["uid"]
    held = driver_state.held_before(api, p, served.pod["spec"]["nodeName"], [claim_uid])
    api.delete("v1", "Pod", "doomed", namespace)
    pods.wait_gone(api, "v1", "Pod", "doomed", namespace, timeout=120)  # a prerequisite (the kubelet stops it)
    with check("CLAIM-5"):
        pods.wait_gone(api, RESOURCE_API, "ResourceClaim", claim_name, namespace, timeout=180)
    # KUBELET-1's second half: the driver was asked to unprepare the claim, and did.
    driver_state.check_released(api, p, check, "KUBELET-1", held)


@pytest.mark.requirement("CLAIM-6")
@pytest.mark.parametrize("outcome", ["Succeeded", "Failed"])
def test_finished_pod_releases_its_claim(target: Target, check: Checks, namespace: str, outcome: str) -> None:
    api, p = target.api, target.profile
    code = 0 if outcome == "Succeeded" else 1
    name = f"finishes-{outcome.lower()}"
    c = pods.container("main", p, {p.extended_resource_name: 1}, command=f"{p.probe.shell}; exit {code}")
    api.create(pods.pod(name, [c], restart="Never"), namespace)
    # Prerequisites: the pod finished as intended, with its device.
    pod = pods.wait_phase(api, namespace, name, ("Succeeded", "Failed"), timeout=180)
    assert pod["status"]["phase"] == outcome, (
        f"pod ended {pod['status']['phase']}, expected {outcome}: {pods.summary(api, namespace, name)}"
    )
    status = claim_status(pod)
    with check("STATUS-1", stop=True):
        assert status, f"the finished pod never named a special claim: {pods.summary(api, namespace, name)}"
    seen = probe_container(api, p, pod, "main")
    assert len(seen.device_ids) == 1, f"the pod's container should have seen one device: {seen.raw.strip()[:400]!r}"
    with check("CLAIM-6"):
        pods.wait_gone(api, RESOURCE_API, "ResourceClaim", status["resourceClaimName"], namespace, timeout=120)
        still = api.get("v1", "Pod", name, namespace)
        assert (
            still is not None
            and still["metadata"]["uid"] == pod["metadata"]["uid"]
            and still["status"]["phase"] == outcome
        ), f"the claim is gone, but the pod object should remain, {outcome}: {pods.summary(api, namespace, name)}"


@pytest.mark.serial  # it takes the one device its class selects: tests running alongside could hold it
@pytest.mark.requirement("CLAIM-6")
def test_a_finished_pod_s_device_serves_the_next_pod(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    """Released means free to allocate: with a class that selects one device of the whole
    cluster, a pod asking for it after the first one finished must get that very device (a claim
    gone from the API while the scheduler or the driver still counts its device passes the test above)."""
    api, p = target.api, target.profile
    lone = lone_device(target, request, "released")
    device, name = lone.device, lone.resource
    c = pods.container("main", p, {name: 1}, command=f"{p.probe.shell}; exit 0")
    api.create(pods.pod("first", [c]), namespace)
    first = pods.wait_phase(api, namespace, "first", ("Succeeded", "Failed"), timeout=180)
    status = claim_status(first)
    assert first["status"]["phase"] == "Succeeded" and status, (
        f"the first pod should have finished with a special claim: {pods.summary(api, namespace, 'first')}"
    )
    with check("CLAIM-6", stop=True):
        pods.wait_gone(api, RESOURCE_API, "ResourceClaim", status["resourceClaimName"], namespace, timeout=120)
    api.create(pods.pod("next", [pods.container("main", p, {name: 1})]), namespace)
    with check("CLAIM-6"):
        after = pods.wait_running(api, namespace, "next", timeout=120)
        claim = special_claim(api, after)
        got = allocated_devices(claim or {})
        assert got == [device], pods.observed(
            f"the only device the class selects, {device}, should serve the next pod; allocated {got}", after, claim
        )


@pytest.mark.requirement("CLAIM-7")
def test_special_claim_is_an_ordinary_resource_claim(target: Target, check: Checks, namespace: str) -> None:
    """Listed and counted as any claim; not among the pod's own claims. (pod.spec.resourceClaims
    is the test's own, immutable write: only the status can show the claim where it must not be.)"""
    api, p = target.api, target.profile
    api.create(quota("claims", [CLAIM_COUNT]), namespace)
    initialised(api, namespace, "claims")
    served = scenario.run_pod_and_verify(
        target, check, namespace, pods.pod("ordinary", [pods.container("main", p, {p.extended_resource_name: 1})])
    )
    claim_name = served.claim["metadata"]["name"]
    pod = pods.get(api, namespace, "ordinary")
    with check("CLAIM-7", observed=lambda: pods.observed("", pod, served.claim)):
        listed = [c["metadata"]["name"] for c in api.list(RESOURCE_API, "ResourceClaim", namespace)]
        assert listed == [claim_name], (
            f"the namespace's ResourceClaim list should be the special claim {claim_name}: {listed}"
        )
        counted = settle(api, namespace, "claims", {CLAIM_COUNT: 1})
        assert counted.get(CLAIM_COUNT) == 1, f"{CLAIM_COUNT} should count the special claim: quota used {counted}"
        assert not (pod.get("status") or {}).get("resourceClaimStatuses"), (
            f"pod.status.resourceClaimStatuses is {pod['status'].get('resourceClaimStatuses')}"
        )


def _container_status(pod: Obj, container: str) -> Obj | None:
    return next(
        (st for st in (pod.get("status") or {}).get("containerStatuses") or [] if st["name"] == container), None
    )


@pytest.mark.requirement("STATUS-4")
def test_status_names_the_same_claim_for_the_pods_life(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    # A container that keeps exiting makes the kubelet write the pod status while we watch, so a
    # status write that drops or changes the field shows up.
    blinker = pods.container("blinker", p, {}, command="sleep 4; exit 1")
    api.create(
        pods.pod("steady", [pods.container("main", p, {p.extended_resource_name: 1}), blinker], restart="Always"),
        namespace,
    )
    with check(p.served_by, stop=True):
        pod = pods.wait_running(api, namespace, "steady", timeout=180)
    first, claim = claim_status(pod), special_claim(api, pod)
    with check("STATUS-1", stop=True):
        assert first and claim, (
            f"the running pod names no existing special claim: {pods.summary(api, namespace, 'steady')}"
        )
    blinking = _container_status(pod, "blinker")

    def unchanged() -> bool:
        now = claim_status(pods.get(api, namespace, "steady"))
        named = api.get(RESOURCE_API, "ResourceClaim", first["resourceClaimName"], namespace)
        return now == first and named is not None and named["metadata"]["uid"] == claim["metadata"]["uid"]

    try:
        holds_for(
            unchanged,
            duration=20,
            interval=2,
            what=f"extendedResourceClaimStatus to stay {first} (claim uid {claim['metadata']['uid']})",
            describe=lambda: pods.summary(api, namespace, "steady"),
        )
        changed = ""
    except AssertionError as err:
        changed = str(err)
    after = _container_status(pods.get(api, namespace, "steady"), "blinker")
    # A change is a failure whatever caused it; holding proves something only across a status write.
    assert changed or after != blinking, (
        f"prerequisite: the kubelet wrote no status while we watched (blinker: {after})"
    )
    check.that("STATUS-4", not changed, changed)
