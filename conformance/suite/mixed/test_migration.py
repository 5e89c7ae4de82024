"""Migrating a node between a device plugin and DRA (spec §3.8 MIXED-3, §3.7 KUBELET-5, §6 BUG-3).

The device-plugin worker of topology `mixed` is relabelled (the fake driver's DaemonSets follow
the label fake-gpu.kep5004.io/mode) and put back afterwards by the `node_modes` fixture.

The fake device plugin and the fake DRA plugin serve the SAME physical GPUs of a node. Nothing in
Kubernetes tells the DRA allocator about devices a device plugin handed out, so migrating a node
while device-plugin pods still run double-books their GPUs. The first test demonstrates that
hazard (its expected outcome is double booking); the second shows that draining first avoids it.
"""
from __future__ import annotations

import json

import pytest

from conformance.lib import pods, scenario
from conformance.lib.api import Obj
from conformance.lib.driver_setup import published_devices
from conformance.lib.special_claim import claim_status, claims_owned_by
from conformance.suite.conftest import Target
from conformance.suite.mixed import helpers
from conformance.suite.mixed.conftest import NodeModes, Workers
from fake_driver.probe_output import ProbedGpu


def _start(target: Target, namespace: str, name: str, node: str, count: int, req_id: str) -> Obj:
    """Create a pod asking for `count` units pinned to `node` and wait until it runs (see _running)."""
    p = target.profile
    target.api.create(helpers.pinned_pod(name, p.workload_image, node, {p.extended_resource_name: count}), namespace)
    return _running(target, namespace, name, node, req_id)


def _device_plugin_pod(target: Target, namespace: str, name: str, node: str, count: int,
                       req_id: str) -> tuple[Obj, list[ProbedGpu]]:
    """A pod served by the device plugin: no special claim, no status, `count` devices via=device-plugin."""
    api, p = target.api, target.profile
    pod = _start(target, namespace, name, node, count, req_id)
    owned = [c["metadata"]["name"] for c in claims_owned_by(api, pod)]
    seen = helpers.probe(api, p, pod)
    assert not owned and claim_status(pod) is None, \
        f"[{req_id}] pod {name} on device-plugin node {node} got a special claim {owned}:\n{pods.summary(api, namespace, name)}"
    assert len(seen) == count and all(d.via == "device-plugin" and d.node == node for d in seen), \
        (f"[{req_id}] pod {name} on device-plugin node {node} should see {count} devices via=device-plugin, sees "
         f"{helpers.shown(seen)}:\n{pods.summary(api, namespace, name)}")
    return pod, seen


def _fill_with_dra_pods(target: Target, namespace: str, node: str, prefix: str) -> dict[str, list[ProbedGpu]]:
    """Pods of 2 devices (one of 1 if the count is odd) until every DRA device of the node is
    allocated; each must run with a special claim and see exactly its devices via=dra."""
    api, p = target.api, target.profile
    sizes = [2] * (p.devices_per_node // 2) + [1] * (p.devices_per_node % 2)
    names = [f"{prefix}-{i}" for i in range(len(sizes))]
    for name, size in zip(names, sizes):
        api.create(helpers.pinned_pod(name, p.workload_image, node, {p.extended_resource_name: size}), namespace)
    seen: dict[str, list[ProbedGpu]] = {}
    allocated: dict[str, list[tuple[str, str]]] = {}
    for name, size in zip(names, sizes):
        pod = _running(target, namespace, name, node)
        with pods.requirement("MIXED-3"):
            served = scenario.verify_served(target, pod)
        seen[name] = helpers.probe(api, p, pod)
        allocated[name] = pods.claim_devices(api, namespace, served.claim["metadata"]["name"])
        assert len(seen[name]) == size and all(d.via == "dra" and d.node == node for d in seen[name]), \
            (f"[MIXED-3] pod {name} on migrated node {node} should see its {size} devices via=dra, sees "
             f"{helpers.shown(seen[name])}:\n{pods.summary(api, namespace, name)}")
    flat = [d for devs in allocated.values() for d in devs]
    pools = pods.pool_nodes(api, p.driver)
    assert len(set(flat)) == len(flat) == p.devices_per_node and {pools.get(pool) for pool, _ in flat} == {node}, \
        f"[MIXED-3] expected all {p.devices_per_node} DRA devices of {node} allocated once each, got {allocated} (pools {pools})"
    return seen


def _running(target: Target, namespace: str, name: str, node: str, req_id: str = "MIXED-3") -> Obj:
    """Wait until the pod runs. A refusal at admission (phase Failed, e.g. UnexpectedAdmissionError
    from the device manager) fails the test at once, tagged KUBELET-5 when that is the reason."""
    api = target.api
    with pods.requirement(req_id):
        pod = pods.wait_phase(api, namespace, name, ("Running", "Failed"), timeout=240)
    reason = pod["status"].get("reason")
    tag = "KUBELET-5" if reason == "UnexpectedAdmissionError" else req_id
    assert pod["status"]["phase"] == "Running", \
        f"[{tag}] pod {name} on node {node} failed (reason {reason!r}):\n{helpers.pod_state(api, namespace, name)}"
    return pod


def _kept_or_dropped(value: str | None) -> str:
    return "dropped" if value is None else f"kept at {value}"


@pytest.mark.serial
@pytest.mark.requirement("MIXED-3", "KUBELET-5")
def test_migrating_to_dra_without_draining_double_books_the_device_plugin_pods_gpus(
        target: Target, namespace: str, workers: Workers, node_modes: NodeModes, observe) -> None:
    """HAZARD DEMONSTRATION -- the expected outcome is double booking.

    A pod holds 2 GPUs through the device plugin; the node is switched to DRA without draining it.
    The pod keeps running with its 2 GPUs, the DRA plugin publishes all 8 GPUs as free, new pods
    get DRA claims there (MIXED-3, admitted despite the stale device-plugin registration,
    KUBELET-5), and once all 8 DRA devices are allocated the old pod's 2 GPUs are each seen by two
    running containers: the double-booking detector must report exactly those uuids."""
    api, p, name = target.api, target.profile, target.profile.extended_resource_name
    node = workers.device_plugin
    old, old_seen = _device_plugin_pod(target, namespace, "dp-old", node, 2, "MIXED-3")
    old_uuids = sorted(d.uuid for d in old_seen)
    before = helpers.node_resource(api, node, name)

    with pods.requirement("MIXED-3"):
        node_modes.set(node, "dra")
    after = helpers.node_resource(api, node, name)
    observe("MIXED-3 node status after the device plugin left",
            f"Kubernetes {target.version.tag}, node {node}: {name} {before} with the device plugin, {after} once it left "
            f"(allocatable {_kept_or_dropped(after['allocatable'])}, capacity {_kept_or_dropped(after['capacity'])})")

    old = pods.get(api, namespace, "dp-old")
    restarts = [s.get("restartCount") for s in old["status"].get("containerStatuses") or []]
    assert old["status"]["phase"] == "Running" and restarts == [0], \
        f"[MIXED-3] pod dp-old stopped or restarted when the device plugin left:\n{pods.summary(api, namespace, 'dp-old')}"
    still = helpers.probe(api, p, old)
    assert sorted(d.uuid for d in still) == old_uuids and all(d.via == "device-plugin" for d in still), \
        f"[MIXED-3] pod dp-old saw {helpers.shown(old_seen)} before the migration, now {helpers.shown(still)}"

    _fill_with_dra_pods(target, namespace, node, "dra")

    holders = helpers.uuid_holders(api, p, node)
    booked = helpers.double_booked(holders)
    observe("double booking after migrating without draining",
            f"node {node}: uuids seen by containers of two pods: {helpers.render_holders(booked)}")
    assert booked, (f"[MIXED-3] expected the hazard: the GPUs {old_uuids} of pod dp-old (device plugin) handed out "
                    f"again by DRA; no uuid is seen by two pods. uuid -> holders: {helpers.render_holders(holders)}")
    assert sorted(booked) == old_uuids and all(
        sorted(h.via for h in hs) == ["device-plugin", "dra"] and f"{namespace}/dp-old" in [h.pod for h in hs]
        for hs in booked.values()), \
        (f"[MIXED-3] expected exactly dp-old's GPUs {old_uuids} to be double booked (device plugin + DRA), got "
         f"{helpers.render_holders(booked)}")


@pytest.mark.serial
@pytest.mark.requirement("MIXED-3", "KUBELET-5")
def test_draining_before_migrating_to_dra_avoids_double_booking(target: Target, namespace: str, workers: Workers,
                                                                node_modes: NodeModes, observe) -> None:
    """The safe migration: delete the device-plugin pods (wait until gone), switch the node to
    DRA, fill every DRA device with new pods: no uuid is seen by two running containers."""
    api, p = target.api, target.profile
    node = workers.device_plugin
    _device_plugin_pod(target, namespace, "dp-old", node, 2, "MIXED-3")
    api.delete("v1", "Pod", "dp-old", namespace)
    pods.wait_gone(api, "v1", "Pod", "dp-old", namespace)

    with pods.requirement("MIXED-3"):
        node_modes.set(node, "dra")
    _fill_with_dra_pods(target, namespace, node, "dra")

    holders = helpers.uuid_holders(api, p, node)
    booked = helpers.double_booked(holders)
    assert not booked, f"[MIXED-3] GPUs double booked after draining first: {helpers.render_holders(booked)}"
    assert len(holders) == p.devices_per_node and all(h.via == "dra" for hs in holders.values() for h in hs), \
        f"[MIXED-3] expected the {p.devices_per_node} GPUs of {node} each seen once via=dra: {helpers.render_holders(holders)}"
    observe("drain then migrate", f"node {node}: {len(holders)} GPUs, each seen by one container via=dra")


@pytest.mark.serial
@pytest.mark.requirement("MIXED-3", "MIXED-1", "STATUS-1")
def test_node_migrated_back_from_dra_to_the_device_plugin(target: Target, namespace: str, workers: Workers,
                                                          node_modes: NodeModes, observe) -> None:
    """DRA -> device plugin: a node switched to DRA serves a DRA pod (from 1.35; on 1.34 the stale
    zero-valued device-plugin entry keeps such pods off the node, BUG-3); after that pod is deleted
    and the node switched back, its ResourceSlices disappear, it advertises the name again and new
    pods run through the device plugin without a special claim."""
    api, p, name = target.api, target.profile, target.profile.extended_resource_name
    node = workers.device_plugin
    with pods.requirement("MIXED-3"):
        node_modes.set(node, "dra")
    pod = helpers.pinned_pod("dra-1", p.workload_image, node, {name: 1})
    if target.minor >= (1, 35):
        api.create(pod, namespace)
        with pods.requirement("MIXED-3"):
            served = scenario.verify_served(target, _running(target, namespace, "dra-1", node))
        seen = helpers.probe(api, p, served.pod)
        assert len(seen) == 1 and seen[0].via == "dra", \
            f"[MIXED-3] pod dra-1 should see 1 device via=dra, sees {helpers.shown(seen)}:\n{pods.summary(api, namespace, 'dra-1')}"
    else:
        api.create(pod, namespace)
        pods.assert_stays_unscheduled(api, namespace, "dra-1", "MIXED-3", duration=15)
    api.delete("v1", "Pod", "dra-1", namespace)
    pods.wait_gone(api, "v1", "Pod", "dra-1", namespace)

    with pods.requirement("MIXED-1"):
        node_modes.set(node, "device-plugin")
    slices = [s["metadata"]["name"] for s in api.list("resource.k8s.io/v1", "ResourceSlice")
              if s["spec"].get("nodeName") == node and s["spec"]["driver"] == p.driver]
    assert not slices and published_devices(api, p)[node] == 0, \
        f"[MIXED-1] node {node} is back on the device plugin but still has ResourceSlices {slices}"
    status = helpers.node_resource(api, node, name)
    assert status["allocatable"] == str(p.devices_per_node), \
        f"[MIXED-1] node {node} is back on the device plugin but lists {name}: {status}"

    _, seen = _device_plugin_pod(target, namespace, "dp-new", node, 1, "MIXED-1")
    observe("DRA -> device plugin", f"node {node}: no ResourceSlice, {name} {json.dumps(status)}, "
                                    f"pod dp-new sees {helpers.shown(seen)}")
