"""Oracles for the scheduler-created ("special") ResourceClaim and the pod status naming it.

Everything is read from API objects as a user sees them; each check returns the problems
it found (empty list = conforming), so a test can report all of them at once with the
requirement IDs they violate.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from conformance.lib.api import Api, Obj

ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
FINALIZER = "resource.kubernetes.io/delete-protection"
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
REQUEST_NAME = re.compile(r"^container-\d+-request-\d+$")
RESOURCE_API = "resource.k8s.io/v1"


@dataclass
class Findings:
    """Problems found, each tagged with the requirement it violates."""

    problems: list[tuple[str, str]] = field(default_factory=list)

    def check(self, ok: bool, requirement: str, message: str) -> None:
        if not ok:
            self.problems.append((requirement, message))

    def __bool__(self) -> bool:
        return bool(self.problems)

    def render(self) -> str:
        return "\n".join(f"[{req}] {msg}" for req, msg in self.problems)


def claim_status(pod: Obj) -> Obj | None:
    return (pod.get("status") or {}).get("extendedResourceClaimStatus")


def special_claim(api: Api, pod: Obj) -> Obj | None:
    status = claim_status(pod)
    if not status:
        return None
    return api.get(RESOURCE_API, "ResourceClaim", status["resourceClaimName"], pod["metadata"]["namespace"])


def claims_owned_by(api: Api, pod: Obj) -> list[Obj]:
    """Claims in the pod's namespace whose controller ownerReference is this pod."""
    uid = pod["metadata"]["uid"]
    return [c for c in api.list(RESOURCE_API, "ResourceClaim", pod["metadata"]["namespace"])
            if any(o.get("uid") == uid and o.get("controller") for o in c["metadata"].get("ownerReferences") or [])]


def expected_requests(pod: Obj, resource_to_class: dict[str, str]) -> dict[tuple[str, str], int]:
    """(container, resource name) -> count for every DRA-backed name each container requests."""
    wanted: dict[tuple[str, str], int] = {}
    spec = pod["spec"]
    for c in [*(spec.get("initContainers") or []), *spec["containers"]]:
        res = c.get("resources") or {}
        amounts = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        for name, qty in amounts.items():
            if name in resource_to_class and int(qty) > 0:
                wanted[(c["name"], name)] = int(qty)
    return wanted


def check_special_claim(pod: Obj, claim: Obj | None, resource_to_class: dict[str, str],
                        driver: str, exact_counts: bool = True) -> Findings:
    """All observable properties of the special claim of a scheduled pod (spec §2, §3.4, §3.5).

    exact_counts: each container's request maps to exactly its quantity; false for pods with
    non-sidecar init containers, whose requests are shared (CTR-3).
    """
    f = Findings()
    status = claim_status(pod)
    f.check(status is not None, "STATUS-1", "pod.status.extendedResourceClaimStatus is not set")
    f.check(claim is not None, "ALLOC-7", f"special claim {status and status.get('resourceClaimName')!r} not found")
    if not status or claim is None:
        return f
    meta, pod_meta = claim["metadata"], pod["metadata"]
    f.check(meta.get("annotations", {}).get(ANNOTATION) == "true", "CLAIM-1",
            f"annotation {ANNOTATION} is {meta.get('annotations', {}).get(ANNOTATION)!r}, expected 'true'")
    owners = meta.get("ownerReferences") or []
    f.check(len(owners) == 1 and owners[0].get("kind") == "Pod" and owners[0].get("apiVersion") == "v1"
            and owners[0].get("uid") == pod_meta["uid"] and owners[0].get("name") == pod_meta["name"]
            and owners[0].get("controller") is True,
            "CLAIM-2", f"ownerReferences {owners} are not one controller reference to pod {pod_meta['name']}")
    f.check(FINALIZER in (meta.get("finalizers") or []), "ALLOC-7", f"finalizer {FINALIZER} missing: {meta.get('finalizers')}")

    requests = {r["name"]: r.get("exactly") or {} for r in claim["spec"]["devices"]["requests"]}
    mappings = status.get("requestMappings") or []
    wanted = expected_requests(pod, resource_to_class)
    mapped = {(m["containerName"], m["resourceName"]) for m in mappings}
    f.check(mapped == set(wanted), "STATUS-2", f"request mappings cover {sorted(mapped)}, expected {sorted(wanted)}")
    for m in mappings:
        req = requests.get(m["requestName"])
        f.check(req is not None, "CLAIM-4", f"mapping {m} names request {m['requestName']!r} absent from the claim")
        if req is None:
            continue
        klass = resource_to_class.get(m["resourceName"])
        f.check(req.get("deviceClassName") == klass, "CLAIM-3",
                f"request {m['requestName']} uses class {req.get('deviceClassName')!r}, expected {klass!r} for {m['resourceName']}")
        f.check(req.get("allocationMode", "ExactCount") == "ExactCount", "CLAIM-3",
                f"request {m['requestName']} has allocationMode {req.get('allocationMode')!r}")
        if exact_counts:
            want = wanted.get((m["containerName"], m["resourceName"]))
            f.check(req.get("count") == want, "CLAIM-3",
                    f"request {m['requestName']} counts {req.get('count')} devices, container {m['containerName']} asked {want}")
    referenced = {m["requestName"] for m in mappings}
    f.check(set(requests) <= referenced, "CLAIM-4", f"claim requests {sorted(set(requests) - referenced)} have no mapping")
    for name in requests:
        f.check(bool(REQUEST_NAME.match(name)), "ALLOC-5", f"request name {name!r} does not match container-<i>-request-<j>")

    allocation = (claim.get("status") or {}).get("allocation")
    f.check(allocation is not None, "ALLOC-7", "special claim has no status.allocation")
    if allocation:
        results = allocation["devices"]["results"]
        for name, req in requests.items():
            got = [r for r in results if r["request"] == name]
            f.check(len(got) == req.get("count", 1), "CLAIM-4",
                    f"request {name} has {len(got)} allocated devices, expected {req.get('count', 1)}")
        f.check(all(r["driver"] == driver for r in results), "NAME-1",
                f"devices from drivers {sorted({r['driver'] for r in results})}, expected {driver}")
        devices = [(r["pool"], r["device"]) for r in results]
        f.check(len(devices) == len(set(devices)), "ALLOC-1", f"a device is allocated twice within the claim: {devices}")
    reserved = (claim.get("status") or {}).get("reservedFor") or []
    f.check([(r.get("resource"), r.get("name"), r.get("uid")) for r in reserved] == [("pods", pod_meta["name"], pod_meta["uid"])],
            "ALLOC-7", f"reservedFor is {reserved}, expected only pod {pod_meta['name']}")
    return f


def allocated_devices(claim: Obj) -> list[tuple[str, str]]:
    """(pool, device) pairs allocated in a claim."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return sorted((r["pool"], r["device"]) for r in (allocation.get("devices") or {}).get("results", []))
