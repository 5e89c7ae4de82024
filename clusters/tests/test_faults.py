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
    faults.kill_pod(node, "1234")
    assert node.scripts[0] == "crictl ps --state running -q --label io.kubernetes.pod.uid=1234"


def test_nothing_to_kill_is_an_error_naming_the_node() -> None:
    with pytest.raises(CommandError, match="no running container matches .* on node-a"):
        faults.kill_component(Node(""), "kube-scheduler")
