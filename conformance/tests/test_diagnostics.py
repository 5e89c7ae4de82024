"""A failing test's diagnostics never fail it a second time (no cluster needed)."""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from urllib3.exceptions import ProtocolError

from conformance.lib import diagnostics


class RestartingApi:
    """An API server that refuses the first `refusals` calls, then lists one pod of each kind."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals

    def list(self, version: str, kind: str, namespace: str | None = None, **selectors: str) -> list[dict]:
        if self.refusals:
            self.refusals -= 1
            raise ProtocolError("Connection aborted.", ConnectionResetError("connection reset by peer"))
        return [
            {
                "metadata": {"name": f"a-{kind.lower()}", "managedFields": ["noise"]},
                "involvedObject": {"name": "pod-a"},
                "reason": "Seen",
            }
        ]


def test_an_api_server_back_within_the_wait_gives_full_diagnostics(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(time, "sleep", lambda s: None)  # the waits between tries
    written = diagnostics.collect(RestartingApi(refusals=2), "ns", None, None, tmp_path)  # type: ignore[arg-type]
    assert {p.name for p in written} >= {"events.yaml", "pods.yaml", "resourceclaims.yaml"}
    pods = yaml.safe_load((tmp_path / "pods.yaml").read_text())
    assert pods == [{"metadata": {"name": "a-pod"}, "involvedObject": {"name": "pod-a"}, "reason": "Seen"}]
    assert yaml.safe_load((tmp_path / "events.yaml").read_text())[0]["reason"] == "Seen"


def test_an_api_server_that_stays_away_leaves_files_saying_so_instead_of_raising(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(diagnostics, "API_BACK_S", 0.05)
    written = diagnostics.collect(RestartingApi(refusals=10**6), "ns", None, None, tmp_path)  # type: ignore[arg-type]
    assert len(written) == 6
    for path in written:
        text = yaml.safe_load(path.read_text())
        assert text.startswith("(could not be read: timed out") and "ProtocolError" in text, path.name
