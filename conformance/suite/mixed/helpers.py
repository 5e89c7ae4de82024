"""Helpers of the mixed-node tests: which plugin a node runs, what its status shows, what the
containers on it see, and the double-booking detector (what it finds is an observation).

The fake driver's device plugin and DRA plugin serve the SAME physical GPUs of a node (same
uuids), so a GPU handed out by both paths shows up as one uuid seen by containers of two pods.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from conformance.lib import pods
from conformance.lib.driver_setup import published_devices
from conformance.lib.profile import Profile
from conformance.lib.workloads import probe_container
from fake_driver import manifests
from fake_driver.probe_output import ProbedGpu, parse_probe_output
from kube.api import Api, Obj
from kube.waits import wait_for

MODE_LABEL = manifests.MODE_LABEL
DRA_MODES = ("dra", "both")
DEVICE_PLUGIN_MODES = ("device-plugin", "both")
COMPONENTS = {"dra": "dra-plugin", "device-plugin": "device-plugin"}  # app.kubernetes.io/component


# --- pods ----------------------------------------------------------------------------------

def pinned_pod(name: str, profile: Profile, node: str, resources: dict[str, int]) -> Obj:
    """A one-container pod asking for `resources` that the scheduler may place only on `node`
    (node affinity on metadata.name: the scheduler still runs, unlike spec.nodeName)."""
    p = pods.pod(name, [pods.container("main", profile, resources)])
    p["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    return p


def probe(api: Api, profile: Profile, pod: Obj, container: str = "main") -> list[ProbedGpu]:
    """What the fake-gpu probe in the container says it sees (uuid, node, via, ...)."""
    raw = probe_container(api, profile, pod, container).raw
    return parse_probe_output(raw)


def shown(devices: Iterable[ProbedGpu]) -> list[str]:
    return [f"{d.uuid} via={d.via} node={d.node} env={d.env}" for d in devices]


def pod_state(api: Api, namespace: str, name: str) -> str:
    """The pod summary plus the claims it owns, for assertion messages."""
    return pods.unscheduled_state(api, namespace, name)


# --- nodes ---------------------------------------------------------------------------------

def node_resource(api: Api, node: str, name: str) -> dict[str, str | None]:
    """{capacity, allocatable} of `name` in node status (None: not listed)."""
    status = (api.get("v1", "Node", node) or {}).get("status") or {}
    return {field: (status.get(field) or {}).get(name) for field in ("capacity", "allocatable")}


def mode_of(api: Api, node: str) -> str | None:
    return (((api.get("v1", "Node", node) or {}).get("metadata") or {}).get("labels") or {}).get(MODE_LABEL)


def set_mode_label(api: Api, node: str, mode: str) -> None:
    api.resource("v1", "Node").patch(name=node, body={"metadata": {"labels": {MODE_LABEL: mode}}},
                                     content_type="application/merge-patch+json")


def plugin_pods(api: Api, profile: Profile, node: str, plugin: str) -> list[Obj]:
    """The fake driver's DaemonSet pods of one plugin ("dra" or "device-plugin") on a node."""
    namespace = profile.driver_namespace or manifests.NAMESPACE
    return api.list("v1", "Pod", namespace, label_selector=f"app.kubernetes.io/component={COMPONENTS[plugin]}",
                    field_selector=f"spec.nodeName={node}")


def _ready(p: Obj) -> bool:
    return not p["metadata"].get("deletionTimestamp") and pods.condition(p, "Ready").get("status") == "True"


def node_state(api: Api, profile: Profile, node: str) -> dict:
    """Everything that tells which plugins serve a node right now."""
    return {"node": node, "label": mode_of(api, node),
            "published_devices": published_devices(api, profile)[node],
            profile.extended_resource_name: node_resource(api, node, profile.extended_resource_name),
            **{f"{plugin}_pods": [(p["metadata"]["name"], (p.get("status") or {}).get("phase"), _ready(p),
                                   bool(p["metadata"].get("deletionTimestamp")))
                                  for p in plugin_pods(api, profile, node, plugin)]
               for plugin in COMPONENTS}}


def settled(api: Api, profile: Profile, node: str, mode: str, in_use: int = 0) -> bool:
    """The node carries `mode` and exactly the plugins of that mode serve it:
    DRA: a Ready plugin pod and all devices published (a driver may leave out the `in_use`
    devices that device-plugin pods still hold), else no plugin pod and no ResourceSlice;
    device plugin: a Ready plugin pod and allocatable = devices per node, else no plugin pod and
    the name at most 0 in allocatable (the kubelet keeps a stale 0, MIXED-3)."""
    if mode_of(api, node) != mode:
        return False
    dra, dp = plugin_pods(api, profile, node, "dra"), plugin_pods(api, profile, node, "device-plugin")
    published = published_devices(api, profile)[node]
    allocatable = node_resource(api, node, profile.extended_resource_name)["allocatable"]
    if mode in DRA_MODES:
        ok = any(_ready(p) for p in dra) and profile.devices_per_node - in_use <= published <= profile.devices_per_node
    else:
        ok = not dra and published == 0
    if mode in DEVICE_PLUGIN_MODES:
        ok = ok and any(_ready(p) for p in dp) and allocatable == str(profile.devices_per_node)
    else:
        ok = ok and not dp and allocatable in (None, "0")
    return ok


def wait_settled(api: Api, profile: Profile, node: str, mode: str, timeout: float = 300, in_use: int = 0) -> None:
    wait_for(lambda: settled(api, profile, node, mode, in_use), timeout=timeout, interval=2,
             what=f"node {node} to be served as {MODE_LABEL}={mode}",
             describe=lambda: json.dumps(node_state(api, profile, node)))


# --- double booking ------------------------------------------------------------------------

class Holder(NamedTuple):
    pod: str        # namespace/name
    container: str
    via: str        # how the container got the device: "dra" or "device-plugin"


def holders_by_uuid(seen: Mapping[tuple[str, str], Iterable[ProbedGpu]]) -> dict[str, list[Holder]]:
    """(pod, container) -> probed devices  =>  uuid -> every (pod, container, via) that sees it."""
    out: dict[str, list[Holder]] = {}
    for (pod, container), devices in sorted(seen.items()):
        for d in devices:
            out.setdefault(d.uuid, []).append(Holder(pod, container, d.via))
    return out


def double_booked(holders: Mapping[str, list[Holder]]) -> dict[str, list[Holder]]:
    """The uuids seen by running containers of more than one pod. Containers of ONE pod may share
    a device legitimately (a claim referenced by two containers), so they do not count."""
    return {u: hs for u, hs in holders.items() if len({h.pod for h in hs}) > 1}


def probe_node(api: Api, profile: Profile, node: str, namespace: str | None = None) -> dict[tuple[str, str], list[ProbedGpu]]:
    """(namespace/pod, container) -> devices, from the probe of every running container of the
    profile's workload image on `node` (all namespaces unless `namespace`). Other containers
    (system pods, the driver) have no probe and are left out."""
    seen: dict[tuple[str, str], list[ProbedGpu]] = {}
    for p in api.list("v1", "Pod", namespace, field_selector=f"spec.nodeName={node},status.phase=Running"):
        if p["metadata"].get("deletionTimestamp"):
            continue
        running = {s["name"] for s in (p.get("status") or {}).get("containerStatuses") or []
                   if "running" in (s.get("state") or {})}
        for c in p["spec"]["containers"]:
            if c["name"] in running and c["image"] == profile.workload_image:
                seen[(f"{p['metadata']['namespace']}/{p['metadata']['name']}", c["name"])] = probe(api, profile, p, c["name"])
    return seen


def uuid_holders(api: Api, profile: Profile, node: str, namespace: str | None = None) -> dict[str, list[Holder]]:
    """uuid -> [(pod, container, via)] over every running workload container on the node."""
    return holders_by_uuid(probe_node(api, profile, node, namespace))


def render_holders(holders: Mapping[str, list[Holder]]) -> str:
    return json.dumps({u: [f"{h.pod}/{h.container} via={h.via}" for h in hs] for u, hs in sorted(holders.items())}, indent=1)
