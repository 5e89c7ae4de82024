"""Waiting for kube-apiserver to be ready, not merely answering."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from clusters import health
from kube.waits import WaitTimeout


class Server:
    """/readyz answers, one per read: an exception is raised, text is returned."""

    def __init__(self, answers: list) -> None:
        self.answers, self.reads = answers, 0

    def __call__(self, kubeconfig: Path) -> "Server":
        return self

    def raw(self, path: str) -> str:
        assert path == "/readyz"
        answer = self.answers[min(self.reads, len(self.answers) - 1)]
        self.reads += 1
        if isinstance(answer, BaseException):
            raise answer
        return answer


@pytest.fixture(autouse=True)
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "INTERVAL", 0.01)


def test_waits_through_a_restart_until_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server([ConnectionError("refused"), ApiException(status=500, reason="informer-sync not ready"), "ok\n"])
    monkeypatch.setattr(health, "Api", server)
    health.wait_api_ready(Path("kubeconfig"), timeout=5)
    assert server.reads == 3


def test_a_server_that_never_gets_ready_is_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "Api", Server([ApiException(status=500, reason="rbac/bootstrap-roles not ready")]))
    with pytest.raises(WaitTimeout, match="kube-apiserver ready"):
        health.wait_api_ready(Path("kubeconfig"), timeout=0.2)
