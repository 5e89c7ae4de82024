"""Migrating a node between a device plugin and DRA (spec §3.8 MIXED-3, §3.7 KUBELET-5, §6 BUG-3).

The device-plugin worker of topology `mixed` is relabelled (the driver's plugins follow the
profile's nodeModes label) and put back afterwards by the `node_modes` fixture; profiles without
that capability get `not tested`, with the reason.

A node's device plugin and DRA plugin serve the SAME physical GPUs. Nothing in
Kubernetes tells the DRA allocator about devices a device plugin handed out, so migrating a node
while device-plugin pods still run can double-book their GPUs, unless the driver leaves them out
of its ResourceSlices. The spec requires neither: whether GPUs were double-booked is recorded as
an observation; what is checked is that the migrated node serves new pods through DRA (MIXED-3)
and that the stale device-plugin entry does not make the kubelet refuse them (KUBELET-5).
"""

from __future__ import annotations

import json

import pytest

from conformance.catalogue import requirement
from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import claim_status, claims_owned_by
from conformance.lib.oracles import scenario
from conformance.lib.setup.driver_setup import published_devices
from conformance.suite.conftest import Target
from conformance.suite.mixed import helpers
from conformance.suite.mixed.conftest import NodeModes, Workers
from kube.api import Obj


def _running(target: Target, check: Checks, namespace: str, name: str, node: str, req_id: str) -> Obj:
    """Check `req_id`: the pod runs (else the test ends). Where the node still lists the name at 0
    (a stale device-plugin registration), a refusal by the device manager (phase Failed, reason
    UnexpectedAdmissionError) also fails KUBELET-5."""
    api, name_listed = target.api, target.profile.extended_resource_name
    with check(req_id, stop=True):
        pod = pods.wait_phase(api, namespace, name, ("Running", "Failed"), timeout=240)
        reason = pod["status"].get("reason")
        if helpers.node_resource(api, node, name_listed)["allocatable"] == "0":
            check.that(
                "KUBELET-5",
                reason != "UnexpectedAdmissionError",
                f"pod {name} on node {node}, which lists {name_listed}: 0, was refused by the device manager:\n"
                f"{helpers.pod_state(api, namespace, name)}",
            )
        assert pod["status"]["phase"] == "Running", (
            f"pod {name} on node {node} failed (reason {reason!r}):\n{helpers.pod_state(api, namespace, name)}"
        )
    return pod


def _served_after_switch(target: Target, check: Checks, namespace: str, manifest: Obj, node: str) -> Obj:
    """The running pod of `manifest`, created (as it is) right after `node` was switched to DRA:
    a pod the scheduler placed before it saw the switch is created once more, and the
    requirement is held to the second one (a scheduler still treating the node as served by the
    device plugin fails it then)."""
    api, name = target.api, manifest["metadata"]["name"]
    with check("MIXED-3", stop=True):
        first = pods.wait_phase(api, namespace, name, ("Running", "Failed"), timeout=240)
    if helpers.placed_before_the_switch(first):
        check.observe(
            "MIXED-3",
            f"pod {name}, created right after node {node} was switched to DRA, was placed as a "
            f"device-plugin pod and refused by the device manager; created once more:\n"
            f"{helpers.pod_state(api, namespace, name)}",
        )
        api.delete("v1", "Pod", name, namespace)
        pods.wait_gone(api, "v1", "Pod", name, namespace)
        api.create(manifest, namespace)
    return _running(target, check, namespace, name, node, "MIXED-3")


def _observe_no_stale_entry(check: Checks, target: Target, node: str) -> None:
    """KUBELET-5 is about a stale zero-capacity entry (see _running): say so where the node has none."""
    name = target.profile.extended_resource_name
    status = helpers.node_resource(target.api, node, name)
    if status["allocatable"] != "0":
        check.observe(
            "KUBELET-5",
            f"node {node} lists {name} as {status} once the device plugin left: no stale "
            "zero-capacity entry, so no admission against one was checked",
        )


def _device_plugin_pod(
    target: Target, check: Checks, namespace: str, name: str, node: str, count: int
) -> tuple[Obj, list[str]]:
    """A pod served by the device plugin: no special claim, no status, `count` devices seen (MIXED-1)."""
    api, p = target.api, target.profile
    target.api.create(helpers.pinned_pod(name, p, node, {p.extended_resource_name: count}), namespace)
    pod = _running(target, check, namespace, name, node, "MIXED-1")
    owned = [c["metadata"]["name"] for c in claims_owned_by(api, pod)]
    seen = helpers.probe(api, p, pod)
    check.that(
        "MIXED-1",
        not owned and len(set(seen)) == len(seen) == count,
        f"pod {name} on device-plugin node {node} should own no claim (owns {owned}) and see {count} devices, "
        f"sees {seen}:\n{pods.summary(api, namespace, name)}",
    )
    check.that(
        "STATUS-1",
        claim_status(pod) is None,
        f"pod {name} served by the device plugin has extendedResourceClaimStatus:\n"
        f"{pods.summary(api, namespace, name)}",
    )
    return pod, seen


def _fill_with_dra_pods(target: Target, check: Checks, namespace: str, node: str, prefix: str) -> None:
    """MIXED-3: pods of 2 devices (one of 1 if the count is odd) until every device the DRA driver
    publishes for the node is allocated; each must run with a special claim and see exactly its
    allocated devices, and every published device must be allocated once."""
    api, p = target.api, target.profile
    published = published_devices(api, p)[node]
    sizes = [2] * (published // 2) + [1] * (published % 2)
    names = [f"{prefix}-{i}" for i in range(len(sizes))]
    manifests = [
        helpers.pinned_pod(name, p, node, {p.extended_resource_name: size}) for name, size in zip(names, sizes)
    ]
    for manifest in manifests:
        api.create(manifest, namespace)
    allocated: dict[str, list[tuple[str, str]]] = {}
    for name, size, manifest in zip(names, sizes, manifests):
        served = scenario.verify_served(
            target, check, _served_after_switch(target, check, namespace, manifest, node), as_id="MIXED-3"
        )
        seen = helpers.probe(api, p, served.pod)
        allocated[name] = pods.claim_devices(api, namespace, served.claim["metadata"]["name"])
        check.that(
            "MIXED-3",
            seen == served.seen["main"] and len(seen) == size,
            f"pod {name} on migrated node {node} should see its {size} allocated devices {served.seen['main']}, "
            f"sees {seen}:\n{pods.summary(api, namespace, name)}",
        )
    flat = [d for devs in allocated.values() for d in devs]
    pools = pods.pool_nodes(api, p.driver)
    check.that(
        "MIXED-3",
        len(set(flat)) == len(flat) == published and {pools.get(pool) for pool, _ in flat} == {node},
        f"expected the {published} DRA devices published for {node} allocated once each, got {allocated} "
        f"(pools {pools})",
    )


def _kept_or_dropped(value: str | None) -> str:
    return "dropped" if value is None else f"kept at {value}"


@pytest.mark.serial
@pytest.mark.requirement("MIXED-3", "KUBELET-5")
def test_migrating_to_dra_without_draining(
    check: Checks, target: Target, namespace: str, workers: Workers, node_modes: NodeModes
) -> None:
    """A pod holds 2 GPUs through the device plugin; the node is switched to DRA without draining
    it. New pods asking for the name must get DRA claims and devices there (MIXED-3), admitted
    despite the stale device-plugin registration (KUBELET-5), until every device the driver
    publishes is allocated. Recorded, not required: the node status once the plugin left, whether
    the old pod kept its GPUs, and whether DRA handed them out again (a driver publishing every
    GPU does; one hiding busy GPUs would not)."""
    api, p, name = target.api, target.profile, target.profile.extended_resource_name
    node = workers.device_plugin
    _, old_seen = _device_plugin_pod(target, check, namespace, "dp-old", node, 2)
    old_ids = sorted(old_seen)
    before = helpers.node_resource(api, node, name)

    with check("MIXED-3", stop=True):
        node_modes.set(node, "dra", in_use=len(old_ids))
    _observe_no_stale_entry(check, target, node)
    after = helpers.node_resource(api, node, name)
    old = api.get("v1", "Pod", "dp-old", namespace) or {}
    phase = (old.get("status") or {}).get("phase")
    still = helpers.probe(api, p, old) if phase == "Running" else []
    check.observe(
        "MIXED-3",
        f"Kubernetes {target.version.tag}, node {node}: {name} {before} with the device plugin, "
        f"{after} once it left (allocatable {_kept_or_dropped(after['allocatable'])}, capacity "
        f"{_kept_or_dropped(after['capacity'])}); {published_devices(api, p)[node]} devices "
        f"published by DRA; pod dp-old saw {old_ids}, now {phase or 'gone'} "
        f"seeing {still}",
    )

    _fill_with_dra_pods(target, check, namespace, node, "dra")

    booked = helpers.double_booked(helpers.device_holders(api, p, node))
    check.observe(
        "MIXED-3",
        f"double booking after migrating node {node} without draining: "
        + (
            f"devices seen by containers of two pods: {helpers.render_holders(booked)}"
            if booked
            else f"none (dp-old's GPUs {old_ids} were not handed out again)"
        ),
    )


@pytest.mark.serial
@pytest.mark.requirement("MIXED-3", "KUBELET-5")
def test_draining_before_migrating_to_dra_avoids_double_booking(
    check: Checks, target: Target, namespace: str, workers: Workers, node_modes: NodeModes
) -> None:
    """The safe migration: delete the device-plugin pods (wait until gone), switch the node to
    DRA, fill every DRA device with new pods (MIXED-3, KUBELET-5): then no GPU may be seen by two
    running containers, and each must be seen once, by a DRA-served pod."""
    api, p = target.api, target.profile
    node = workers.device_plugin
    _device_plugin_pod(target, check, namespace, "dp-old", node, 2)
    api.delete("v1", "Pod", "dp-old", namespace)
    pods.wait_gone(api, "v1", "Pod", "dp-old", namespace)

    with check("MIXED-3", stop=True):
        node_modes.set(node, "dra")
    _observe_no_stale_entry(check, target, node)
    _fill_with_dra_pods(target, check, namespace, node, "dra")

    holders = helpers.device_holders(api, p, node)
    booked = helpers.double_booked(holders)
    check.that(
        "MIXED-3",
        not booked
        and len(holders) == p.devices_on(node)
        and all(h.via == "dra" for hs in holders.values() for h in hs),
        f"after draining first, the {p.devices_on(node)} GPUs of {node} should each be seen by one pod served "
        f"by DRA; device -> holders: {helpers.render_holders(holders)}",
    )


@pytest.mark.serial
@pytest.mark.requirement("MIXED-3", "MIXED-1", "STATUS-1")
def test_node_migrated_back_from_dra_to_the_device_plugin(
    check: Checks, target: Target, namespace: str, workers: Workers, node_modes: NodeModes
) -> None:
    """DRA -> device plugin: a node switched to DRA serves a DRA pod (MIXED-3, from 1.35; on 1.34
    the stale zero-valued device-plugin entry keeps such pods off the node, BUG-3); after that
    pod is deleted and the node switched back, it is served by the device plugin again and new
    pods run through it without a special claim or status (MIXED-1, STATUS-1)."""
    api, p, name = target.api, target.profile, target.profile.extended_resource_name
    node = workers.device_plugin
    if requirement("MIXED-3").applies_to(target.minor, gate_enabled=True)[0]:
        with check("MIXED-3", stop=True):
            node_modes.set(node, "dra")
        manifest = helpers.pinned_pod("dra-1", p, node, {name: 1})
        api.create(manifest, namespace)
        served = scenario.verify_served(
            target, check, _served_after_switch(target, check, namespace, manifest, node), as_id="MIXED-3"
        )
        seen = helpers.probe(api, p, served.pod)
        check.that(
            "MIXED-3",
            seen == served.seen["main"] and len(seen) == 1,
            f"pod dra-1 should see its 1 allocated device {served.seen['main']}, sees {seen}:\n"
            f"{pods.summary(api, namespace, 'dra-1')}",
        )
        api.delete("v1", "Pod", "dra-1", namespace)
        pods.wait_gone(api, "v1", "Pod", "dra-1", namespace)
    else:  # the way back is still checked, from a node that was on DRA (MIXED-3: the catalogue's version range)
        node_modes.set(node, "dra")

    # Served by the device plugin again: DRA devices gone, the name back in allocatable (helpers.settled).
    with check("MIXED-1", stop=True):
        node_modes.set(node, "device-plugin")
    slices = [
        s["metadata"]["name"]
        for s in api.list("resource.k8s.io/v1", "ResourceSlice")
        if s["spec"].get("nodeName") == node and s["spec"]["driver"] == p.driver
    ]
    _, seen = _device_plugin_pod(target, check, namespace, "dp-new", node, 1)
    check.observe(
        "MIXED-1",
        f"DRA -> device plugin, node {node}: ResourceSlices {slices}, "
        f"{name} {json.dumps(helpers.node_resource(api, node, name))}, "
        f"pod dp-new sees {seen}",
    )
