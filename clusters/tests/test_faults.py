"""Fault injection commands (no cluster: the node records what it was asked to run)."""

from __future__ import annotations

import pytest

from clusters import faults
from clusters.shell import CommandError


class Node:
    def __init__(self, running: str) -> None:
        self.name, self.running, self.scripts = "node-a", running, []

    def sh(self, script: str, input: str | None = None, timeout: float = 600) -> str:
        self.scripts.append(script)
        if script.startswith("crictl ps"):
            return self.running
        return f"{100 + len(self.scripts)}\n" if script.startswith("crictl inspect") else ""


def test_every_matching_container_gets_sigkill_through_its_main_process() -> None:
    node = Node("abc\ndef\n")
    assert faults.kill_component(node, "kube-scheduler") == ["102", "103"]
    assert node.scripts[0] == "crictl ps --state running -q --name '^kube-scheduler$'"
    assert node.scripts[1:3] == [
        f"crictl inspect --output go-template --template '{{{{.info.pid}}}}' {cid}" for cid in ("abc", "def")
    ]
    assert node.scripts[3:] == ["kill -KILL 102 103"]


def test_a_pods_containers_are_found_by_its_uid() -> None:
    node = Node("abc\n")
    assert faults.pod_pids(node, "1234") == ["102"]
    assert node.scripts[0] == "crictl ps --state running -q --label io.kubernetes.pod.uid=1234"


def test_processes_are_frozen_with_sigstop_and_thawed_with_sigcont() -> None:
    node = Node("")
    faults.freeze(node, ["7", "8"])
    faults.run_for(node, ["7", "8"], 0.02)
    faults.thaw(node, ["7", "8"])
    assert node.scripts == ["kill -STOP 7 8", "kill -CONT 7 8; sleep 0.02; kill -STOP 7 8", "kill -CONT 7 8"]


# `ss -xanpH` as a kind node prints it (columns: netid, state, Recv-Q, Send-Q, local, port, peer,
# port, process); pid 650 is the driver, 303 the kubelet.
SOCKETS = """\
u_str LISTEN 0 4096 /var/lib/kubelet/plugins/gpu/dra.sock 101 * 0 users:(("driver",pid=650,fd=9))
u_str LISTEN 2 4096 /var/lib/kubelet/plugins_registry/gpu-reg.sock 102 * 0 users:(("driver",pid=6501,fd=7))
u_str ESTAB 133 0 /var/lib/kubelet/plugins/gpu/dra.sock 103 * 104 users:(("driver",pid=650,fd=12))
u_str ESTAB 0 0 /var/lib/kubelet/plugins/gpu/dra.sock 105 * 106 users:(("driver",pid=650,fd=13))
u_str ESTAB 90 0 * 104 * 103 users:(("kubelet",pid=303,fd=24))
"""


class Sockets(Node):
    def sh(self, script: str, input: str | None = None, timeout: float = 600) -> str:
        self.scripts.append(script)
        return SOCKETS


def test_unread_input_is_what_waits_in_the_given_processes_sockets() -> None:
    waiting = faults.unread_input(Sockets(""), ["650"])
    assert waiting == [" ".join(SOCKETS.splitlines()[2].split())]
    assert faults.unread_input(Sockets(""), ["6501"])[0].startswith("u_str LISTEN 2")
    assert faults.unread_input(Sockets(""), ["999"]) == []


def test_nothing_to_kill_is_an_error_naming_the_node() -> None:
    with pytest.raises(CommandError, match="no running container matches .* on node-a"):
        faults.kill_component(Node(""), "kube-scheduler")
