"""Reading the container runtime's network state as `crictl info` reports it (no cluster)."""

from __future__ import annotations

import json

import pytest

from clusters import network


@pytest.mark.parametrize(
    "info, expected",
    [
        (
            {
                "status": {
                    "conditions": [{"type": "RuntimeReady", "status": True}, {"type": "NetworkReady", "status": True}]
                },
                "lastCNILoadStatus": "OK",
            },
            (True, "OK"),
        ),
        (
            {
                "status": {
                    "conditions": [
                        {
                            "type": "NetworkReady",
                            "status": False,
                            "message": "Network plugin returns error: cni plugin not initialized",
                        }
                    ]
                },
                "lastCNILoadStatus": "cni config load failed: no network config found in /etc/cni/net.d",
            },
            (False, "cni config load failed: no network config found in /etc/cni/net.d"),
        ),
        ({}, (False, "")),
    ],
)
def test_runtime_network_is_ready_only_when_containerd_says_so(monkeypatch, info, expected) -> None:
    monkeypatch.setattr(network, "run", lambda args, check=True: json.dumps(info) if info else "")
    assert network.runtime_network("node-a") == expected


def test_configuration_waits_for_every_node_container_to_register(monkeypatch) -> None:
    """A worker whose kubelet registers after kind returned must get its configuration too."""
    seen = iter(
        [
            {"cp": ("10.0.0.2", "10.244.0.0/24")},
            {"cp": ("10.0.0.2", "10.244.0.0/24"), "worker": ("10.0.0.3", "")},
            {"cp": ("10.0.0.2", "10.244.0.0/24"), "worker": ("10.0.0.3", "10.244.1.0/24")},
        ]
    )
    state = {"addresses": next(seen)}

    def addresses(api):
        current = state["addresses"]
        state["addresses"] = next(seen, current)
        return current

    written = []
    monkeypatch.setattr(network, "node_addresses", addresses)
    monkeypatch.setattr(network, "run", lambda args, input=None, check=True: written.append(args[3]) or "")
    monkeypatch.setattr(network, "runtime_network", lambda node: (True, "OK"))
    monkeypatch.setattr(network, "wait_for", _no_sleep_wait)
    network.install(object(), ["cp", "worker"])
    assert written == ["cp", "worker"]


def _no_sleep_wait(probe, **kwargs):
    for _ in range(10):
        if value := probe():
            return value
    raise AssertionError(kwargs.get("what"))
