"""Pod networking for multi-node kind clusters without kindnetd.

Each node gets a ptp + host-local CNI config for the pod CIDR the controller manager gave
it, and a route to every other node's pod CIDR via that node's address on the kind
network. Nodes keep their CIDRs, so static routes are enough; a node whose container restarts
loses its routes and gets them again (clusters/faults.py).
"""
from __future__ import annotations

import json
from pathlib import Path

from clusters.shell import progress, run
from kube.api import TRANSIENT_ERRORS, Api
from kube.waits import WaitTimeout, wait_for

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


def node_addresses(api: Api) -> dict[str, tuple[str, str]]:
    """node name -> (InternalIP, podCIDR); the podCIDR is "" until the controller manager assigns one."""
    result: dict[str, tuple[str, str]] = {}
    for n in api.list("v1", "Node"):
        ip = next(a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP")
        result[n["metadata"]["name"]] = (ip, n["spec"].get("podCIDR", ""))
    return result


def install(api: Api, evidence: Path | None = None) -> None:
    """Routes and CNI configuration on every node; `evidence`: where to keep what a node's
    runtime showed if it did not take the configuration (see _wait_runtime_network)."""
    def assigned() -> dict[str, tuple[str, str]] | None:
        found = node_addresses(api)
        return found if found and all(cidr for _, cidr in found.values()) else None
    addresses = wait_for(assigned, timeout=120, what="a podCIDR on every node", interval=2,
                         describe=lambda: str(node_addresses(api)), transient=TRANSIENT_ERRORS)
    for node, (_, cidr) in addresses.items():
        routes = [f"ip route replace {other_cidr} via {other_ip}"
                  for other, (other_ip, other_cidr) in addresses.items() if other != node]
        script = "; ".join(["set -e", "sysctl -qw net.ipv4.ip_forward=1", *routes,
                            f"mkdir -p /etc/cni/net.d && cat > {CNI_CONFIG_PATH}"])
        run(["docker", "exec", "-i", node, "sh", "-c", script], input=cni_config(cidr))
    for node, (_, cidr) in addresses.items():
        _wait_runtime_network(node, cidr, evidence)


def runtime_network(node: str) -> tuple[bool, str]:
    """(ready, why not) of the node's container runtime network, as containerd reports it to the
    kubelet (`crictl info`): ready once it has loaded a CNI configuration."""
    info = json.loads(run(["docker", "exec", node, "crictl", "info"], check=False) or "{}")
    condition = next((c for c in (info.get("status") or {}).get("conditions") or [] if c.get("type") == "NetworkReady"),
                     {})
    return bool(condition.get("status")), str(info.get("lastCNILoadStatus") or condition.get("message") or "")


def _wait_runtime_network(node: str, cidr: str, evidence: Path | None) -> None:
    """Containerd loads a CNI configuration when its directory watch reports the file written.
    Twice, under the load of several clusters being made, a worker's containerd went on saying
    "cni plugin not initialized" with the file in place (docs/findings.md): the node then stays
    NotReady for good. Seen here, the runtime's view and the directory are kept as evidence and
    the file is written once more, which gives the watch a new event."""
    try:
        wait_for(lambda: runtime_network(node)[0], timeout=60, interval=1, what=f"the runtime network of {node}")
        return
    except WaitTimeout:
        pass
    state = run(["docker", "exec", node, "sh", "-c", "ls -la --time-style=full-iso /etc/cni/net.d; "
                 "crictl info; journalctl -u containerd --no-pager | tail -50"], check=False)
    if evidence is not None:
        evidence.mkdir(parents=True, exist_ok=True)
        (evidence / f"cni-{node}.txt").write_text(state)
    progress(f"{node}: containerd has not loaded {CNI_CONFIG_PATH} after 60 s ({runtime_network(node)[1]}); "
             f"writing it again" + (f", evidence in {evidence}" if evidence else ""))
    run(["docker", "exec", "-i", node, "sh", "-c", f"cat > {CNI_CONFIG_PATH}"], input=cni_config(cidr))
    wait_for(lambda: runtime_network(node)[0], timeout=60, interval=1, what=f"the runtime network of {node}",
             describe=lambda: runtime_network(node)[1])
