"""Helpers of the mixed-node tests: which plugin a node runs, what its status shows, what the
containers on it see, and the double-booking detector (what it finds is an observation).

A node's device plugin and DRA plugin serve the SAME physical devices, and a driver tells a
container a device by the same id whichever path handed it out, so a device handed out by both
paths shows up as one probe id seen by containers of two pods. Which path served a pod is read
from the pod itself: DRA-served pods carry extendedResourceClaimStatus.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import NamedTuple

from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import claim_status
from conformance.lib.objects.workloads import probe_container
from conformance.lib.profile import NodeModeLabel, Profile
from conformance.lib.setup.driver_setup import published_devices
from kube.api import Api, Obj
from kube.waits import wait_for

DRA_MODES = ("dra", "both")
DEVICE_PLUGIN_MODES = ("device-plugin", "both")
PLUGINS = ("dra", "device-plugin")


# --- pods ----------------------------------------------------------------------------------


def pinned_pod(name: str, profile: Profile, node: str, resources: dict[str, int]) -> Obj:
    """A one-container pod asking for `resources` that the scheduler may place only on `node`."""
    return pods.pinned(pods.pod(name, [pods.container("main", profile, resources)]), node)


def probe(api: Api, profile: Profile, pod: Obj, container: str = "main") -> list[str]:
    """The ids of the devices the profile's probe shows in the container."""
    return probe_container(api, profile, pod, container).device_ids


def placed_before_the_switch(pod: Obj) -> bool:
    """Refused by the device manager although the scheduler made no special claim for it: it was
    placed as a device-plugin pod, on the node as it was before the switch to DRA, which the
    scheduler's cache may not have caught up with under load (the full job, 2026-12-05: the
    next pods, two seconds later, were served by DRA). Not KUBELET-5's case, whose pods have one."""
    status = pod.get("status") or {}
    return (
        status.get("phase") == "Failed"
        and status.get("reason") == "UnexpectedAdmissionError"
        and claim_status(pod) is None
    )


def path_of(pod: Obj) -> str:
    """Which path served the pod's extended resources: "dra" (it has a special claim status) or "device-plugin"."""
    return "dra" if claim_status(pod) else "device-plugin"


def pod_state(api: Api, namespace: str, name: str) -> str:
    """The pod summary plus the claims it owns, for assertion messages."""
    return pods.unscheduled_state(api, namespace, name)


# --- nodes ---------------------------------------------------------------------------------


def node_resource(api: Api, node: str, name: str) -> dict[str, str | None]:
    """{capacity, allocatable} of `name` in node status (None: not listed)."""
    status = (api.get("v1", "Node", node) or {}).get("status") or {}
    return {field: (status.get(field) or {}).get(name) for field in ("capacity", "allocatable")}


def modes(profile: Profile) -> NodeModeLabel:
    assert profile.node_modes is not None, f"profile {profile.name} declares no nodeModes"
    return profile.node_modes


def mode_of(api: Api, profile: Profile, node: str) -> str | None:
    labels = ((api.get("v1", "Node", node) or {}).get("metadata") or {}).get("labels") or {}
    return modes(profile).mode(labels.get(modes(profile).label))


def set_mode_label(api: Api, profile: Profile, node: str, mode: str) -> None:
    m = modes(profile)
    api.resource("v1", "Node").patch(
        name=node, body={"metadata": {"labels": {m.label: m.values[mode]}}}, content_type="application/merge-patch+json"
    )


def plugin_pods(api: Api, profile: Profile, node: str, plugin: str) -> list[Obj]:
    """The driver's pods of one plugin ("dra" or "device-plugin") on a node."""
    return api.list(
        "v1",
        "Pod",
        profile.driver_namespace,
        label_selector=modes(profile).plugin_pods[plugin],
        field_selector=f"spec.nodeName={node}",
    )


def _ready(p: Obj) -> bool:
    return not p["metadata"].get("deletionTimestamp") and pods.condition(p, "Ready").get("status") == "True"


def node_state(api: Api, profile: Profile, node: str) -> dict:
    """Everything that tells which plugins serve a node right now."""
    return {
        "node": node,
        "mode": mode_of(api, profile, node),
        "published_devices": published_devices(api, profile)[node],
        profile.extended_resource_name: node_resource(api, node, profile.extended_resource_name),
        **{
            f"{plugin}_pods": [
                (
                    p["metadata"]["name"],
                    (p.get("status") or {}).get("phase"),
                    _ready(p),
                    bool(p["metadata"].get("deletionTimestamp")),
                )
                for p in plugin_pods(api, profile, node, plugin)
            ]
            for plugin in PLUGINS
        },
    }


def settled(api: Api, profile: Profile, node: str, mode: str, in_use: int = 0) -> bool:
    """The node carries `mode` and exactly the plugins of that mode serve it:
    DRA: a Ready plugin pod and all devices published (a driver may leave out the `in_use`
    devices that device-plugin pods still hold), else no plugin pod and no ResourceSlice;
    device plugin: a Ready plugin pod and allocatable = the node's devices, else no plugin pod and
    the name at most 0 in allocatable (the kubelet keeps a stale 0, MIXED-3)."""
    if mode_of(api, profile, node) != mode:
        return False
    devices = profile.devices_on(node)
    dra, dp = plugin_pods(api, profile, node, "dra"), plugin_pods(api, profile, node, "device-plugin")
    published = published_devices(api, profile)[node]
    allocatable = node_resource(api, node, profile.extended_resource_name)["allocatable"]
    if mode in DRA_MODES:
        ok = any(_ready(p) for p in dra) and devices - in_use <= published <= devices
    else:
        ok = not dra and published == 0
    if mode in DEVICE_PLUGIN_MODES:
        ok = ok and any(_ready(p) for p in dp) and allocatable == str(devices)
    else:
        ok = ok and not dp and allocatable in (None, "0")
    return ok


def wait_settled(api: Api, profile: Profile, node: str, mode: str, timeout: float = 300, in_use: int = 0) -> None:
    wait_for(
        lambda: settled(api, profile, node, mode, in_use),
        timeout=timeout,
        interval=2,
        what=f"node {node} to be served as {mode} ({modes(profile).label}={modes(profile).values[mode]})",
        describe=lambda: json.dumps(node_state(api, profile, node)),
    )


# --- double booking ------------------------------------------------------------------------


class Holder(NamedTuple):
    pod: str  # namespace/name
    container: str
    via: str  # the path that served the pod: "dra" or "device-plugin" (path_of)


def double_booked(holders: Mapping[str, list[Holder]]) -> dict[str, list[Holder]]:
    """The devices seen by running containers of more than one pod. Containers of ONE pod may share
    a device legitimately (a claim referenced by two containers), so they do not count."""
    return {d: hs for d, hs in holders.items() if len({h.pod for h in hs}) > 1}


def device_holders(api: Api, profile: Profile, node: str, namespace: str | None = None) -> dict[str, list[Holder]]:
    """device id -> every (pod, container, path) that sees it, from the probe of every running
    container of the profile's workload image on `node` (all namespaces unless `namespace`).
    Other containers (system pods, the driver) have no probe and are left out."""
    out: dict[str, list[Holder]] = {}
    running_pods = api.list("v1", "Pod", namespace, field_selector=f"spec.nodeName={node},status.phase=Running")
    for p in sorted(running_pods, key=lambda q: (q["metadata"]["namespace"], q["metadata"]["name"])):
        if p["metadata"].get("deletionTimestamp"):
            continue
        running = {
            s["name"]
            for s in (p.get("status") or {}).get("containerStatuses") or []
            if "running" in (s.get("state") or {})
        }
        for c in p["spec"]["containers"]:
            if c["name"] in running and c["image"] == profile.workload_image:
                holder = Holder(f"{p['metadata']['namespace']}/{p['metadata']['name']}", c["name"], path_of(p))
                for device in probe(api, profile, p, c["name"]):
                    out.setdefault(device, []).append(holder)
    return out


def render_holders(holders: Mapping[str, list[Holder]]) -> str:
    return json.dumps(
        {d: [f"{h.pod}/{h.container} via={h.via}" for h in hs] for d, hs in sorted(holders.items())}, indent=1
    )
