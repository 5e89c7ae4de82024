"""Switching a feature gate in place on all four components of a running kind cluster.

The control-plane components get the gate in their static pod manifests' --feature-gates
flag, every kubelet in its configuration file (then a restart): what an operator does to
roll a gate back without rebuilding the cluster. Each step waits for the component to
report the new state before the next one, so a test starts only on a settled cluster.

Where the gate is locked (GA), only a control plane emulating an older minor
(--emulated-version) may switch it off; kubelets have no such flag and keep it on.
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
EMULATED = "--emulated-version="


def gates_text(gates: dict[str, bool]) -> str:
    return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items()))


def with_gate(command: list[str], gate: str, value: bool, emulated: str | None = None) -> list[str]:
    """The command with gate=value merged into its --feature-gates flag (added if missing), and
    --emulated-version set to `emulated` (removed when None)."""
    gates: dict[str, bool] = {}
    rest = []
    for arg in command:
        if arg.startswith(FLAG):
            gates.update(parse_gates(arg[len(FLAG) :]))
        elif not arg.startswith(EMULATED):
            rest.append(arg)
    gates[gate] = value
    return [*rest, *([EMULATED + emulated] if emulated else []), FLAG + gates_text(gates)]


def patch_manifest(text: str, gate: str, value: bool, emulated: str | None = None) -> str:
    pod = yaml.safe_load(text)
    container = pod["spec"]["containers"][0]
    container["command"] = with_gate(container["command"], gate, value, emulated)
    return yaml.safe_dump(pod, sort_keys=False)


def patch_kubelet_config(text: str, gate: str, value: bool) -> str:
    config = yaml.safe_load(text)
    config.setdefault("featureGates", {})[gate] = value
    return yaml.safe_dump(config, sort_keys=False)


def _switch_control_plane(kubeconfig: Path, node: Node, gate: str, value: bool, emulated: str | None) -> None:
    for component in CONTROL_PLANE_COMPONENTS:
        path = f"{MANIFEST_DIR}/{component}.yaml"
        node.write(path, patch_manifest(node.read(path), gate, value, emulated))
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
    wait_for(
        lambda: health.feature_enabled(kubeconfig, gate, node) is value,
        timeout=180,
        what=f"{who} to report {gate}={value}",
        interval=health.INTERVAL,
        describe=lambda: f"{gate}={health.feature_enabled(kubeconfig, gate, node)}",
        transient=TRANSIENT_ERRORS,
    )


def set_gate(
    kubeconfig: Path, nodes: KindNodes, gate: str, value: bool, emulated: str | None = None, kubelets: bool = True
) -> None:
    """Switch every component; returns once all report the gate as set.

    Kubelets are switched on before the control plane and off after it: a scheduler with the
    gate on binds pods with a special claim that a kubelet with the gate off never prepares,
    so their containers start without devices (seen on 1.36.3, docs/upstream/gate-enable-order.md).
    With `emulated` (a minor such as "1.36") the control plane emulates it: the way to switch
    off a gate that is locked on in this version, where kubelets (which cannot emulate) are
    left alone (`kubelets=False`); switching back on without `emulated` removes the emulation."""

    def control_plane() -> None:
        for node in nodes.control_planes:
            emulation = f" emulating {emulated}" if emulated else ""
            progress(f"{nodes.cluster}: {gate}={value} in the control plane of {node.name}{emulation}")
            _switch_control_plane(kubeconfig, node, gate, value, emulated)

    def switch_kubelets() -> None:
        if not kubelets:
            return
        for node in nodes.nodes:
            progress(f"{nodes.cluster}: {gate}={value} in the kubelet of {node.name}")
            _switch_kubelet(kubeconfig, node, gate, value)

    for step in (switch_kubelets, control_plane) if value else (control_plane, switch_kubelets):
        step()
    health.wait_nodes_ready(kubeconfig)


# Where each component's binary is: kubelets on the node itself, the control plane in its image.
_IMAGE = "registry.k8s.io/{component}:{version}"
# What makes each one exit right after checking its flags: a configuration it cannot read (the
# API server has no such flag: without --etcd-servers it stops at its own validation).
_UNUSABLE = {
    "kubelet": "--config=/nonexistent/kep5004-kubelet.yaml",
    "kube-apiserver": "",
    "kube-scheduler": "--kubeconfig=/nonexistent/kep5004.conf",
    "kube-controller-manager": "--kubeconfig=/nonexistent/kep5004.conf",
}


def try_start(nodes: KindNodes, component: str, version: str, flags: list[str]) -> str:
    """Start one more `component` of the cluster's own binary with `flags` and nothing it could
    run with, so that it exits right after checking its flags; what it printed. Used to see
    which flags a component refuses, without touching the running one."""
    command = " ".join([component, *flags, _UNUSABLE[component]])
    if component == "kubelet":
        node = nodes.workers[0] if nodes.workers else nodes.control_planes[0]
    else:
        node = nodes.control_planes[0]
        image = _IMAGE.format(component=component, version=version)
        command = f"ctr -n k8s.io run --rm {image} kep5004-try-{component} {command}"
    return node.sh(f"timeout 60 {command} 2>&1; echo exit=$?")
