"""Has the cluster come back, after a fault, to what the spec promises without one?

The same oracle for every fault (FAULT-*): each pod using the name runs with the devices of its
special claim and sees exactly them; no device is allocated to two claims; no special claim is
left without its pod; the driver holds prepared exactly the claims of the pods on its node
(where the profile exposes that state).
"""

from __future__ import annotations

from collections.abc import Mapping

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import allocated_devices, is_special, special_claim, special_claims_of
from conformance.lib.oracles import devices, driver_state, scenario
from conformance.lib.oracles.scenario import Served
from conformance.lib.oracles.survivors import Snapshot
from conformance.lib.profile import Profile
from conformance.lib.target import Target
from kube.api import RESOURCE_API, TRANSIENT_ERRORS, Api, Obj
from kube.waits import wait_for

# Garbage collection of a deleted pod's claim: upstream's tests allow up to three minutes.
GC_TIMEOUT = 180


def converged(
    target: Target,
    check: Checks,
    rid: str,
    namespace: str,
    names: list[str],
    after: str,
    held_at_start: Mapping[str, frozenset[str]],
    timeout: float = 300,
) -> list[Served]:
    """Check `rid`: after `after` (e.g. 'the scheduler was killed'), the named pods and the
    cluster's claims and driver state are as if nothing had happened; the pods as served.
    held_at_start: the claims the driver held on each node before the test (the `held_at_start`
    fixture), left out of its state: earlier tests' or workloads' leftovers are not this test's."""
    api = target.api
    with check(rid, stop=True):
        wait_for(
            lambda: not not_running(api, namespace, names),
            timeout=timeout,
            interval=2,
            transient=TRANSIENT_ERRORS,
            what=f"pods {names} Running after {after}",
            describe=lambda: not_running_described(api, namespace, names),
        )
    # A driver that came back republishes its devices; until it has, what a container sees cannot
    # be told from the devices' published identities (the kubelet withdraws a gone plugin's slices).
    with check(rid, stop=True):
        wait_for(
            lambda: not unpublished_allocations(api, target.profile, namespace, names),
            timeout=timeout,
            interval=2,
            transient=TRANSIENT_ERRORS,
            what=f"the devices allocated to pods {names} published again after {after}",
            describe=lambda: f"in no ResourceSlice: {unpublished_allocations(api, target.profile, namespace, names)}",
        )
    served = [scenario.verify_served(target, check, pods.get(api, namespace, n), as_id=rid) for n in names]
    with check(rid):
        several = {s.pod["metadata"]["name"]: owned for s in served if len(owned := special_claims_of(api, s.pod)) != 1}
        assert not several, f"after {after}, pods owning other than one special claim: {several}"
    with check(rid):
        shared = devices_in_two_claims(api)
        assert not shared, f"after {after}, devices allocated to more than one claim: {shared}"
    with check(rid):
        wait_for(
            lambda: not orphaned_special_claims(api, namespace),
            timeout=GC_TIMEOUT,
            interval=3,
            what=f"no special claim in {namespace} without its pod after {after}",
            describe=lambda: f"claims whose pod is gone: {orphaned_special_claims(api, namespace)}",
            transient=TRANSIENT_ERRORS,
        )
    check_driver_holds_its_pods_claims(target, check, rid, served, after, held_at_start)
    return served


def unpublished_allocations(api: Api, profile: Profile, namespace: str, names: list[str]) -> list[str]:
    """pool/device allocated to the named pods' special claims and published in none of the driver's ResourceSlices."""
    published = devices.device_ids(api, profile)
    missing = []
    for name in names:
        claim = special_claim(api, pods.get(api, namespace, name)) or {}
        missing += [f"{pool}/{device}" for pool, device in allocated_devices(claim) if (pool, device) not in published]
    return missing


def not_running(api: Api, namespace: str, names: list[str]) -> list[str]:
    """The named pods whose phase is not Running."""
    return [n for n in names if (pods.get(api, namespace, n).get("status") or {}).get("phase") != "Running"]


def not_running_described(api: Api, namespace: str, names: list[str]) -> str:
    """What each of the named pods that is not Running looks like, for a timed-out wait."""
    return "; ".join(pods.summary(api, namespace, n) for n in not_running(api, namespace, names))


def wait_restarted(
    target: Target, check: Checks, rid: str, snaps: list[Snapshot], after: str, timeout: float = 300
) -> None:
    """`rid`: every container of the pods in `snaps` ran again after `after` (its restart count
    went up and it is ready). Until then the pod's status still shows the containers from before,
    and what they saw says nothing about the restart."""
    api = target.api

    def pending() -> list[str]:
        waiting = []
        for snap in snaps:
            statuses = (pods.get(api, snap.namespace, snap.name).get("status") or {}).get("containerStatuses") or []
            if not statuses or any(
                s.get("restartCount", 0) <= snap.restarts.get(s["name"], 0) or not s.get("ready") for s in statuses
            ):
                waiting.append(snap.name)
        return waiting

    with check(rid, stop=True):
        wait_for(
            lambda: not pending(),
            timeout=timeout,
            interval=2,
            transient=TRANSIENT_ERRORS,
            what=f"the containers of {[s.name for s in snaps]} to run again after {after}",
            describe=lambda: "; ".join(pods.summary(api, s.namespace, s.name) for s in snaps if s.name in pending()),
        )


def devices_in_two_claims(api: Api) -> dict[str, list[str]]:
    """pool/device -> the namespace/name of each claim it is allocated in, where more than one."""
    holders: dict[str, list[str]] = {}
    for claim in api.list(RESOURCE_API, "ResourceClaim"):
        for pool, device in allocated_devices(claim):
            holders.setdefault(f"{pool}/{device}", []).append(
                f"{claim['metadata']['namespace']}/{claim['metadata']['name']}"
            )
    return {device: names for device, names in holders.items() if len(names) > 1}


def orphaned_special_claims(api: Api, namespace: str) -> list[str]:
    """Special claims in the namespace whose owning pod (by uid) no longer exists."""
    live = {p["metadata"]["uid"] for p in api.list("v1", "Pod", namespace)}
    return [
        c["metadata"]["name"]
        for c in api.list(RESOURCE_API, "ResourceClaim", namespace)
        if is_special(c) and not {o.get("uid") for o in c["metadata"].get("ownerReferences") or []} & live
    ]


def claims_of_pods_on(served: list[Served]) -> dict[str, set[str]]:
    """node -> uids of the special claims of the served pods running there."""
    by_node: dict[str, set[str]] = {}
    for s in served:
        by_node.setdefault(s.pod["spec"]["nodeName"], set()).add(s.claim["metadata"]["uid"])
    return by_node


def check_driver_holds_its_pods_claims(
    target: Target,
    check: Checks,
    rid: str,
    served: list[Served],
    after: str,
    held_at_start: Mapping[str, frozenset[str]],
) -> None:
    """`rid`: on each node, the driver holds prepared every claim of the pods running there and
    none that no longer exists, but for those it held before the test began (the kubelet's
    unprepare of deleted pods may lag: waited for)."""
    api, profile = target.api, target.profile
    if profile.node_state is None:
        check.not_tested(rid, f"the driver's prepared claims after {after} not compared: {driver_state.NO_CAPABILITY}")
        return
    for node, wanted in claims_of_pods_on(served).items():

        def mismatch() -> str:
            held = driver_state.held_claims(api, profile, node)
            existing = {c["metadata"]["uid"] for c in api.list(RESOURCE_API, "ResourceClaim")}
            missing, stale = wanted - held, held - existing - held_at_start.get(node, frozenset())
            return (f"missing {sorted(missing)} " if missing else "") + (f"stale {sorted(stale)}" if stale else "")

        with check(rid):
            wait_for(
                lambda: not mismatch(),
                timeout=120,
                interval=3,
                what=f"the driver on {node} to hold prepared exactly its pods' claims after {after}",
                describe=mismatch,
                transient=TRANSIENT_ERRORS,
            )


def unbound_pods_with_special_claims(api: Api, namespace: str) -> dict[str, str]:
    """pod -> its special claims, for pods not bound to a node: what a scheduler that crashed in
    PreBind (which makes the claim, then names it in the pod's status) leaves behind."""
    found = {}
    for pod in api.list("v1", "Pod", namespace):
        if pod["spec"].get("nodeName"):
            continue
        claims = special_claims_of(api, pod)
        if claims:
            found[pod["metadata"]["name"]] = ", ".join(claims)
    return found


# What a pod's PodScheduled condition says after BUG-11: the scheduler found a special claim it
# had made before it restarted and not named in the pod's status, deleted it and gave up on the
# pod until its periodic retry of unschedulable pods.
LEFTOVER_CLAIM_DELETED = ("cannot schedule extended resource claim", "deletion of ResourceClaim completed")


def left_for_periodic_retry(api: Api, namespace: str, names: list[str]) -> list[str]:
    """Those of the named pods whose last scheduling attempt ended as BUG-11 leaves them."""

    def marked(pod: Obj | None) -> bool:
        message = pods.condition(pod or {}, "PodScheduled").get("message") or ""
        return all(mark in message for mark in LEFTOVER_CLAIM_DELETED)

    return [n for n in names if marked(api.get("v1", "Pod", n, namespace))]
