"""The special ResourceClaim's life: one per pod, garbage collection, release on completion,
an ordinary claim to the API, and a stable name in the pod status (spec §3.3-3.5)."""
from __future__ import annotations

import pytest

from conformance.lib import pods, scenario
from conformance.lib.special_claim import claim_status, claims_owned_by
from conformance.lib.waits import holds_for
from conformance.lib.workloads import probe_container
from conformance.suite.conftest import Target

RESOURCE = "resource.k8s.io/v1"


@pytest.mark.requirement("ALLOC-4")
def test_one_special_claim_per_pod_with_several_containers(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    ern = p.extended_resource_name
    init = [pods.container("init", p.workload_image, {ern: 1}, command="fake-gpu-probe")]
    containers = [pods.container(n, p.workload_image, {ern: 1}) for n in ("a", "b", "c")]
    served = scenario.run_pod_and_verify(target, namespace, pods.pod("several", containers, init=init), exact_counts=False)
    pod, claim = served.pod, served.claim
    owned = [c["metadata"]["name"] for c in claims_owned_by(api, pod)]
    shown = pods.observed("", pod, claim)
    assert owned == [claim["metadata"]["name"]], f"[ALLOC-4] claims owned by the pod: {owned}, status names {claim['metadata']['name']}{shown}"
    mappings = claim_status(pod)["requestMappings"]
    long_lived = {m["requestName"] for m in mappings if m["containerName"] in ("a", "b", "c")}
    assert len(long_lived) == 3, f"[ALLOC-4] regular containers a, b, c should each have their own request: {mappings}{shown}"
    requests = [r["name"] for r in claim["spec"]["devices"]["requests"]]
    extra = set(requests) - long_lived
    assert len(extra) <= 1, f"[ALLOC-4] more than one request for the init containers: {sorted(extra)}{shown}"
    # init(1) comes before three long-lived containers with one device each: no shortfall, so it
    # reuses a later container's device and needs no request of its own (CTR-3 arithmetic).
    devices = pods.claim_devices(api, namespace, claim["metadata"]["name"])
    assert len(devices) == 3, f"[ALLOC-4] the pod should use 3 devices in total, the claim holds {devices}{shown}"


@pytest.mark.requirement("CLAIM-5")
def test_deleting_the_pod_deletes_its_claim(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    served = scenario.run_pod_and_verify(target, namespace, pods.pod("doomed", [
        pods.container("main", p.workload_image, {p.extended_resource_name: 1})]))
    claim_name = served.claim["metadata"]["name"]
    api.delete("v1", "Pod", "doomed", namespace)
    with pods.requirement("CLAIM-5"):
        pods.wait_gone(api, "v1", "Pod", "doomed", namespace, timeout=120)
        pods.wait_gone(api, RESOURCE, "ResourceClaim", claim_name, namespace, timeout=180)


@pytest.mark.requirement("CLAIM-6")
@pytest.mark.parametrize("outcome", ["Succeeded", "Failed"])
def test_finished_pod_releases_its_claim(target: Target, namespace: str, outcome: str) -> None:
    api, p = target.api, target.profile
    code = 0 if outcome == "Succeeded" else 1
    name = f"finishes-{outcome.lower()}"
    c = pods.container("main", p.workload_image, {p.extended_resource_name: 1}, command=f"fake-gpu-probe; exit {code}")
    api.create(pods.pod(name, [c], restart="Never"), namespace)
    with pods.requirement("CLAIM-6"):
        pod = pods.wait_phase(api, namespace, name, ("Succeeded", "Failed"), timeout=180)
    assert pod["status"]["phase"] == outcome, f"[CLAIM-6] pod ended {pod['status']['phase']}, expected {outcome}: {pods.summary(api, namespace, name)}"
    status = claim_status(pod)
    assert status, f"[CLAIM-6] the finished pod never named a special claim: {pods.summary(api, namespace, name)}"
    seen = probe_container(api, p, pod, "main")
    assert len(seen.device_ids) == 1, f"[CLAIM-6] the pod's container should have seen one device: {seen.raw.strip()[:400]!r}"
    with pods.requirement("CLAIM-6"):
        pods.wait_gone(api, RESOURCE, "ResourceClaim", status["resourceClaimName"], namespace, timeout=120)
    still = api.get("v1", "Pod", name, namespace)
    assert still is not None and still["metadata"]["uid"] == pod["metadata"]["uid"] and still["status"]["phase"] == outcome, \
        f"[CLAIM-6] the pod object should remain, {outcome}: {pods.summary(api, namespace, name)}"


@pytest.mark.requirement("CLAIM-7")
def test_special_claim_is_an_ordinary_resource_claim(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    served = scenario.run_pod_and_verify(target, namespace, pods.pod("ordinary", [
        pods.container("main", p.workload_image, {p.extended_resource_name: 1})]))
    claim_name = served.claim["metadata"]["name"]
    listed = [c["metadata"]["name"] for c in api.list(RESOURCE, "ResourceClaim", namespace)]
    assert claim_name in listed, f"[CLAIM-7] claim {claim_name} not in the namespace's ResourceClaim list {listed}"
    pod = pods.get(api, namespace, "ordinary")
    shown = pods.observed("", pod, served.claim)
    assert not pod["spec"].get("resourceClaims"), f"[CLAIM-7] pod.spec.resourceClaims is {pod['spec'].get('resourceClaims')}{shown}"
    assert not (pod.get("status") or {}).get("resourceClaimStatuses"), \
        f"[CLAIM-7] pod.status.resourceClaimStatuses is {pod['status'].get('resourceClaimStatuses')}{shown}"


@pytest.mark.requirement("STATUS-4")
def test_status_names_the_same_claim_for_the_pods_life(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    served = scenario.run_pod_and_verify(target, namespace, pods.pod("steady", [
        pods.container("main", p.workload_image, {p.extended_resource_name: 1})]))
    first = claim_status(served.pod)
    claim_uid = served.claim["metadata"]["uid"]

    def unchanged() -> bool:
        now = pods.get(api, namespace, "steady")
        claim = api.get(RESOURCE, "ResourceClaim", first["resourceClaimName"], namespace)
        return claim_status(now) == first and claim is not None and claim["metadata"]["uid"] == claim_uid

    with pods.requirement("STATUS-4"):
        holds_for(unchanged, duration=20, interval=2, what=f"extendedResourceClaimStatus to stay {first}",
                       describe=lambda: pods.summary(api, namespace, "steady"))
    last = claim_status(pods.get(api, namespace, "steady"))
    assert last == first, f"[STATUS-4] status changed from {first} to {last}"
