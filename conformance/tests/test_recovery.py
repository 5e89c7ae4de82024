"""The fault stage's convergence oracle on objects as the API returns them (no cluster needed)."""

from __future__ import annotations

from conformance.lib.objects.special_claim import ANNOTATION
from conformance.lib.oracles import recovery


def claim(namespace: str, name: str, owner_uid: str, devices: list[str], special: bool = True) -> dict:
    return {
        "metadata": {
            "namespace": namespace,
            "name": name,
            "annotations": {ANNOTATION: "true"} if special else {},
            "ownerReferences": [{"uid": owner_uid, "controller": True}],
        },
        "status": {"allocation": {"devices": {"results": [{"pool": "node-a", "device": d} for d in devices]}}},
    }


def pod(name: str, uid: str, node: str | None = None, status: dict | None = None) -> dict:
    return {
        "metadata": {"namespace": "ns", "name": name, "uid": uid},
        "spec": {"nodeName": node} if node else {},
        "status": status or {},
    }


class Api:
    """Lists of pods and claims, filtered by namespace as the real client does."""

    def __init__(self, pods: list[dict], claims: list[dict]) -> None:
        self.objects = {"Pod": pods, "ResourceClaim": claims}

    def list(self, api_version: str, kind: str, namespace: str | None = None, **selectors: str) -> list[dict]:
        return [o for o in self.objects[kind] if namespace is None or o["metadata"].get("namespace", "ns") == namespace]

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        return next((o for o in self.list(api_version, kind, namespace) if o["metadata"]["name"] == name), None)


def test_a_device_in_two_claims_is_named_with_both() -> None:
    api = Api([], [claim("a", "one", "u1", ["gpu-0", "gpu-1"]), claim("b", "two", "u2", ["gpu-1"])])
    assert recovery.devices_in_two_claims(api) == {"node-a/gpu-1": ["a/one", "b/two"]}


def test_only_special_claims_whose_pod_is_gone_are_orphans() -> None:
    api = Api(
        [pod("alive", "u1")],
        [
            claim("ns", "kept", "u1", []),
            claim("ns", "orphan", "gone", []),
            claim("ns", "users-own", "gone", [], special=False),
        ],
    )
    assert recovery.orphaned_special_claims(api, "ns") == ["orphan"]


def test_special_claims_of_unbound_pods_are_what_a_crash_in_prebind_leaves() -> None:
    api = Api(
        [
            pod("made", "u1"),
            pod("named", "u2", status={"extendedResourceClaimStatus": {"resourceClaimName": "c2"}}),
            pod("bound", "u3", node="node-a"),
            pod("nothing-yet", "u4"),
        ],
        [claim("ns", "c1", "u1", []), claim("ns", "c2", "u2", []), claim("ns", "c3", "u3", [])],
    )
    assert recovery.unbound_pods_with_special_claims(api, "ns") == {"made": "c1", "named": "c2"}


def scheduled_condition(message: str) -> dict:
    return {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]}


def test_only_pods_whose_leftover_claim_the_scheduler_deleted_are_left_for_its_periodic_retry() -> None:
    bug_11 = (
        "0/2 nodes are available: 1 cannot schedule extended resource claim, 1 node(s) didn't satisfy "
        "plugin(s) [DynamicResources NodeAffinity]. deletion of ResourceClaim completed, preemption: ..."
    )
    api = Api(
        [
            pod("stalled", "u1", status=scheduled_condition(bug_11)),
            pod(
                "short-of-devices",
                "u2",
                status=scheduled_condition("0/2 nodes are available: 2 Insufficient nvidia.com/gpu."),
            ),
            pod(
                "claim-found-not-deleted",
                "u3",
                status=scheduled_condition("0/2 nodes are available: 1 cannot schedule extended resource claim."),
            ),
            pod("not-tried-yet", "u4"),
        ],
        [],
    )
    assert recovery.left_for_periodic_retry(
        api, "ns", ["stalled", "short-of-devices", "claim-found-not-deleted", "not-tried-yet", "gone"]
    ) == ["stalled"]


class DriverState(Api):
    """Api, plus one running driver pod per node whose state command lists `held`."""

    def __init__(self, pods: list[dict], claims: list[dict], held: list[str]) -> None:
        super().__init__(pods, claims)
        self.held = held

    def list(self, api_version: str, kind: str, namespace: str | None = None, **selectors: str) -> list[dict]:
        if namespace == "drv":
            return [
                {
                    "metadata": {"namespace": "drv", "name": "plugin"},
                    "spec": {"containers": [{"name": "plugin"}]},
                    "status": {"phase": "Running", "containerStatuses": [{"name": "plugin", "state": {"running": {}}}]},
                }
            ]
        return super().list(api_version, kind, namespace)

    def exec(self, namespace: str, name: str, command: list[str], container: str | None = None) -> str:
        return "".join(f"prepared {uid}\n" for uid in self.held)


def test_the_driver_is_judged_on_claims_it_came_to_hold_during_the_test_only(monkeypatch) -> None:
    """A claim left prepared before the test (an earlier test's, a workload's) is not the test's
    failure; one of the test's own, gone but still held, is."""
    import dataclasses
    import re

    from conformance.lib.checks import Check, Checks
    from conformance.lib.oracles.scenario import Served
    from conformance.lib.profile import NodeState, load

    monkeypatch.setattr(
        recovery,
        "wait_for",
        lambda probe, **kw: probe() or (_ for _ in ()).throw(AssertionError(f"{kw['what']}: {kw['describe']()}")),
    )
    profile = dataclasses.replace(
        load("fake-gpu"),
        driver_namespace="drv",
        node_state=NodeState(("cat",), re.compile(r"prepared (?P<uid>\S+)"), "app=plugin"),
    )
    running = claim("ns", "c-run", "p-uid", ["gpu-0"]) | {"metadata": {"name": "c-run", "uid": "run"}}
    served = [Served(pod("p", "p-uid", "node-a"), running, {})]

    def judged(held: list[str]) -> list[Check]:
        target = type("Target", (), {"api": DriverState([], [running], held), "profile": profile})()
        checks: list[Check] = []
        recovery.check_driver_holds_its_pods_claims(
            target, Checks({"FAULT-1"}, checks.append), "FAULT-1", served, "the fault", {"node-a": frozenset({"old"})}
        )
        return checks

    assert [c.verdict for c in judged(["run", "old"])] == ["passed"]
    failed = judged(["run", "old", "leaked"])
    assert [c.verdict for c in failed] == ["failed"] and "stale ['leaked']" in failed[0].message


def test_devices_allocated_but_not_published_again_are_named_until_the_driver_republishes() -> None:
    from conformance.lib.profile import load

    profile = load("fake-gpu")
    running = pod(
        "p", "u1", "node-a", {"extendedResourceClaimStatus": {"resourceClaimName": "c", "requestMappings": []}}
    )
    api = Api([running], [claim("ns", "c", "u1", ["gpu-0", "gpu-1"])])
    api.objects["ResourceSlice"] = []  # the kubelet withdrew the restarted driver's slices
    assert recovery.unpublished_allocations(api, profile, "ns", ["p"]) == ["node-a/gpu-0", "node-a/gpu-1"]
    api.objects["ResourceSlice"] = [
        {
            "spec": {
                "driver": profile.driver,
                "pool": {"name": "node-a"},
                "devices": [{"name": "gpu-0", "attributes": {}}],
            }
        }
    ]
    assert recovery.unpublished_allocations(api, profile, "ns", ["p"]) == ["node-a/gpu-1"]
    api.objects["ResourceSlice"][0]["spec"]["devices"].append({"name": "gpu-1", "attributes": {}})
    assert recovery.unpublished_allocations(api, profile, "ns", ["p"]) == []
