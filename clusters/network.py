"""Pod networking for multi-node kind clusters without kindnetd.

Each node gets a ptp + host-local CNI config for the pod CIDR the controller manager gave
it, and a route to every other node's pod CIDR via that node's address on the kind
network. Nodes keep their CIDRs, so static routes are enough; a node whose container restarts
loses its routes and gets them again (clusters/faults.py).
"""

from __future__ import annotations

import json
from typing import Any

from clusters.shell import run
from kube.api import TRANSIENT_ERRORS, Api
from kube.waits import wait_for

CNI_CONFIG_PATH = "/etc/cni/net.d/10-kep5004.conflist"


def cni_config(pod_cidr: str) -> str:
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": "kep5004",
            "plugins": [
                {
                    "type": "ptp",
                    "ipMasq": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": pod_cidr}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                    },
                },
                {"type": "portmap", "capabilities": {"portMappings": True}},
            ],
        },
        indent=2,
    )


def node_addresses(api: Api) -> dict[str, tuple[str, str]]:
    """node name -> (InternalIP, podCIDR); the podCIDR is "" until the controller manager assigns one."""
    result: dict[str, tuple[str, str]] = {}
    for n in api.list("v1", "Node"):
        ip = next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")
        result[n["metadata"]["name"]] = (ip, n["spec"].get("podCIDR", ""))
    return result


def install(api: Api, nodes: list[str]) -> None:
    """Routes and a CNI configuration on each of `nodes` (the cluster's node containers), once
    every one of them is registered with a podCIDR: kind returns when kubeadm join is done, and a
    loaded host's kubelet may register its Node only later. Taking the Nodes registered at that
    moment left such a worker without a configuration, NotReady for good (docs/findings.md)."""

    def assigned() -> dict[str, tuple[str, str]] | None:
        found = node_addresses(api)
        return found if set(nodes) <= set(found) and all(found[n][1] for n in nodes) else None

    addresses = wait_for(
        assigned,
        timeout=180,
        what=f"nodes {nodes} registered, each with a podCIDR",
        interval=2,
        describe=lambda: str(node_addresses(api)),
        transient=TRANSIENT_ERRORS,
    )
    for node, (_, cidr) in addresses.items():
        routes = [
            f"ip route replace {other_cidr} via {other_ip}"
            for other, (other_ip, other_cidr) in addresses.items()
            if other != node
        ]
        script = "; ".join(
            [
                "set -e",
                "sysctl -qw net.ipv4.ip_forward=1",
                *routes,
                f"mkdir -p /etc/cni/net.d && cat > {CNI_CONFIG_PATH}",
            ]
        )
        run(["docker", "exec", "-i", node, "sh", "-c", script], input=cni_config(cidr))
    for node in addresses:
        wait_for(
            lambda: runtime_network(node)[0],
            timeout=60,
            interval=1,
            what=f"the container runtime of {node} to load {CNI_CONFIG_PATH}",
            describe=lambda: runtime_network(node)[1],
        )


def runtime_network(node: str) -> tuple[bool, str]:
    """(ready, why not) of the node's container runtime network, as containerd reports it to the
    kubelet (`crictl info`): ready once it has loaded a CNI configuration."""
    info = json.loads(run(["docker", "exec", node, "crictl", "info"], check=False) or "{}")
    condition: dict[str, Any] = next(
        (c for c in (info.get("status") or {}).get("conditions") or [] if c.get("type") == "NetworkReady"), {}
    )
    return bool(condition.get("status")), str(info.get("lastCNILoadStatus") or condition.get("message") or "")
