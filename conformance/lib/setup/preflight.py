"""Preflight: is the cluster set up so that the suite's verdicts mean something?

Checked before any test, each a verdict of its own: the feature gate on every component
(kube-apiserver and each kubelet from their `kubernetes_feature_enabled` metric;
kube-scheduler and kube-controller-manager from their pods' `--feature-gates` flag, or the
version's default), the profile's DeviceClass and its `extendedResourceName`, the devices the
driver publishes on each node the profile selects, that the driver's pools are sound (each on
one node that exists, every device name once per pool), and that the DeviceClass's selectors
select the driver's devices on every such node. A failure names its cause in one line instead of
surfacing as dozens of "pod to be Running" timeouts that blame Kubernetes.

The selectors are judged by the scheduler itself, not by a CEL reading of our own: a canary claim
of the profile's class with allocationMode All, for a pod held on each DRA node, is allocated
every device the class selects there; the allocation is compared with the devices the driver
publishes on that node, then the canary is removed (and its devices freed) before any test.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from clusters import health
from clusters.topology import parse_gates
from conformance.lib.checks import FAILED, NOT_TESTED, PASSED
from conformance.lib.objects import cleanup, pods
from conformance.lib.objects.special_claim import CLAIM_LIMIT, allocation_results
from conformance.lib.profile import Profile
from conformance.lib.setup.driver_setup import dra_nodes, published_devices
from kube.api import RESOURCE_API, Api, Obj
from kube.features import VERSIONS, DRAExtendedResource
from kube.versions import Minor
from kube.waits import WaitTimeout, wait_for

SCHEDULING_COMPONENTS = ("kube-scheduler", "kube-controller-manager")


@dataclass(frozen=True)
class Item:
    name: str
    verdict: str  # passed, failed, or not tested (cannot be seen on this cluster)
    detail: str = ""


def _said(expected: bool) -> str:
    return "on" if expected else "off"


def _metric_gate(api: Api, name: str, expected: bool, node: str | None = None) -> Item:
    try:
        state = health.feature_enabled(api.kubeconfig, DRAExtendedResource, node)
    except Exception as err:  # noqa: BLE001 - any failure to read is reported, not raised
        return Item(name, NOT_TESTED, f"metrics unreadable: {str(err).splitlines()[0][:200]}")
    if state is None:
        return Item(name, NOT_TESTED, f"no kubernetes_feature_enabled metric for {DRAExtendedResource}")
    return Item(
        name,
        PASSED if state == expected else FAILED,
        f"{DRAExtendedResource} is {_said(state)}, the suite needs it {_said(expected)}",
    )


def _flag_gate(api: Api, component: str, expected: bool, default: bool) -> list[Item]:
    """From each of the component's pods: its --feature-gates flag, else the version's default."""
    pods = api.list("v1", "Pod", namespace="kube-system", label_selector=f"component={component}")
    if not pods:
        return [
            Item(
                f"gate {component}",
                NOT_TESTED,
                f"no kube-system pod labelled component={component} (managed control plane?): its gate cannot be seen",
            )
        ]
    items = []
    for pod in pods:
        command = [
            *(pod["spec"]["containers"][0].get("command") or []),
            *(pod["spec"]["containers"][0].get("args") or []),
        ]
        flags = [arg.split("=", 1)[1] for arg in command if arg.startswith("--feature-gates=")]
        gates = parse_gates(",".join(flags)) if flags else {}
        state = gates.get(DRAExtendedResource, default)
        source = "--feature-gates" if DRAExtendedResource in gates else "the version's default"
        items.append(
            Item(
                f"gate {component} ({pod['spec'].get('nodeName')})",
                PASSED if state == expected else FAILED,
                f"{DRAExtendedResource} is {_said(state)} ({source}), the suite needs it {_said(expected)}",
            )
        )
    return items


def gate_items(api: Api, minor: Minor, expected: bool) -> list[Item]:
    row = VERSIONS.row_for(minor)
    default = bool(row and row.gate_default)
    items = [_metric_gate(api, "gate kube-apiserver", expected)]
    for component in SCHEDULING_COMPONENTS:
        items += _flag_gate(api, component, expected, default)
    items += [
        _metric_gate(api, f"gate kubelet ({node['metadata']['name']})", expected, node["metadata"]["name"])
        for node in api.list("v1", "Node")
    ]
    return items


def deviceclass_item(api: Api, profile: Profile) -> Item:
    name = f"deviceclass {profile.device_class}"
    cls = api.get(RESOURCE_API, "DeviceClass", profile.device_class)
    if cls is None:
        return Item(name, FAILED, "the profile's DeviceClass does not exist")
    got = (cls.get("spec") or {}).get("extendedResourceName")
    if got != profile.explicit_name:
        return Item(name, FAILED, f"extendedResourceName is {got!r}, the profile says {profile.explicit_name!r}")
    return Item(
        name,
        PASSED,
        f"extendedResourceName {got}"
        if got
        else f"no extendedResourceName, as the profile says: pods ask for {profile.implicit_resource_name}",
    )


def slice_items(api: Api, profile: Profile) -> list[Item]:
    nodes = dra_nodes(api, profile)
    if not nodes:
        return [Item("devices", FAILED, f"no node matches the profile's DRA node selector {profile.dra_node_selector}")]
    published = published_devices(api, profile)
    return [
        Item(
            f"devices ({node})",
            PASSED if published[node] == profile.devices_on(node) else FAILED,
            f"{profile.driver} publishes {published[node]} devices, the profile says {profile.devices_on(node)}",
        )
        for node in nodes
    ]


def pool_item(api: Api, profile: Profile) -> Item:
    """The driver's pools as the scheduler reads them: the slices of a pool's newest generation
    on one node that exists, and each device name once in the pool."""
    slices = [s for s in api.list(RESOURCE_API, "ResourceSlice") if s["spec"]["driver"] == profile.driver]
    nodes = {n["metadata"]["name"] for n in api.list("v1", "Node")}
    pools: dict[str, list[Obj]] = {}
    for s in slices:
        pools.setdefault(s["spec"]["pool"]["name"], []).append(s)
    problems = []
    for name, found in sorted(pools.items()):
        newest = max(s["spec"]["pool"].get("generation", 0) for s in found)
        current = [s for s in found if s["spec"]["pool"].get("generation", 0) == newest]
        named = sorted({n for s in current if (n := s["spec"].get("nodeName"))})
        if len(named) > 1:
            problems.append(f"pool {name} spans nodes {named}")
        if unknown := [n for n in named if n not in nodes]:
            problems.append(f"pool {name} names node(s) {unknown} that do not exist")
        twice = sorted(
            d for d, n in Counter(d["name"] for s in current for d in s["spec"].get("devices") or []).items() if n > 1
        )
        if twice:
            problems.append(f"pool {name} publishes device(s) {twice} more than once")
        expected = {s["spec"]["pool"].get("resourceSliceCount", 1) for s in current}
        if expected != {len(current)}:
            problems.append(
                f"pool {name} has {len(current)} slice(s) of generation {newest}, they say {sorted(expected)}"
            )
    return Item(
        "pools",
        FAILED if problems else PASSED,
        "; ".join(problems) or f"{len(pools)} pool(s) of {profile.driver}, each on one node, device names unique",
    )


def selector_items(api: Api, profile: Profile, timeout: float = 90) -> list[Item]:
    """Per DRA node: the profile's DeviceClass selects the driver's devices there, as the scheduler
    allocates them to a canary claim (allocationMode All) for a pod held on that node."""
    nodes = dra_nodes(api, profile)
    if not nodes or api.get(RESOURCE_API, "DeviceClass", profile.device_class) is None:
        return []  # named by the devices and deviceclass items
    namespace = f"kep5004-preflight-{uuid.uuid4().hex[:8]}"
    cleanup.new_namespace(api, namespace, profile.workload_pull_secret)
    try:
        for node in nodes:
            # A claim holds at most CLAIM_LIMIT devices: on a node with more, that many must be selectable.
            mode = (
                {"allocationMode": "All"}
                if profile.devices_on(node) <= CLAIM_LIMIT
                else {"allocationMode": "ExactCount", "count": CLAIM_LIMIT}
            )
            claim: Obj = {
                "apiVersion": RESOURCE_API,
                "kind": "ResourceClaim",
                "metadata": {"name": f"canary-{node}"[:63]},
                "spec": {
                    "devices": {
                        "requests": [{"name": "all", "exactly": {"deviceClassName": profile.device_class, **mode}}]
                    }
                },
            }
            api.create(claim, namespace)
            canary = pods.pod(
                f"canary-{node}"[:63],
                [
                    {
                        "name": "hold",
                        "image": profile.workload_image,
                        "imagePullPolicy": profile.workload_pull_policy,
                        "command": ["sleep", "3600"],
                        "resources": {"claims": [{"name": "all"}]},
                    }
                ],
            )
            canary["spec"]["resourceClaims"] = [{"name": "all", "resourceClaimName": claim["metadata"]["name"]}]
            canary["spec"]["affinity"] = pods.only_on([node])
            api.create(canary, namespace)
        # One deadline for all: the canaries were all created above and are allocated (or not) at once.
        deadline = time.monotonic() + timeout
        return [_selected_on(api, profile, namespace, node, max(1.0, deadline - time.monotonic())) for node in nodes]
    finally:
        api.delete("v1", "Namespace", namespace)
        # The canaries hold every device of their nodes until their claims are gone.
        wait_for(
            lambda: not api.list(RESOURCE_API, "ResourceClaim", namespace),
            timeout=180,
            interval=1,
            what=f"the preflight canaries in {namespace} to release their devices",
        )


def _selected_on(api: Api, profile: Profile, namespace: str, node: str, timeout: float) -> Item:
    name, published = f"deviceclass selects ({node})", profile.devices_on(node)
    wanted = min(published, CLAIM_LIMIT)
    claim_name = f"canary-{node}"[:63]
    try:
        claim = wait_for(
            lambda: (
                (c := api.get(RESOURCE_API, "ResourceClaim", claim_name, namespace))
                and (c.get("status") or {}).get("allocation")
                and c
            ),
            timeout=timeout,
            interval=1,
            what=f"a canary claim of class {profile.device_class} on {node} to be allocated",
        )
    except WaitTimeout:
        canary = pods.get(api, namespace, claim_name)
        if canary.get("spec", {}).get("nodeName"):
            # Bound with its claim unallocated: no allocator ran, whatever the class selects.
            return Item(
                name,
                FAILED,
                f"kube-scheduler bound the canary pod to {canary['spec']['nodeName']} without allocating its "
                f"claim of class {profile.device_class}: its DynamicResources plugin did not run (DRA off in "
                "the scheduler, or the plugin disabled in its profile)",
            )
        scheduled = pods.condition(canary, "PodScheduled")
        return Item(
            name,
            FAILED,
            f"the scheduler allocates no device of class {profile.device_class} on {node}: its "
            f"selectors select none of the {published} devices {profile.driver} publishes there "
            f"(canary pod: {scheduled.get('reason')}: {scheduled.get('message', '')[:300]})",
        )
    got = [r for r in allocation_results(claim) if r.get("driver") == profile.driver]
    limit = f" (a claim holds at most {CLAIM_LIMIT})" if published > CLAIM_LIMIT else ""
    return Item(
        name,
        PASSED if len(got) == wanted else FAILED,
        f"class {profile.device_class} selects {len(got)} of the {published} devices {profile.driver} "
        f"publishes on {node}{limit}",
    )


def run(api: Api, profile: Profile, minor: Minor, gate_expected: bool) -> list[Item]:
    items = [
        *gate_items(api, minor, gate_expected),
        deviceclass_item(api, profile),
        *slice_items(api, profile),
        pool_item(api, profile),
    ]
    # The canaries need the devices published as the profile says: otherwise those items name the cause.
    return items + (selector_items(api, profile) if not failed(items) else [])


def failed(items: list[Item]) -> list[Item]:
    return [i for i in items if i.verdict == FAILED]


def one_line(items: list[Item]) -> str:
    return "; ".join(f"{i.name}: {i.detail}" for i in failed(items))


def save(items: list[Item], path: Path) -> None:
    path.write_text(json.dumps([asdict(i) for i in items], indent=1))


def load(path: Path) -> list[Item]:
    return [Item(**i) for i in json.loads(path.read_text())] if path.exists() else []
