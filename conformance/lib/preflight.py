"""Preflight: is the cluster set up so that the suite's verdicts mean something?

Checked before any test, each a verdict of its own: the feature gate on every component
(kube-apiserver and each kubelet from their `kubernetes_feature_enabled` metric;
kube-scheduler and kube-controller-manager from their pods' `--feature-gates` flag, or the
version's default), the profile's DeviceClass and its `extendedResourceName`, and the devices
the driver publishes on each node the profile selects. A failure names its cause in one line
instead of surfacing as dozens of "pod to be Running" timeouts.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from clusters import health
from clusters.topology import parse_gates
from conformance.lib.checks import FAILED, NOT_TESTED, PASSED
from conformance.lib.driver_setup import dra_nodes, published_devices
from conformance.lib.profile import Profile
from conformance.lib.special_claim import RESOURCE_API
from kube.api import Api
from kube.features import VERSIONS, DRAExtendedResource

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
    return Item(name, PASSED if state == expected else FAILED,
                f"{DRAExtendedResource} is {_said(state)}, the suite needs it {_said(expected)}")


def _flag_gate(api: Api, component: str, expected: bool, default: bool) -> list[Item]:
    """From each of the component's pods: its --feature-gates flag, else the version's default."""
    pods = api.list("v1", "Pod", namespace="kube-system", label_selector=f"component={component}")
    if not pods:
        return [Item(f"gate {component}", NOT_TESTED, "no kube-system pod labelled component="
                     f"{component} (managed control plane?): its gate cannot be seen")]
    items = []
    for pod in pods:
        command = [*(pod["spec"]["containers"][0].get("command") or []), *(pod["spec"]["containers"][0].get("args") or [])]
        flags = [arg.split("=", 1)[1] for arg in command if arg.startswith("--feature-gates=")]
        gates = parse_gates(",".join(flags)) if flags else {}
        state = gates.get(DRAExtendedResource, default)
        source = "--feature-gates" if DRAExtendedResource in gates else "the version's default"
        items.append(Item(f"gate {component} ({pod['spec'].get('nodeName')})", PASSED if state == expected else FAILED,
                          f"{DRAExtendedResource} is {_said(state)} ({source}), the suite needs it {_said(expected)}"))
    return items


def gate_items(api: Api, minor: tuple[int, int], expected: bool) -> list[Item]:
    row = VERSIONS.row_for(minor)
    default = bool(row and row.gate_default)
    items = [_metric_gate(api, "gate kube-apiserver", expected)]
    for component in SCHEDULING_COMPONENTS:
        items += _flag_gate(api, component, expected, default)
    items += [_metric_gate(api, f"gate kubelet ({node['metadata']['name']})", expected, node["metadata"]["name"])
              for node in api.list("v1", "Node")]
    return items


def deviceclass_item(api: Api, profile: Profile) -> Item:
    name = f"deviceclass {profile.device_class}"
    cls = api.get(RESOURCE_API, "DeviceClass", profile.device_class)
    if cls is None:
        return Item(name, FAILED, "the profile's DeviceClass does not exist")
    got = (cls.get("spec") or {}).get("extendedResourceName")
    if got != profile.extended_resource_name:
        return Item(name, FAILED, f"extendedResourceName is {got!r}, the profile says {profile.extended_resource_name!r}")
    return Item(name, PASSED, f"extendedResourceName {got}")


def slice_items(api: Api, profile: Profile) -> list[Item]:
    nodes = dra_nodes(api, profile)
    if not nodes:
        return [Item("devices", FAILED, f"no node matches the profile's DRA node selector {profile.dra_node_selector}")]
    published = published_devices(api, profile)
    return [Item(f"devices ({node})", PASSED if published[node] == profile.devices_on(node) else FAILED,
                 f"{profile.driver} publishes {published[node]} devices, the profile says {profile.devices_on(node)}")
            for node in nodes]


def run(api: Api, profile: Profile, minor: tuple[int, int], gate_expected: bool) -> list[Item]:
    return [*gate_items(api, minor, gate_expected), deviceclass_item(api, profile), *slice_items(api, profile)]


def failed(items: list[Item]) -> list[Item]:
    return [i for i in items if i.verdict == FAILED]


def one_line(items: list[Item]) -> str:
    return "; ".join(f"{i.name}: {i.detail}" for i in failed(items))


def save(items: list[Item], path: Path) -> None:
    path.write_text(json.dumps([asdict(i) for i in items], indent=1))


def load(path: Path) -> list[Item]:
    return [Item(**i) for i in json.loads(path.read_text())] if path.exists() else []

