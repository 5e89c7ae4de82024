"""Command-line flags of a control-plane component on a running kind cluster.

kubeadm runs each component as a static pod; changing a flag means rewriting its manifest, after
which the kubelet restarts the component. Used where a benchmark must lift a default that would
otherwise be what it measures (kube-controller-manager's client QPS of 20, for one).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from clusters import health
from clusters.nodes import KindNodes
from clusters.shell import progress

MANIFEST_DIR = "/etc/kubernetes/manifests"


def with_flags(command: list[str], flags: dict[str, str]) -> list[str]:
    """The command with each --name=value of `flags` set: replacing the flag where present."""
    names = {f"--{name}" for name in flags}
    kept = [arg for arg in command if arg.split("=", 1)[0] not in names]
    return [*kept, *(f"--{name}={value}" for name, value in flags.items())]


def set_flags(kubeconfig: Path, nodes: KindNodes, component: str, flags: dict[str, str]) -> None:
    """Run `component` with these flags; returns once its mirror pod shows them and is Ready."""
    node = nodes.control_planes[0]
    path = f"{MANIFEST_DIR}/{component}.yaml"
    pod = yaml.safe_load(node.read(path))
    container = pod["spec"]["containers"][0]
    container["command"] = with_flags(container["command"], flags)
    progress(f"{nodes.cluster}: {component} with {' '.join(f'--{k}={v}' for k, v in flags.items())}")
    node.write(path, yaml.safe_dump(pod, sort_keys=False))
    name, value = next(iter(flags.items()))
    health.wait_static_pods(kubeconfig, node.name, (component,), f"--{name}={value}")
