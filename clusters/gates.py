"""Switching a feature gate in place on all four components of a running kind cluster.

The control-plane components get the gate in their static pod manifests' --feature-gates
flag, every kubelet in its configuration file (then a restart): what an operator does to
roll a gate back without rebuilding the cluster. Each step waits for the component to
report the new state before the next one, so a test starts only on a settled cluster.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from clusters import health
from clusters.nodes import KindNodes, Node
from clusters.shell import progress
from clusters.topology import parse_gates
from kube.api import TRANSIENT_ERRORS
from kube.waits import wait_for

CONTROL_PLANE_COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
MANIFEST_DIR = "/etc/kubernetes/manifests"
KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"
FLAG = "--feature-gates="


def gates_text(gates: dict[str, bool]) -> str:
    return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items()))


def with_gate(command: list[str], gate: str, value: bool) -> list[str]:
    """The command with gate=value merged into its --feature-gates flag (added if missing)."""
    gates: dict[str, bool] = {}
    rest = []
    for arg in command:
        if arg.startswith(FLAG):
            gates.update(parse_gates(arg[len(FLAG):]))
        else:
            rest.append(arg)
    gates[gate] = value
    return [*rest, FLAG + gates_text(gates)]


def patch_manifest(text: str, gate: str, value: bool) -> str:
    pod = yaml.safe_load(text)
    container = pod["spec"]["containers"][0]
    container["command"] = with_gate(container["command"], gate, value)
    return yaml.safe_dump(pod, sort_keys=False)


def patch_kubelet_config(text: str, gate: str, value: bool) -> str:
    config = yaml.safe_load(text)
    config.setdefault("featureGates", {})[gate] = value
    return yaml.safe_dump(config, sort_keys=False)


def _switch_control_plane(kubeconfig: Path, node: Node, gate: str, value: bool) -> None:
    for component in CONTROL_PLANE_COMPONENTS:
        path = f"{MANIFEST_DIR}/{component}.yaml"
        node.write(path, patch_manifest(node.read(path), gate, value))
    # Every component is checked for the exact flag it now runs with; the API server also by its metric.
    health.wait_static_pods(kubeconfig, node.name, CONTROL_PLANE_COMPONENTS, f"{gate}={str(value).lower()}")
    _wait_reported(kubeconfig, gate, value)


def _switch_kubelet(kubeconfig: Path, node: Node, gate: str, value: bool) -> None:
    node.write(KUBELET_CONFIG, patch_kubelet_config(node.read(KUBELET_CONFIG), gate, value))
    node.restart_kubelet()
    _wait_reported(kubeconfig, gate, value, node.name)


def _wait_reported(kubeconfig: Path, gate: str, value: bool, node: str | None = None) -> None:
    """Until kube-apiserver (or the kubelet on `node`) reports the gate as `value` in its metrics."""
    who = f"the kubelet on {node}" if node else "kube-apiserver"
    wait_for(lambda: health.feature_enabled(kubeconfig, gate, node) is value, timeout=180,
             what=f"{who} to report {gate}={value}", interval=health.INTERVAL,
             describe=lambda: f"{gate}={health.feature_enabled(kubeconfig, gate, node)}", transient=TRANSIENT_ERRORS)


def set_gate(kubeconfig: Path, nodes: KindNodes, gate: str, value: bool) -> None:
    """Switch every component; returns once all report the gate as set.

    Kubelets are switched on before the control plane and off after it: a scheduler with the
    gate on binds pods with a special claim that a kubelet with the gate off never prepares,
    so their containers start without devices (seen on 1.36.3, docs/findings.md)."""
    def control_plane() -> None:
        for node in nodes.control_planes:
            progress(f"{nodes.cluster}: {gate}={value} in the control plane of {node.name}")
            _switch_control_plane(kubeconfig, node, gate, value)

    def kubelets() -> None:
        for node in nodes.nodes:
            progress(f"{nodes.cluster}: {gate}={value} in the kubelet of {node.name}")
            _switch_kubelet(kubeconfig, node, gate, value)

    for step in ((kubelets, control_plane) if value else (control_plane, kubelets)):
        step()
    health.wait_nodes_ready(kubeconfig)
