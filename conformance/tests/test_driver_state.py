"""A claim's release on the node counts only once the driver's state was seen holding it (no cluster)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from conformance.lib.checks import Check, Checks
from conformance.lib.oracles import driver_state
from conformance.lib.profile import NodeState, load
from kube.api import NotRunning

UID = "0f1e2d3c-aaaa-bbbb-cccc-000000000001"


class DriverOnNode:
    """The API as the state reader sees it: one running driver pod whose command prints `listed`."""

    def __init__(self, listed: list[str], container: dict | None = None) -> None:
        self.listed = listed
        self.container = container if container is not None else {"running": {}}

    def list(self, *args, **kwargs) -> list[dict]:
        return [
            {
                "metadata": {"namespace": "drv", "name": "plugin-x"},
                "spec": {"containers": [{"name": "plugin"}]},
                "status": {"phase": "Running", "containerStatuses": [{"name": "plugin", "state": self.container}]},
            }
        ]

    def exec(self, namespace: str, name: str, command: list[str], container: str | None = None) -> str:
        return "".join(f"prepared {uid}\n" for uid in self.listed)


def profile_with_state():
    state = NodeState(("cat", "/state"), re.compile(r"prepared (?P<uid>[0-9a-f-]+)"), "app=plugin")
    return dataclasses.replace(load("fake-gpu"), node_state=state)


def recorded(run) -> list[Check]:
    checks: list[Check] = []
    run(Checks({"KUBELET-1"}, checks.append))
    return checks


def test_a_claim_seen_prepared_then_gone_is_released() -> None:
    api, profile = DriverOnNode([UID]), profile_with_state()
    held = driver_state.held_before(api, profile, "node-a", [UID])
    api.listed = []  # the pod is deleted; the driver unprepares
    got = recorded(lambda check: driver_state.check_released(api, profile, check, "KUBELET-1", held, timeout=1))
    assert [c.verdict for c in got] == ["passed"]


def test_a_state_that_never_listed_the_claim_cannot_show_its_release() -> None:
    """A nodeState that matches nothing used to 'release' every claim at once."""
    api, profile = DriverOnNode([]), profile_with_state()
    held = driver_state.held_before(api, profile, "node-a", [UID])
    got = recorded(lambda check: driver_state.check_released(api, profile, check, "KUBELET-1", held, timeout=1))
    assert [c.verdict for c in got] == ["failed"]
    assert "did not list claim(s)" in got[0].message and UID in got[0].message


def test_without_the_capability_the_release_is_not_tested() -> None:
    api, profile = DriverOnNode([UID]), dataclasses.replace(load("fake-gpu"), node_state=None)
    held = driver_state.held_before(api, profile, "node-a", [UID])
    got = recorded(lambda check: driver_state.check_released(api, profile, check, "KUBELET-1", held, timeout=1))
    assert [c.verdict for c in got] == ["not tested"]


def test_a_driver_pod_whose_container_is_created_again_is_not_read_yet() -> None:
    # The pod stays Running while the kubelet creates its crashed container again.
    api = DriverOnNode([UID], container={"waiting": {"reason": "ContainerCreating"}})
    with pytest.raises(NotRunning, match="no driver pod .* on node node-a with its container running"):
        driver_state.held_claims(api, profile_with_state(), "node-a")
    assert driver_state.held_before(api, profile_with_state(), "node-a", [UID]).unreadable
