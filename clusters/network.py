"""Pod networking for multi-node kind clusters without kindnetd.

Each node gets a ptp + host-local CNI config for the pod CIDR the controller manager gave
it, and a route to every other node's pod CIDR via that node's address on the kind
network. Nodes never change after creation, so static routes are enough.
"""
from __future__ import annotations

import json
import time

from clusters.shell import run

CNI_CONFIG_PATH = "/etc/cni/net.d/10-kep5004.conflist"


def cni_config(pod_cidr: str) -> str:
    return json.dumps({
        "cniVersion": "1.0.0",
        "name": "kep5004",
        "plugins": [
            {
                "type": "ptp",
                "ipMasq": True,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": pod_cidr}]],
                         "routes": [{"dst": "0.0.0.0/0"}]},
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }, indent=2)


def node_addresses(kubectl: list[str], deadline_s: float = 120) -> dict[str, tuple[str, str]]:
    """node name -> (InternalIP, podCIDR), waiting for the controller manager to assign CIDRs."""
    end = time.monotonic() + deadline_s
    while True:
        nodes = json.loads(run([*kubectl, "get", "nodes", "-o", "json"]))["items"]
        result = {}
        for n in nodes:
            ip = next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")
            result[n["metadata"]["name"]] = (ip, n["spec"].get("podCIDR", ""))
        if result and all(cidr for _, cidr in result.values()):
            return result
        if time.monotonic() > end:
            raise TimeoutError(f"nodes without a podCIDR after {deadline_s:.0f} s: {result}")
        time.sleep(2)


def install(kubectl: list[str]) -> None:
    addresses = node_addresses(kubectl)
    for node, (_, cidr) in addresses.items():
        routes = [f"ip route replace {other_cidr} via {other_ip}"
                  for other, (other_ip, other_cidr) in addresses.items() if other != node]
        script = "; ".join(["set -e", "sysctl -qw net.ipv4.ip_forward=1", *routes,
                            f"mkdir -p /etc/cni/net.d && cat > {CNI_CONFIG_PATH}"])
        run(["docker", "exec", "-i", node, "sh", "-c", script], input=cni_config(cidr))
