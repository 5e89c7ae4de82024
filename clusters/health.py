"""Waiting for a cluster to be healthy again after its nodes or components were changed."""
from __future__ import annotations

import json
import re
from pathlib import Path

from clusters.shell import poll, run
from clusters.versions import KubeVersion, default_version, kubernetes_bin


def kubectl_cmd(kubeconfig: Path, version: KubeVersion | None = None) -> list[str]:
    """Our kubectl (of `version`, default the pinned default) against any kubeconfig."""
    return [str(kubernetes_bin(version or default_version(), "kubectl")), f"--kubeconfig={kubeconfig}"]


def kubectl(kubeconfig: Path, *args: str, input: str | None = None) -> str:
    return run([*kubectl_cmd(kubeconfig), *args], input=input)


def get_json(kubeconfig: Path, *args: str) -> dict:
    return json.loads(kubectl(kubeconfig, "get", *args, "-o", "json"))


def _ready(obj: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions") or [])


def node_states(kubeconfig: Path) -> dict[str, tuple[bool, str]]:
    """node -> (Ready, kubelet version)."""
    return {n["metadata"]["name"]: (_ready(n), n["status"]["nodeInfo"]["kubeletVersion"])
            for n in get_json(kubeconfig, "nodes")["items"]}


def wait_nodes_ready(kubeconfig: Path, kubelet_version: str | None = None, timeout: float = 300) -> None:
    """Every node Ready (and running `kubelet_version`, if given)."""
    def done() -> bool:
        states = node_states(kubeconfig)
        return bool(states) and all(ok and kubelet_version in (None, v) for ok, v in states.values())
    what = "every node Ready" + (f" with kubelet {kubelet_version}" if kubelet_version else "")
    poll(done, timeout, what, describe=lambda: str(node_states(kubeconfig)))


def server_version(kubeconfig: Path) -> str:
    return json.loads(kubectl(kubeconfig, "version", "-o", "json"))["serverVersion"]["gitVersion"]


def static_pod(kubeconfig: Path, component: str, node: str) -> dict | None:
    """The mirror pod of a control-plane component on a node (kubeadm labels them component=<name>)."""
    items = get_json(kubeconfig, "pods", "-n", "kube-system", "-l", f"component={component}",
                     "--field-selector", f"spec.nodeName={node}")["items"]
    return items[0] if items else None


def wait_static_pods(kubeconfig: Path, node: str, components: tuple[str, ...], marker: str,
                     timeout: float = 300) -> None:
    """Each component's mirror pod runs a container whose command or image contains `marker`, and is Ready."""
    def current(component: str) -> bool:
        pod = static_pod(kubeconfig, component, node)
        if not pod or not _ready(pod):
            return False
        c = pod["spec"]["containers"][0]
        return any(marker in part for part in [c["image"], *(c.get("command") or [])])
    poll(lambda: all(current(c) for c in components), timeout, f"{', '.join(components)} on {node} with {marker!r}",
         describe=lambda: str({c: current(c) for c in components}))


def feature_enabled(kubeconfig: Path, gate: str, node: str | None = None) -> bool | None:
    """What the API server (or a node's kubelet) reports in kubernetes_feature_enabled for `gate`."""
    path = f"/api/v1/nodes/{node}/proxy/metrics" if node else "/metrics"
    m = re.search(rf'^kubernetes_feature_enabled{{name="{re.escape(gate)}"[^}}]*}} (\d)', kubectl(kubeconfig, "get", "--raw", path),
                  re.MULTILINE)
    return None if m is None else m.group(1) == "1"
