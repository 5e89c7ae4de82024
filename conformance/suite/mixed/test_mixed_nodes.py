"""One extended resource name served by a device plugin on one node and by DRA on another
(spec §3.8 MIXED-1, MIXED-2, MIXED-4; §3.7 KUBELET-4; KEP-2). Needs topology `mixed`: a node matching the
profile's nodeSelector.dra and one matching nodeSelector.devicePlugin.

Which path served a pod is read from the pod (helpers.path_of); what its containers see, from the
profile's probe.
"""

from __future__ import annotations

import json
import uuid

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import claim_status, claims_owned_by
from conformance.lib.oracles import devices as devices_lib
from conformance.lib.oracles import scenario
from conformance.lib.profile import Profile
from conformance.suite.conftest import Target
from conformance.suite.mixed import helpers
from conformance.suite.mixed.conftest import NodeModes, Workers
from kube.api import Obj
from kube.waits import WaitTimeout, wait_for

MIXED_4_SAMPLES = 4
EMPTY_MAPPINGS = "empty request mappings"  # how kube-scheduler words BUG-10 (PreBind of DynamicResources)


def _spread_deployment(name: str, profile: Profile, resource: str, nodes: list[str]) -> dict:
    """Two replicas asking for one unit each, at most one per node, only on `nodes`."""
    labels = {"app": name}
    spec = {
        "containers": [pods.container("main", profile, {resource: 1})],
        "terminationGracePeriodSeconds": 1,
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
                ]
            },
            **pods.only_on(nodes),
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": len(nodes),
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


@pytest.mark.serial
@pytest.mark.requirement("MIXED-1")
def test_pods_on_the_device_plugin_node_at_once_see_devices_of_their_own(
    check: Checks, target: Target, namespace: str, workers: Workers
) -> None:
    """The device plugin's side of the name: two pods on its node at the same time are handed one
    device each, not the same one (a plugin that double books passes every one-pod check)."""
    api, p, node = target.api, target.profile, workers.device_plugin
    names = ["dp-a", "dp-b"]
    for name in names:
        api.create(
            pods.pinned(pods.pod(name, [pods.container("main", p, {p.extended_resource_name: 1})]), node), namespace
        )
    with check("MIXED-1", stop=True):
        running = [pods.wait_running(api, namespace, name, timeout=180) for name in names]
    seen = {name: helpers.probe(api, p, q) for name, q in zip(names, running)}
    check.that(
        "MIXED-1",
        all(len(ids) == 1 for ids in seen.values()) and not set(seen["dp-a"]) & set(seen["dp-b"]),
        f"pods {names} on device-plugin node {node} at once should each see one device of their own: {seen}",
    )


@pytest.mark.serial
@pytest.mark.requirement("MIXED-1", "STATUS-1", "KUBELET-4")
def test_deployment_spread_over_a_device_plugin_node_and_a_dra_node(
    check: Checks, target: Target, namespace: str, workers: Workers
) -> None:
    """One replica lands on each worker: the device-plugin node's pod uses node-allocatable
    accounting (no special claim, no status, one device seen), the DRA node's pod gets a special
    claim and sees its allocated device; only the device-plugin node lists the name."""
    api, p = target.api, target.profile
    name = "gpu-spread"
    nodes = [workers.device_plugin, workers.dra]
    api.create(_spread_deployment(name, p, p.extended_resource_name, nodes), namespace)

    def listed() -> list[dict]:
        return api.list("v1", "Pod", namespace, label_selector=f"app={name}")

    def describe() -> str:
        return "\n".join(pods.summary(api, namespace, q["metadata"]["name"]) for q in listed()) or "no pods"

    def running() -> list[dict] | None:
        ok = [
            q
            for q in listed()
            if (q.get("status") or {}).get("phase") == "Running" and not q["metadata"].get("deletionTimestamp")
        ]
        return ok if len(ok) == len(nodes) else None

    with check("MIXED-1", stop=True):
        ready = wait_for(running, timeout=240, interval=2, what=f"both replicas of {name} Running", describe=describe)
        by_node = {q["spec"]["nodeName"]: q for q in ready}
        assert sorted(by_node) == sorted(nodes), f"replicas are not one per worker {nodes}:\n{describe()}"

    dp_pod, dra_pod = by_node[workers.device_plugin], by_node[workers.dra]
    dp_name, dra_name = dp_pod["metadata"]["name"], dra_pod["metadata"]["name"]

    # The device-plugin node: no special claim, no status, one device delivered by the device plugin.
    owned = [c["metadata"]["name"] for c in claims_owned_by(api, dp_pod)]
    seen = helpers.probe(api, p, dp_pod)
    check.that(
        "MIXED-1",
        owned == [] and claim_status(dp_pod) is None and len(seen) == 1,
        f"pod {dp_name} on device-plugin node {workers.device_plugin} should own no claim (owns {owned}), have "
        f"no extendedResourceClaimStatus and see 1 device (sees {seen}):\n"
        f"{pods.summary(api, namespace, dp_name)}",
    )
    check.that(
        "STATUS-1",
        claim_status(dp_pod) is None,
        f"pod {dp_name} served by the device plugin has extendedResourceClaimStatus:\n"
        f"{pods.summary(api, namespace, dp_name)}",
    )

    # The DRA node: special claim, status, and exactly its allocated device delivered by DRA.
    check.that(
        "STATUS-1",
        claim_status(dra_pod) is not None,
        f"pod {dra_name} on DRA node {workers.dra} has no extendedResourceClaimStatus:\n"
        f"{pods.summary(api, namespace, dra_name)}",
    )
    served = scenario.verify_served(target, check, dra_pod, as_id="MIXED-1")
    seen = helpers.probe(api, p, dra_pod)
    check.that(
        "MIXED-1",
        seen == served.seen["main"],
        f"pod {dra_name} on DRA node {workers.dra} should see its allocated device {served.seen['main']}, "
        f"sees {seen}:\n{pods.summary(api, namespace, dra_name)}",
    )

    # Node status: allocatable accounting on the device-plugin node only.
    dp_status = helpers.node_resource(api, workers.device_plugin, p.extended_resource_name)
    check.that(
        "MIXED-1",
        dp_status["allocatable"] == str(p.devices_on(workers.device_plugin)),
        f"device-plugin node {workers.device_plugin} lists {p.extended_resource_name}: {dp_status}, "
        f"expected allocatable {p.devices_on(workers.device_plugin)}",
    )
    dra_status = helpers.node_resource(api, workers.dra, p.extended_resource_name)
    implicit = helpers.node_resource(api, workers.dra, p.implicit_resource_name)
    check.that(
        "KUBELET-4",
        dra_status == {"capacity": None, "allocatable": None} == implicit,
        f"DRA node {workers.dra} lists a DRA-backed name in node status while pod {dra_name} runs: "
        f"{p.extended_resource_name}: {dra_status}, {p.implicit_resource_name}: {implicit}",
    )


@pytest.mark.serial
@pytest.mark.requirement("MIXED-2", "STATUS-1")
def test_device_plugin_serves_the_name_on_a_node_with_both_plugins(
    check: Checks, target: Target, namespace: str, workers: Workers, node_modes: NodeModes
) -> None:
    """A worker running both plugins (mode `both`) advertises the name (allocatable > 0) AND
    publishes the same GPUs in a ResourceSlice. A pod asking for the name there must be served
    by the device plugin (allocatable > 0, MIXED-2), without special claim or status (STATUS-1);
    the node's DRA devices stay usable through an ordinary ResourceClaim. Which mechanism served
    it and what each pod sees are recorded.

    The device-plugin worker is the one given `both`: adding and later removing the DRA plugin
    leaves its node status as it was, whereas a device plugin leaving the DRA worker would leave a
    stale `<name>: 0` there (MIXED-3) for the rest of the session."""
    api, p = target.api, target.profile
    node = workers.device_plugin
    with check("MIXED-2", stop=True):  # the cluster must not reject a node served by both
        node_modes.set(node, "both")
    status_before = helpers.node_resource(api, node, p.extended_resource_name)

    api.create(helpers.pinned_pod("gpu-1", p, node, {p.extended_resource_name: 1}), namespace)
    with check("MIXED-2", stop=True):
        pod = pods.wait_phase(api, namespace, "gpu-1", ("Running", "Failed"), timeout=180)
        assert pod["status"]["phase"] == "Running", (
            f"pod gpu-1 failed on node {node} with both plugins:\n{helpers.pod_state(api, namespace, 'gpu-1')}"
        )
    status = claim_status(pod)
    owned = [c["metadata"]["name"] for c in claims_owned_by(api, pod)]
    seen = helpers.probe(api, p, pod)
    mechanism = "dra" if status or owned else "device-plugin"
    observation = (
        f"Kubernetes {target.version.tag}: node {node} with both plugins ({p.extended_resource_name} "
        f"{status_before}, {helpers.node_state(api, p, node)['published_devices']} devices published); "
        f"pod gpu-1 asking for 1 was served by {mechanism}: extendedResourceClaimStatus={json.dumps(status)}, "
        f"owned claims={owned}, probe={seen}"
    )
    check.observe("MIXED-2", observation)
    check.that(
        "MIXED-2",
        mechanism == "device-plugin" and len(seen) == 1,
        f"the device plugin must serve the name where allocatable > 0, with exactly one device: {observation}",
    )
    check.that("STATUS-1", status is None, f"pod gpu-1 got extendedResourceClaimStatus: {observation}")

    # The DRA devices of that node stay usable through an ordinary ResourceClaim.
    claim_name = f"own-{uuid.uuid4().hex[:6]}"
    api.create(pods.user_claim(claim_name, p.device_class, count=1), namespace)
    with_claim = helpers.pinned_pod("with-claim", p, node, {})
    with_claim["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    with_claim["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    api.create(with_claim, namespace)
    with check("MIXED-2", stop=True):
        claimed = pods.wait_running(api, namespace, "with-claim", timeout=180)
    seen_claim = helpers.probe(api, p, claimed)
    devices = pods.claim_devices(api, namespace, claim_name)
    ids = devices_lib.device_ids(api, p)
    want = sorted(ids.get(d, f"?{d[1]}") for d in devices)
    check.that(
        "MIXED-2",
        seen_claim == want,
        f"pod with-claim on node {node} should see its claim's device {devices} as {want}, sees "
        f"{seen_claim}:\n{pods.summary(api, namespace, 'with-claim')}",
    )
    booked = helpers.double_booked(helpers.device_holders(api, p, node, namespace))
    check.observe(
        "MIXED-2",
        f"on the node with both plugins gpu-1 (device plugin) sees {seen}, "
        f"with-claim (DRA claim {devices}) sees {seen_claim}; devices seen by two "
        f"pods: {helpers.render_holders(booked) if booked else 'none'}",
    )


@pytest.mark.serial
@pytest.mark.requirement("KEP-2")
def test_one_pod_with_a_device_plugin_name_and_a_claim(
    check: Checks, target: Target, namespace: str, workers: Workers, node_modes: NodeModes
) -> None:
    """As upstream's pod asking for a device-plugin resource and a ResourceClaim at once, but on a
    node running both plugins, a setup the KEP rules out: what the pod gets is recorded (which
    path served the name, its special claims, what the container sees), never judged."""
    api, p = target.api, target.profile
    node = workers.device_plugin
    node_modes.set(node, "both")
    claim_name = f"own-{uuid.uuid4().hex[:6]}"
    api.create(pods.user_claim(claim_name, p.device_class, count=1), namespace)
    both = helpers.pinned_pod("plugin-and-claim", p, node, {p.extended_resource_name: 1})
    both["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    both["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    api.create(both, namespace)

    def settled() -> Obj | None:  # Running, or stopped by the known bug's PreBind error
        pod = pods.get(api, namespace, "plugin-and-claim")
        stuck = EMPTY_MAPPINGS in (pods.condition(pod, "PodScheduled").get("message") or "")
        return pod if stuck or (pod.get("status") or {}).get("phase") == "Running" else None

    asked = (
        f"pod plugin-and-claim (1 {p.extended_resource_name} on node {node}, where the device plugin "
        "serves it, plus its own claim)"
    )
    try:
        pod = wait_for(
            settled,
            timeout=180,
            interval=2,
            what="pod plugin-and-claim Running or refused by PreBind",
            describe=lambda: helpers.pod_state(api, namespace, "plugin-and-claim"),
        )
    except WaitTimeout as e:
        check.observe("KEP-2", f"{asked}: {e}")
        return
    if (pod.get("status") or {}).get("phase") != "Running":
        check.observe(
            "KEP-2",
            f"{asked} is never bound (BUG-10): {pods.condition(pod, 'PodScheduled').get('message')}",
        )
        return
    owned = [c["metadata"]["name"] for c in claims_owned_by(api, pod)]
    claimed = sorted(
        devices_lib.device_ids(api, p).get(d, f"?{d[1]}") for d in pods.claim_devices(api, namespace, claim_name)
    )
    check.observe(
        "KEP-2",
        f"{asked} runs, the name served by {helpers.path_of(pod)} (special claims {owned}); it sees "
        f"{helpers.probe(api, p, pod)}, its own claim holds {claimed}",
    )


@pytest.mark.serial
@pytest.mark.requirement("MIXED-4")
def test_where_pods_land_when_both_kinds_of_node_fit(
    check: Checks, target: Target, namespace: str, workers: Workers
) -> None:
    """Nothing prefers a DRA node or a device-plugin node: record where one-device pods land when
    either would do (each is deleted before the next, so both nodes stay equally free)."""
    api, p = target.api, target.profile
    nodes = [workers.device_plugin, workers.dra]
    landed = []
    for i in range(MIXED_4_SAMPLES):
        either = pods.pod(f"either-{i}", [pods.container("main", p, {p.extended_resource_name: 1})])
        either["spec"]["affinity"] = pods.only_on(nodes)
        with check("MIXED-4", stop=True):
            bound = pods.landing(api, namespace, either)
        landed.append(f"{helpers.path_of(bound)} ({bound['spec']['nodeName']})")
    check.observe(
        "MIXED-4",
        f"Kubernetes {target.version.tag}: {MIXED_4_SAMPLES} one-device pods that fit both the "
        f"device-plugin node {workers.device_plugin} and the DRA node {workers.dra} were "
        f"served by: {', '.join(landed)}",
    )
