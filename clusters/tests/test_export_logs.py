"""A cluster's exported logs include what each node forwards for Services (no cluster needed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clusters import lifecycle
from clusters.nodes import KindNodes
from clusters.shell import CommandError
from clusters.topology import ClusterSpec
from clusters.versions import resolve


class FakeNode:
    def __init__(self, name: str) -> None:
        self.name, self.scripts = name, []

    def sh(self, script: str, input: str | None = None, timeout: float = 600) -> str:
        self.scripts.append(script)
        return f"output of {script.split(' 2>&1')[0]} on {self.name}\n"


def test_each_node_s_rules_connections_and_routes_are_kept(monkeypatch, tmp_path: Path) -> None:
    nodes = (FakeNode("c-control-plane"), FakeNode("c-worker"))
    monkeypatch.setattr(lifecycle, "run", lambda *a, **k: "")
    monkeypatch.setattr(KindNodes, "of_cluster", classmethod(lambda cls, name: cls(name, nodes)))
    lifecycle.export_logs("c", tmp_path)
    for node in nodes:
        text = (tmp_path / node.name / "network.txt").read_text()
        assert all(f"$ {c}\noutput of {c} on {node.name}" in text for c in lifecycle.NODE_NETWORK)
        assert all(s.endswith("2>&1; true") for s in node.scripts)  # a missing tool is output, not an error


def test_a_cluster_already_gone_leaves_what_kind_exported(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(lifecycle, "run", lambda *a, **k: "")

    def gone(cls, name):
        raise CommandError(f"no running node containers of kind cluster {name!r}")

    monkeypatch.setattr(KindNodes, "of_cluster", classmethod(gone))
    assert lifecycle.export_logs("c", tmp_path) == tmp_path
    assert list(tmp_path.iterdir()) == []


def test_a_failed_creation_keeps_its_nodes_until_their_logs_are_exported(monkeypatch, tmp_path: Path) -> None:
    """kind deletes a failed cluster's nodes unless told to retain them: the logs named in the
    message would be empty."""
    events = []

    def create(command, check):
        events.append("create" + (" --retain" if "--retain" in command else ""))
        raise subprocess.CalledProcessError(1, command)

    monkeypatch.setattr(lifecycle.subprocess, "run", create)
    monkeypatch.setattr(lifecycle, "export_logs", lambda name, dest: events.append("export") or dest)
    monkeypatch.setattr(lifecycle, "run", lambda command, check=True: events.append(command[1]) or "")
    monkeypatch.setenv("KEP5004_CACHE", str(tmp_path))
    spec = ClusterSpec("dra", resolve("1.37"))
    with pytest.raises(CommandError, match="in 2 attempts; logs in"):
        lifecycle._create_with_retry(spec, tmp_path / "kubeconfig", tmp_path / "kind.yaml")
    assert events == ["create --retain", "export", "delete"] * 2
