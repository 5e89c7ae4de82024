"""A serial test waits until the namespaces earlier tests deleted no longer hold devices."""
from __future__ import annotations

import pytest

from conformance.lib import cleanup
from kube.waits import WaitTimeout

DRIVER = "gpu.example.com"
ALLOCATED = {"allocation": {"devices": {"results": [
    {"driver": DRIVER, "pool": "worker", "device": "gpu-0", "request": "r"}]}}}
OTHER_DRIVER = {"allocation": {"devices": {"results": [
    {"driver": "gpu.nvidia.com", "pool": "worker", "device": "gpu-0", "request": "r"}]}}}


class Cluster:
    """Namespaces and claims as the API would list them; `polls` namespace lists, one per poll,
    each (name, being deleted, its claims' statuses)."""

    def __init__(self, polls: list[list[tuple[str, bool, list[dict]]]]) -> None:
        self.polls, self.poll = polls, 0

    def list(self, api_version: str, kind: str, namespace: str | None = None, **selectors: str) -> list[dict]:
        if kind == "Namespace":  # a new poll begins
            assert selectors == {"label_selector": cleanup.SELECTOR}
            self.poll += 1
        current = self.polls[min(self.poll, len(self.polls)) - 1]
        if kind == "Namespace":
            return [{"metadata": {"name": n, **({"deletionTimestamp": "2026-12-04T15:32:20Z"} if leaving else {})}}
                    for n, leaving, _ in current]
        if kind == "Pod":
            return []
        claims = next(c for n, _, c in current if n == namespace)
        return [{"metadata": {"name": f"claim-{i}"}, "status": status} for i, status in enumerate(claims)]


def test_only_claims_holding_the_drivers_devices_in_namespaces_being_deleted_count() -> None:
    api = Cluster([[("current", False, [ALLOCATED]), ("earlier", True, [ALLOCATED, {}]), ("idle", True, [{}]),
                   ("stranded", True, [OTHER_DRIVER])]])
    assert cleanup.held_by_departing(api, DRIVER) == ["earlier/claim-0 (worker/gpu-0)"]


def test_waits_until_the_devices_are_released() -> None:
    api = Cluster([[("earlier", True, [ALLOCATED])], [("earlier", True, [ALLOCATED])], [("earlier", True, [{}])]])
    cleanup.wait_devices_released(api, DRIVER, timeout=10)
    assert api.poll >= 3


def test_a_namespace_that_keeps_its_devices_is_named_with_what_it_holds() -> None:
    api = Cluster([[("stuck", True, [ALLOCATED])]])
    with pytest.raises(WaitTimeout, match=r"stuck/claim-0 \(worker/gpu-0\).*ResourceClaim stuck/claim-0: allocated"):
        cleanup.wait_devices_released(api, DRIVER, timeout=1.5)
