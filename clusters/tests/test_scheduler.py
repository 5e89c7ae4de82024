"""Pausing kube-scheduler (no cluster: the node records what it was asked to run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusters import scheduler
from clusters.nodes import KindNodes


class Node:
    name, role = "kind-control-plane", "control-plane"

    def __init__(self) -> None:
        self.scripts: list[str] = []
        self.files = {scheduler.MANIFEST: MANIFEST}

    def sh(self, script: str, input: str | None = None, timeout: float = 600) -> str:
        self.scripts.append(script)
        if script.startswith("mv "):
            source, target = script.split()[1:]
            self.files[target] = self.files.pop(source)
        elif script.startswith("rm -f "):
            self.files.pop(script.split()[-1], None)
        return ""  # no scheduler container running

    def read(self, path: str) -> str:
        return self.files[path]

    def write(self, path: str, text: str) -> None:
        self.scripts.append(f"write {path}")
        self.files[path] = text


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch) -> Node:
    node = Node()
    monkeypatch.setattr(scheduler, "Api", lambda kubeconfig: None)
    monkeypatch.setattr(scheduler.health, "static_pod", lambda api, component, name: None)
    monkeypatch.setattr(
        scheduler.health,
        "wait_static_pods",
        lambda kubeconfig, name, components, marker: node.scripts.append(f"ready {marker}"),
    )
    return node


def test_the_scheduler_is_stopped_inside_and_running_again_after(node: Node) -> None:
    with scheduler.paused(Path("kubeconfig"), KindNodes("kind", (node,))):
        inside = list(node.scripts)
    assert inside[0] == f"mv {scheduler.MANIFEST} {scheduler.PAUSED}"
    assert inside[1] == "crictl ps --state running -q --name '^kube-scheduler$'"
    assert node.scripts[len(inside) :] == [
        f"write {scheduler.MANIFEST}",
        f"rm -f {scheduler.PAUSED}",
        "ready kube-scheduler",
    ]
    assert list(node.files) == [scheduler.MANIFEST]


def test_each_resume_is_a_static_pod_of_its_own(node: Node) -> None:
    """The same manifest moved back would be the same static pod UID, which the kubelet may still
    hold as finished and then never start."""
    resumed = []
    for _ in range(2):
        with scheduler.paused(Path("kubeconfig"), KindNodes("kind", (node,))):
            pass
        resumed.append(node.files[scheduler.MANIFEST])
    assert MANIFEST not in resumed and resumed[0] != resumed[1]
    assert all(scheduler.GENERATION in text and "kube-scheduler" in text for text in resumed)


def test_the_scheduler_runs_again_when_the_block_fails(node: Node) -> None:
    with pytest.raises(RuntimeError):
        with scheduler.paused(Path("kubeconfig"), KindNodes("kind", (node,))):
            raise RuntimeError("creating the pods failed")
    assert node.scripts[-3:] == [f"write {scheduler.MANIFEST}", f"rm -f {scheduler.PAUSED}", "ready kube-scheduler"]


def test_a_scheduler_that_does_not_come_back_is_described(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    def never_ready(kubeconfig: Path, name: str, components: tuple[str, ...], marker: str) -> None:
        raise scheduler.WaitTimeout("timed out after 300 s waiting for kube-scheduler")

    monkeypatch.setattr(scheduler.health, "wait_static_pods", never_ready)
    plain = node.sh
    monkeypatch.setattr(
        node, "sh", lambda script, **_: "Exited 3" if script.startswith("crictl ps -a") else plain(script)
    )
    with pytest.raises(
        scheduler.WaitTimeout, match=r"(?s)waiting for kube-scheduler\ncontainers on kind-control-plane:\nExited 3"
    ):
        with scheduler.paused(Path("kubeconfig"), KindNodes("kind", (node,))):
            pass


MANIFEST = """apiVersion: v1
kind: Pod
metadata:
  name: kube-scheduler
  namespace: kube-system
spec:
  containers:
  - name: kube-scheduler
    command: [kube-scheduler, --kubeconfig=/etc/kubernetes/scheduler.conf]
"""


def test_each_configuring_makes_a_pod_of_its_own() -> None:
    """Same configuration, another generation: another manifest, so another static pod (one that
    does not inherit a crashed predecessor's back-off)."""
    first, again = (scheduler.with_config(MANIFEST, "/etc/kubernetes/kep5004-scheduler/a.yaml", g) for g in "12")
    assert first != again
    assert "--config=/etc/kubernetes/kep5004-scheduler/a.yaml" in first
    assert f"{scheduler.GENERATION}: '1'" in first
