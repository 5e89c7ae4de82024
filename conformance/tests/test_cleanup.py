"""A serial test waits until the namespaces earlier tests deleted no longer hold devices."""

from __future__ import annotations

import pytest

from conformance.lib.objects import cleanup
from kube.waits import WaitTimeout, set_timeout_scale

DRIVER = "gpu.example.com"
ALLOCATED = {
    "allocation": {"devices": {"results": [{"driver": DRIVER, "pool": "worker", "device": "gpu-0", "request": "r"}]}}
}
OTHER_DRIVER = {
    "allocation": {
        "devices": {"results": [{"driver": "gpu.nvidia.com", "pool": "worker", "device": "gpu-0", "request": "r"}]}
    }
}


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
            return [
                {"metadata": {"name": n, **({"deletionTimestamp": "2026-12-04T15:32:20Z"} if leaving else {})}}
                for n, leaving, _ in current
            ]
        if kind == "Pod":
            return []
        claims = next(c for n, _, c in current if n == namespace)
        return [{"metadata": {"name": f"claim-{i}"}, "status": status} for i, status in enumerate(claims)]


def test_only_claims_holding_the_drivers_devices_in_namespaces_being_deleted_count() -> None:
    api = Cluster(
        [
            [
                ("current", False, [ALLOCATED]),
                ("earlier", True, [ALLOCATED, {}]),
                ("idle", True, [{}]),
                ("stranded", True, [OTHER_DRIVER]),
            ]
        ]
    )
    assert cleanup.held_by_departing(api, DRIVER) == ["earlier/claim-0 (worker/gpu-0)"]


def test_waits_until_the_devices_are_released() -> None:
    api = Cluster([[("earlier", True, [ALLOCATED])], [("earlier", True, [ALLOCATED])], [("earlier", True, [{}])]])
    cleanup.wait_devices_released(api, DRIVER, timeout=10)
    assert api.poll >= 3


def test_a_namespace_that_keeps_its_devices_is_named_with_what_it_holds() -> None:
    api = Cluster([[("stuck", True, [ALLOCATED])]])
    with pytest.raises(WaitTimeout, match=r"stuck/claim-0 \(worker/gpu-0\).*ResourceClaim stuck/claim-0: allocated"):
        cleanup.wait_devices_released(api, DRIVER, timeout=1.5)


class NewNamespaces:
    """An API whose controller makes a namespace's default ServiceAccount after `lag` reads."""

    def __init__(self, lag: int) -> None:
        self.lag, self.created, self.reads = lag, [], 0

    def create(self, obj: dict) -> dict:
        self.created.append(obj)
        return obj

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        assert (kind, name) == ("ServiceAccount", "default") and namespace == self.created[-1]["metadata"]["name"]
        self.reads += 1
        return {"metadata": {"name": name}} if self.reads > self.lag else None


def test_a_new_namespace_is_labelled_and_ready_once_its_default_service_account_exists() -> None:
    api = NewNamespaces(lag=3)
    cleanup.new_namespace(api, "kep5004-x")
    assert api.created[0]["metadata"]["labels"] == {cleanup.LABEL: "true"} and api.reads == 4


def test_a_namespace_whose_service_account_never_comes_times_out_by_name() -> None:
    set_timeout_scale(0.001)
    try:
        with pytest.raises(WaitTimeout, match="default ServiceAccount of namespace kep5004-x"):
            cleanup.new_namespace(NewNamespaces(lag=10**9), "kep5004-x")
    finally:
        set_timeout_scale(1.0)


class WithPullSecret:
    """A cluster whose `drv/regcred` Secret exists and whose new namespaces get their ServiceAccount at once."""

    def __init__(self) -> None:
        self.created: list[tuple[dict, str | None]] = []
        self.patched: list[dict] = []

    def create(self, obj: dict, namespace: str | None = None) -> dict:
        self.created.append((obj, namespace))
        return obj

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        if kind == "Secret":
            return (
                {"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "e30="}}
                if (namespace, name) == ("drv", "regcred")
                else None
            )
        return {"metadata": {"name": name}}

    def resource(self, api_version: str, kind: str):
        patched = self.patched

        class Resource:
            def patch(self, **kwargs) -> None:
                patched.append({"kind": kind, **kwargs})

        return Resource()


def test_a_pull_secret_is_copied_in_and_named_by_the_default_service_account() -> None:
    api = WithPullSecret()
    cleanup.new_namespace(api, "kep5004-x", ("drv", "regcred"))
    secret, namespace = api.created[1]
    assert namespace == "kep5004-x" and secret["metadata"]["name"] == "regcred"
    assert secret["type"] == "kubernetes.io/dockerconfigjson" and secret["data"] == {".dockerconfigjson": "e30="}
    assert api.patched == [
        {
            "kind": "ServiceAccount",
            "name": "default",
            "namespace": "kep5004-x",
            "body": {"imagePullSecrets": [{"name": "regcred"}]},
            "content_type": "application/merge-patch+json",
        }
    ]
    with pytest.raises(AssertionError, match="pull secret drv/missing does not exist"):
        cleanup.new_namespace(WithPullSecret(), "kep5004-y", ("drv", "missing"))


class Leftovers:
    """Labelled namespaces, some already being deleted; every one is gone once the sweep has deleted
    what it was going to delete (the next list after a delete)."""

    def __init__(self, namespaces: list[tuple[str, bool]]) -> None:
        self.namespaces, self.deleted = namespaces, []

    def list(self, api_version: str, kind: str, **selectors: str) -> list[dict]:
        if kind != "Namespace" or self.deleted:
            return []
        return [
            {"metadata": {"name": n, **({"deletionTimestamp": "2026-12-08T02:20:00Z"} if leaving else {})}}
            for n, leaving in self.namespaces
        ]

    def delete(self, api_version: str, kind: str, name: str) -> None:
        self.deleted.append(name)


def test_the_sweep_reports_what_it_deleted_not_what_a_teardown_was_deleting() -> None:
    api = Leftovers([("left-behind", False), ("last-test", True)])
    assert cleanup.sweep(api, timeout=5) == ["Namespace/left-behind"]
    assert api.deleted == ["left-behind"]
