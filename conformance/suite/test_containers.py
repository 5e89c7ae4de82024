"""Which container sees which device (spec §3.6-3.7; CTR-*, KUBELET-2).

Each container runs the profile's probe; its output must list exactly the devices of the
requests mapped to that container, and no device may show up in two long-lived containers.
"""
from __future__ import annotations

import uuid

import pytest
from kubernetes.dynamic.exceptions import ApiException

from conformance.lib import pods, scenario
from conformance.lib.special_claim import claim_status, special_claim
from conformance.lib.workloads import probe_container
from conformance.suite.conftest import Target

# layout name -> devices asked for by each regular container, in order
LAYOUTS = {
    "1x1": [1],
    "1x3": [3],
    "3x1": [1, 1, 1],
    "3-containers-1-2-3": [1, 2, 3],
}


def _distinct(seen: dict[str, list[str]], containers: list[str]) -> list[str]:
    """Device ids that appear in more than one of the given containers."""
    ids = [d for c in containers for d in seen.get(c, [])]
    return sorted({d for d in ids if ids.count(d) > 1})


@pytest.mark.requirement("CTR-1", "KUBELET-2")
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_container_sees_exactly_its_devices(target: Target, namespace: str, layout: str) -> None:
    p = target.profile
    counts = LAYOUTS[layout]
    names = [f"c{i}" for i in range(len(counts))]
    containers = [pods.container(n, p.workload_image, {p.extended_resource_name: k}) for n, k in zip(names, counts)]
    served = scenario.run_pod_and_verify(target, namespace, pods.pod(f"layout-{layout.lower()}", containers))
    shown = pods.observed("", served.pod, served.claim)
    got = {n: len(served.seen.get(n, [])) for n in names}
    assert got == dict(zip(names, counts)), f"[KUBELET-2] devices per container {got}, asked {dict(zip(names, counts))}{shown}"
    shared = _distinct(served.seen, names)
    assert not shared, f"[CTR-1] devices seen by more than one container: {shared}; seen {served.seen}{shown}"


@pytest.mark.requirement("CTR-2")
def test_one_container_with_three_names(target: Target, namespace: str, request: pytest.FixtureRequest) -> None:
    api, p = target.api, target.profile
    tag = uuid.uuid4().hex[:8]
    classes = {p.extended_resource_name: p.device_class}
    for suffix in ("a", "b"):
        name = f"example.com/ctr2-{suffix}-{tag}"
        classes[name] = pods.create_device_class(api, request, p.driver, name, prefix=f"ctr2-{suffix}")["metadata"]["name"]
    resources = {n: 1 for n in classes}
    served = scenario.run_pod_and_verify(target, namespace, pods.pod("three-names", [pods.container("main", p.workload_image, resources)]),
                                         classes=classes)
    shown = pods.observed("", served.pod, served.claim)
    requests = served.claim["spec"]["devices"]["requests"]
    assert sorted(r["exactly"]["deviceClassName"] for r in requests) == sorted(classes.values()), \
        f"[CTR-2] expected one request per name for classes {sorted(classes.values())}{shown}"
    assert len(served.seen["main"]) == 3, f"[CTR-2] container main should see 3 devices: {served.seen}{shown}"


@pytest.mark.requirement("CTR-3")
def test_init_containers_reuse_devices_of_later_containers(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    ern = p.extended_resource_name
    init = [pods.container("init-first", p.workload_image, {ern: 2}, command="fake-gpu-probe"),
            pods.container("sidecar", p.workload_image, {ern: 1}, restart_always=True),
            pods.container("init-last", p.workload_image, {ern: 1}, command="fake-gpu-probe")]
    main = [pods.container("main", p.workload_image, {ern: 1})]
    served = scenario.run_pod_and_verify(target, namespace, pods.pod("init-reuse", main, init=init), exact_counts=False)
    seen, shown = served.seen, pods.observed("", served.pod, served.claim)
    devices = pods.claim_devices(api, namespace, served.claim["metadata"]["name"])
    assert len(devices) == 2, f"[CTR-3] the pod should use 2 devices in total, its claim holds {devices}{shown}"
    assert len(seen["sidecar"]) == 1 and len(seen["main"]) == 1 and not set(seen["sidecar"]) & set(seen["main"]), \
        f"[CTR-3] sidecar and main should each have one device of their own: {seen}{shown}"
    assert seen["init-first"] == sorted(seen["sidecar"] + seen["main"]), \
        f"[CTR-3] first init container should see the sidecar's and main's devices: {seen}{shown}"
    assert seen["init-last"] == seen["main"], f"[CTR-3] last init container should see main's device: {seen}{shown}"


@pytest.mark.requirement("KUBELET-2")
def test_container_without_request_sees_no_device(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    containers = [pods.container("gpu", p.workload_image, {p.extended_resource_name: 1}),
                  pods.container("plain", p.workload_image, {})]
    served = scenario.run_pod_and_verify(target, namespace, pods.pod("one-plain", containers))
    mapped = {m["containerName"] for m in claim_status(served.pod)["requestMappings"]}
    assert mapped == {"gpu"}, f"[KUBELET-2] only container gpu should be mapped: {pods.observed('', served.pod, served.claim)}"
    seen = probe_container(api, p, served.pod, "plain")
    # The fake driver's probe says `FAKEGPU none` when it ran and found nothing.
    ran = p.deploy != "fake-driver" or "FAKEGPU none" in seen.raw
    assert seen.device_ids == [] and ran, f"[KUBELET-2] container plain without a request sees: {seen.raw.strip()[:400]!r}"
    assert len(served.seen["gpu"]) == 1, f"[KUBELET-2] container gpu should see one device: {served.seen}"


@pytest.mark.requirement("CTR-4")
def test_ephemeral_containers_get_no_devices(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    served = scenario.run_pod_and_verify(target, namespace, pods.pod(
        "debugged", [pods.container("main", p.workload_image, {p.extended_resource_name: 1})]))
    ephemeral = api.resource("v1", "Pod").ephemeralcontainers

    def add(container: dict) -> None:
        ephemeral.patch(name="debugged", namespace=namespace, body={"spec": {"ephemeralContainers": [container]}},
                        content_type="application/strategic-merge-patch+json")

    debug = {"name": "debug", "image": p.workload_image, "imagePullPolicy": "IfNotPresent",
             "command": ["sh", "-c", pods.SLEEP]}
    with pytest.raises(ApiException) as rejected:
        add({**debug, "name": "debug-gpu", "resources": {"limits": {p.extended_resource_name: "1"}}})
        pytest.fail("[CTR-4] an ephemeral container requesting an extended resource was accepted")
    assert rejected.value.status == 422, f"[CTR-4] expected 422 Invalid, got {rejected.value.status}"
    add(debug)
    pod = pods.get(api, namespace, "debugged")
    mapped = {m["containerName"] for m in claim_status(pod)["requestMappings"]}
    requests = [r["name"] for r in special_claim(api, pod)["spec"]["devices"]["requests"]]
    before = [r["name"] for r in served.claim["spec"]["devices"]["requests"]]
    assert mapped == {"main"} and requests == before, \
        f"[CTR-4] after adding ephemeral container debug: mapped containers {mapped}, claim requests {requests} " \
        f"(before {before})"
