"""How container resource names resolve to DeviceClasses (spec §3.2; NAME-*, NEG-5).

Classes created here select the profile's devices (`device.driver == <driver>`) and get unique
names and unique explicit names, because the name-to-class mapping is cluster-wide.
"""
from __future__ import annotations

import uuid

import pytest

from conformance.lib import pods, scenario
from conformance.lib.special_claim import IMPLICIT_PREFIX, claim_status, special_claim
from conformance.lib.workloads import probe_container
from conformance.suite.conftest import Target


@pytest.mark.requirement("NAME-2")
def test_implicit_name_of_the_profile_class(target: Target, namespace: str) -> None:
    p = target.profile
    pod = pods.pod("implicit", [pods.container("main", p.workload_image, {p.implicit_resource_name: 1})])
    served = scenario.run_pod_and_verify(target, namespace, pod)
    mapping = claim_status(served.pod)["requestMappings"]
    assert [m["resourceName"] for m in mapping] == [p.implicit_resource_name], \
        f"[NAME-2] mapping should name {p.implicit_resource_name} as written: {mapping}"
    assert len(served.seen["main"]) == 1, f"[NAME-2] container main should see one device: {served.seen}"


@pytest.mark.requirement("NAME-2")
def test_implicit_name_of_a_class_without_explicit_name(target: Target, namespace: str,
                                                        request: pytest.FixtureRequest) -> None:
    p = target.profile
    cls = pods.create_device_class(target.api, request, p.driver, prefix="implicit")["metadata"]["name"]
    name = IMPLICIT_PREFIX + cls
    pod = pods.pod("implicit-new", [pods.container("main", p.workload_image, {name: 2})])
    served = scenario.run_pod_and_verify(target, namespace, pod, classes={name: cls})
    assert len(served.seen["main"]) == 2, f"[NAME-2] container main should see two devices of {cls}: {served.seen}"


@pytest.mark.requirement("NAME-3")
def test_newest_class_wins_a_shared_explicit_name(target: Target, namespace: str, request: pytest.FixtureRequest) -> None:
    api, p = target.api, target.profile
    tag = uuid.uuid4().hex[:8]
    shared = f"example.com/dup-{tag}"
    # The newer class gets the lexicographically larger name, so that an implementation ordering
    # by name alone (the tie-breaker) would pick the older class and fail.
    older = pods.create_device_class(api, request, p.driver, shared, name=f"dup-a-{tag}.kep5004.io")
    pods.wait_elapsed(1.1)  # creationTimestamp has one-second granularity
    newer = pods.create_device_class(api, request, p.driver, shared, name=f"dup-b-{tag}.kep5004.io")
    stamps = (older["metadata"]["creationTimestamp"], newer["metadata"]["creationTimestamp"])
    assert stamps[0] < stamps[1], f"[NAME-3] precondition: creationTimestamps {stamps} should differ"
    # Never delete or clear the losing class before asserting (BUG-5 in 1.35-1.37).
    api.create(pods.pod("dup", [pods.container("main", p.workload_image, {shared: 1})]), namespace)
    with pods.requirement("NAME-3"):
        pod = pods.wait_running(api, namespace, "dup", timeout=180)
    claim = special_claim(api, pod)
    used = [r["exactly"]["deviceClassName"] for r in ((claim or {}).get("spec") or {}).get("devices", {}).get("requests", [])]
    assert used == [newer["metadata"]["name"]], \
        (f"[NAME-3] {shared} resolved to {used}; classes {older['metadata']['name']} ({stamps[0]}) and "
         f"{newer['metadata']['name']} ({stamps[1]}){pods.observed('', pod, claim)}")
    scenario.verify_served(target, pod, classes={shared: newer["metadata"]["name"]})


@pytest.mark.requirement("NAME-4", "NEG-5")
def test_unmapped_name_stays_unschedulable(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    name = f"example.com/unmapped-{uuid.uuid4().hex[:8]}"
    api.create(pods.pod("unmapped", [pods.container("main", p.workload_image, {name: 1})]), namespace)
    with pods.requirement("NAME-4"):
        pods.wait_unschedulable(api, namespace, "unmapped", timeout=90)
    pods.assert_stays_unscheduled(api, namespace, "unmapped", "NEG-5", duration=15)


@pytest.mark.requirement("NAME-5")
def test_pod_created_before_its_class_runs_once_the_class_exists(target: Target, namespace: str,
                                                                 request: pytest.FixtureRequest) -> None:
    api, p = target.api, target.profile
    name = f"example.com/late-{uuid.uuid4().hex[:8]}"
    api.create(pods.pod("early", [pods.container("main", p.workload_image, {name: 1})]), namespace)
    with pods.requirement("NAME-5"):
        before = pods.wait_unschedulable(api, namespace, "early", timeout=90)
    cls = pods.create_device_class(api, request, p.driver, name, prefix="late")["metadata"]["name"]
    # 1.34: NodeResourcesFit registered no DeviceClass events, so the retry can wait for the
    # five-minute flush of unschedulable pods; 1.35+ re-queues on the DeviceClass event.
    timeout = 420 if target.minor <= (1, 34) else 180
    with pods.requirement("NAME-5"):
        pod = pods.wait_running(api, namespace, "early", timeout=timeout)
    assert pod["metadata"]["uid"] == before["metadata"]["uid"], \
        f"[NAME-5] pod was recreated: uid {before['metadata']['uid']} -> {pod['metadata']['uid']}"
    scenario.verify_served(target, pod, classes={name: cls})


@pytest.mark.requirement("NAME-6", "KUBELET-2")
def test_zero_request_runs_without_claim(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    api.create(pods.pod("zero", [pods.container("main", p.workload_image, {p.extended_resource_name: 0})]), namespace)
    with pods.requirement("NAME-6"):
        pod = pods.wait_running(api, namespace, "zero", timeout=180)
    assert claim_status(pod) is None, f"[NAME-6] status set for a zero request: {pods.summary(api, namespace, 'zero')}"
    assert pods.owned_claims(api, namespace, "zero") == [], \
        f"[NAME-6] a claim was created for a zero request: {pods.unscheduled_state(api, namespace, 'zero')}"
    seen = probe_container(api, p, pod, "main")
    # The fake driver's probe says `FAKEGPU none` when it ran and found nothing.
    ran = p.deploy != "fake-driver" or "FAKEGPU none" in seen.raw
    assert seen.device_ids == [] and ran, f"[KUBELET-2] container asking for 0 sees devices: {seen.raw.strip()[:400]!r}"


@pytest.mark.requirement("NAME-7")
def test_explicit_and_implicit_names_are_not_merged(target: Target, namespace: str) -> None:
    p = target.profile
    resources = {p.extended_resource_name: 2, p.implicit_resource_name: 1}
    served = scenario.run_pod_and_verify(target, namespace, pods.pod("both", [pods.container("main", p.workload_image, resources)]))
    claim = served.claim
    requests = {r["name"]: r["exactly"] for r in claim["spec"]["devices"]["requests"]}
    by_name = {m["resourceName"]: m["requestName"] for m in claim_status(served.pod)["requestMappings"]}
    shown = pods.observed("", served.pod, claim)
    assert set(by_name) == set(resources) and len(requests) == 2 and by_name[p.extended_resource_name] != by_name[p.implicit_resource_name], \
        f"[NAME-7] expected one request per name, got mappings {by_name} and requests {sorted(requests)}{shown}"
    counts = {n: requests[r].get("count") for n, r in by_name.items()}
    assert counts == resources, f"[NAME-7] request counts per name {counts}, expected {resources}{shown}"
    devices = pods.claim_devices(target.api, namespace, claim["metadata"]["name"])
    assert len(devices) == 3 == len(set(devices)) and len(served.seen["main"]) == 3, \
        f"[NAME-7] expected 3 distinct devices, claim has {devices}, container sees {served.seen}{shown}"
