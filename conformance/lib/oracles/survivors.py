"""Pods that must come through a disruption (upgrade, gate switch, driver update) untouched.

A snapshot records what a served pod looked like; `check_unchanged` compares the pod after the disruption:
the same pod (uid) still Running with no container restarted, the same special claim (uid) still
allocated the same devices and reserved for it, the status still naming it, and every container
still seeing its devices.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.lib.checks import Checks, CheckStopped
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import allocated_devices, claim_status
from conformance.lib.oracles import scenario
from conformance.lib.oracles.scenario import Served
from conformance.lib.target import Target
from kube.api import RESOURCE_API, Api, Obj
from kube.waits import holds_for


@dataclass(frozen=True)
class Snapshot:
    namespace: str
    name: str
    uid: str
    claim: str
    claim_uid: str
    devices: list[tuple[str, str]]
    restarts: dict[str, int]
    seen: dict[str, list[str]]


def _restarts(pod: Obj) -> dict[str, int]:
    return {s["name"]: s.get("restartCount", 0) for s in (pod.get("status") or {}).get("containerStatuses") or []}


def snapshot(served: Served) -> Snapshot:
    pod, claim = served.pod, served.claim
    return Snapshot(
        pod["metadata"]["namespace"],
        pod["metadata"]["name"],
        pod["metadata"]["uid"],
        claim["metadata"]["name"],
        claim["metadata"]["uid"],
        allocated_devices(claim),
        _restarts(pod),
        served.seen,
    )


def _running_unchanged(api: Api, snap: Snapshot) -> bool:
    pod = api.get("v1", "Pod", snap.name, snap.namespace)
    return bool(
        pod
        and pod["metadata"]["uid"] == snap.uid
        and (pod.get("status") or {}).get("phase") == "Running"
        and _restarts(pod) == snap.restarts
    )


def check_unchanged(
    target: Target,
    check: Checks,
    snaps: list[Snapshot],
    req_id: str,
    after: str,
    settle: float = 20,
    classes: dict[str, str] | None = None,
) -> list[Served]:
    """Check `req_id`: the pods came through `after` (e.g. 'the upgrade to v1.37.2') unchanged.

    A restarted kubelet re-admits its pods a few seconds after it reports ready, so the pods
    must first stay Running for `settle` seconds; a pod that does not ends the test.
    classes: as for scenario.verify_served (pods asking for names of classes of their own)."""
    api = target.api
    with check(req_id, stop=True):
        holds_for(
            lambda: all(_running_unchanged(api, s) for s in snaps),
            duration=settle,
            what=f"pods {[s.name for s in snaps]} Running without restarts after {after}",
            describe=lambda: "; ".join(
                pods.summary(api, s.namespace, s.name) for s in snaps if not _running_unchanged(api, s)
            ),
        )
    return [_check_one(target, check, s, req_id, after, classes) for s in snaps]


def _check_one(
    target: Target, check: Checks, before: Snapshot, req_id: str, after: str, classes: dict[str, str] | None
) -> Served:
    api = target.api
    pod = api.get("v1", "Pod", before.name, before.namespace)
    claim = api.get(RESOURCE_API, "ResourceClaim", before.claim, before.namespace)
    problems = []
    if pod is None or pod["metadata"]["uid"] != before.uid:
        problems.append(f"pod {before.name} (uid {before.uid}) is gone")
    else:
        if (pod.get("status") or {}).get("phase") != "Running":
            problems.append(f"pod {before.name} is {pod['status'].get('phase')}, not Running")
        if _restarts(pod) != before.restarts:
            problems.append(f"container restarts went from {before.restarts} to {_restarts(pod)}")
        status = claim_status(pod) or {}
        if status.get("resourceClaimName") != before.claim:
            problems.append(
                f"extendedResourceClaimStatus names {status.get('resourceClaimName')!r}, not {before.claim}"
            )
    if claim is None or claim["metadata"]["uid"] != before.claim_uid:
        problems.append(f"special claim {before.claim} (uid {before.claim_uid}) is gone")
    else:
        if allocated_devices(claim) != before.devices:
            problems.append(f"claim devices went from {before.devices} to {allocated_devices(claim)}")
        reserved = [r.get("uid") for r in (claim.get("status") or {}).get("reservedFor") or []]
        if before.uid not in reserved:
            problems.append(f"claim is no longer reserved for the pod (reservedFor uids {reserved})")
    if not check.that(req_id, not problems, f"after {after}: " + pods.observed("; ".join(problems), pod, claim)):
        raise CheckStopped(f"[{req_id}] pod {before.name} did not come through {after} unchanged")
    assert pod is not None, "a missing pod is a problem above, which stopped the test"
    served = scenario.verify_served(target, check, pod, classes, as_id=req_id)
    check.that(
        req_id,
        served.seen == before.seen,
        f"after {after} pod {before.name}'s containers see {served.seen}, before they saw {before.seen}",
    )
    return served
