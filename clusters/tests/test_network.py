"""Reading the container runtime's network state as `crictl info` reports it (no cluster)."""
from __future__ import annotations

import json

import pytest

from clusters import network


@pytest.mark.parametrize("info, expected", [
    ({"status": {"conditions": [{"type": "RuntimeReady", "status": True}, {"type": "NetworkReady", "status": True}]},
      "lastCNILoadStatus": "OK"}, (True, "OK")),
    ({"status": {"conditions": [{"type": "NetworkReady", "status": False,
                                 "message": "Network plugin returns error: cni plugin not initialized"}]},
      "lastCNILoadStatus": "cni config load failed: no network config found in /etc/cni/net.d"},
     (False, "cni config load failed: no network config found in /etc/cni/net.d")),
    ({}, (False, "")),
])
def test_runtime_network_is_ready_only_when_containerd_says_so(monkeypatch, info, expected) -> None:
    monkeypatch.setattr(network, "run", lambda args, check=True: json.dumps(info) if info else "")
    assert network.runtime_network("node-a") == expected
