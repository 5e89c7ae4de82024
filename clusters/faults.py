"""Faults put on a kind cluster's nodes the way they happen to a real one: a process killed
with SIGKILL (no chance to clean up), a kubelet or a whole machine restarted.

Control-plane components are static pods, so the kubelet restarts a killed one as it would
after a crash; a killed driver container is restarted by its pod's restartPolicy.
"""

from __future__ import annotations

import shlex

from clusters import network
from clusters.nodes import Node
from clusters.shell import CommandError, run
from kube.api import Api

# crictl prints the container's main process id with this template.
PID_TEMPLATE = "{{.info.pid}}"


def main_pids(node: Node, *crictl_filter: str) -> list[str]:
    """The main process of every running container `crictl ps FILTER` lists on the node (e.g.
    --name '^kube-scheduler$', or --label io.kubernetes.pod.uid=UID), as the node sees it."""
    filters = " ".join(shlex.quote(f) for f in crictl_filter)
    ids = node.sh(f"crictl ps --state running -q {filters}").split()
    if not ids:
        raise CommandError(f"no running container matches `crictl ps {filters}` on {node.name}")
    return [node.sh(f"crictl inspect --output go-template --template '{PID_TEMPLATE}' {cid}").strip() for cid in ids]


def kill(node: Node, pids: list[str]) -> None:
    """SIGKILL: no chance to clean up. One command, so that a test can aim it at a moment."""
    node.sh(f"kill -KILL {' '.join(pids)}")


def freeze(node: Node, pids: list[str]) -> None:
    """SIGSTOP: the processes stay, holding their sockets, and answer nothing until killed (a
    stopped process still dies of SIGKILL). What is sent to them waits unread."""
    node.sh(f"kill -STOP {' '.join(pids)}")


def thaw(node: Node, pids: list[str]) -> None:
    """SIGCONT: frozen processes go on where they stopped."""
    node.sh(f"kill -CONT {' '.join(pids)}")


def run_for(node: Node, pids: list[str], seconds: float) -> None:
    """Frozen processes go on for `seconds` (as the node's `sleep` measures it) and are frozen
    again: one command, so that the step does not depend on how long a command takes to start."""
    node.sh(f"kill -CONT {' '.join(pids)}; sleep {seconds}; kill -STOP {' '.join(pids)}")


def unread_input(node: Node, pids: list[str]) -> list[str]:
    """The unix sockets of `pids` with something waiting to be read (`ss` lines): bytes a peer
    sent on a connection, or connections waiting on a listening socket (Recv-Q above 0)."""
    wanted = {f"pid={p}," for p in pids}
    waiting = []
    for line in node.sh("ss -xanpH").splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2].isdigit() and int(fields[2]) > 0 and any(w in line for w in wanted):
            waiting.append(" ".join(fields))
    return waiting


def kill_containers(node: Node, *crictl_filter: str) -> list[str]:
    """SIGKILL the main process of every container main_pids() finds; their pids."""
    pids = main_pids(node, *crictl_filter)
    kill(node, pids)
    return pids


def kill_component(node: Node, component: str) -> list[str]:
    """A control-plane component (kube-apiserver, kube-scheduler, ...) crashes; its kubelet restarts it."""
    return kill_containers(node, "--name", f"^{component}$")


def pod_pids(node: Node, pod_uid: str) -> list[str]:
    """The main process of every running container of one pod on the node."""
    return main_pids(node, "--label", f"io.kubernetes.pod.uid={pod_uid}")


def restart_machine(api: Api, node: Node) -> None:
    """The node's container restarts, as a machine reboots: every process and the network
    namespace's routes are gone; the files (kubelet state, CNI configuration) stay. The routes to
    other nodes' pod networks are put back as the cluster's network setup made them."""
    run(["docker", "restart", node.name], timeout=120)
    network.install(api, [n["metadata"]["name"] for n in api.list("v1", "Node")])
