"""kubeadm upgrade apply is tried again only when it stopped before changing anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusters import health, upgrade
from clusters.shell import CommandError
from kube.versions import KubeVersion

PREFLIGHT = (
    "`kubeadm upgrade apply` exited 1: error execution phase preflight: the version argument is invalid: "
    "Unable to fetch cluster version: Couldn't fetch cluster version from the API Server"
)
COMPONENT_CONFIGS = (
    "`kubeadm upgrade apply` exited 1: error: [upgrade] FATAL: failed to get component configs: could "
    'not download the kubelet configuration from ConfigMap "kubelet-config": Get "https://'
    'kind-control-plane:6443/api/v1/namespaces/kube-system/configmaps/kubelet-config?timeout=10s": '
    "dial tcp 172.18.0.20:6443: connect: connection refused"
)
# Seen in the full job (2026-12-05) right after the control plane's kubelet was swapped for the
# older one, which replaced the API server's static pod under kubeadm.
NODE_REGISTRATION = (
    "`kubeadm upgrade apply` exited 1: error: [upgrade] FATAL: failed to get node registration: failed "
    'to get corresponding node: Get "https://kind-control-plane:6443/api/v1/nodes/kind-control-plane'
    '?timeout=10s": dial tcp 172.18.0.16:6443: connect: connection refused - error from a previous '
    "attempt: unexpected EOF"
)


class FlakyNode:
    name = "kind-control-plane"

    def __init__(self, *failures: str):
        self.failures = list(failures)
        self.commands: list[str] = []

    def sh(self, command: str, timeout: float = 600) -> str:
        self.commands.append(command)
        if self.failures:
            raise CommandError(self.failures.pop(0))
        return ""


@pytest.fixture(autouse=True)
def _no_cluster(monkeypatch):
    monkeypatch.setattr(health, "wait_api_ready", lambda kubeconfig: None)
    monkeypatch.setattr(health, "wait_static_pods", lambda *args: None)


def apply(node: FlakyNode) -> None:
    upgrade._apply_control_plane(Path("kubeconfig"), node, KubeVersion.parse("v1.35.4"), force=True)


def test_a_preflight_failure_is_tried_again() -> None:
    node = FlakyNode(PREFLIGHT)
    apply(node)
    assert len(node.commands) == 2 and node.commands[0] == node.commands[1]
    assert node.commands[0].endswith("--etcd-upgrade=false --patches=/kep5004/kubeadm-patches --force")


@pytest.mark.parametrize("failure", [COMPONENT_CONFIGS, NODE_REGISTRATION])
def test_a_failure_to_read_the_clusters_configuration_is_tried_again(failure: str) -> None:
    node = FlakyNode(failure)
    apply(node)
    assert len(node.commands) == 2 and node.commands[0] == node.commands[1]


def test_a_failure_after_the_preflight_is_not_tried_again() -> None:
    node = FlakyNode("`kubeadm upgrade apply` exited 1: error execution phase control-plane: timed out")
    with pytest.raises(CommandError, match="control-plane"):
        apply(node)
    assert len(node.commands) == 1


def test_preflight_failures_give_up_after_the_last_attempt() -> None:
    node = FlakyNode(*[PREFLIGHT] * upgrade.APPLY_ATTEMPTS)
    with pytest.raises(CommandError, match="preflight"):
        apply(node)
    assert len(node.commands) == upgrade.APPLY_ATTEMPTS
