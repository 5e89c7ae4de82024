"""Oracles for the scheduler-created ("special") ResourceClaim and the pod status naming it.

Everything is read from API objects as a user sees them; each oracle returns its Findings
(every check it made, passed or failed, per requirement ID), so that a test records them all
at once.
"""

from __future__ import annotations

from collections import Counter

from conformance.lib.checks import Findings
from kube.api import RESOURCE_API, Api, Obj

ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
FINALIZER = "resource.kubernetes.io/delete-protection"
CLAIM_LIMIT = 32  # devices per claim the allocator accepts (ALLOC-3)
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
EXACT_FIELDS = {"deviceClassName", "allocationMode", "count"}  # all a special claim request may set (CLAIM-3)


def is_special(claim: Obj) -> bool:
    """Made by the scheduler for a pod's extended resources (not a user's claim)."""
    return (claim["metadata"].get("annotations") or {}).get(ANNOTATION) == "true"


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
    return [
        c
        for c in api.list(RESOURCE_API, "ResourceClaim", pod["metadata"]["namespace"])
        if any(o.get("uid") == uid and o.get("controller") for o in c["metadata"].get("ownerReferences") or [])
    ]


def special_claims_of(api: Api, pod: Obj) -> list[str]:
    """Names of the special claims the pod owns (one, once it is scheduled)."""
    return [c["metadata"]["name"] for c in claims_owned_by(api, pod) if is_special(c)]


def expected_requests(pod: Obj, resource_to_class: dict[str, str]) -> dict[tuple[str, str], int]:
    """(container, resource name) -> count for every DRA-backed name each container requests."""
    wanted: dict[tuple[str, str], int] = {}
    for c in _containers(pod):
        res = c.get("resources") or {}
        amounts = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        for name, qty in amounts.items():
            if name in resource_to_class and int(qty) > 0:
                wanted[(c["name"], name)] = int(qty)
    return wanted


def _containers(pod: Obj) -> list[Obj]:
    """Init containers then regular containers: the order request names count in (ALLOC-5)."""
    spec = pod["spec"]
    return [*(spec.get("initContainers") or []), *spec["containers"]]


def plain_init_containers(pod: Obj) -> set[str]:
    """Init containers that are not sidecars: the only ones whose devices may be shared (CTR-3)."""
    return {c["name"] for c in pod["spec"].get("initContainers") or [] if c.get("restartPolicy") != "Always"}


def check_special_claim(
    pod: Obj, claim: Obj | None, resource_to_class: dict[str, str], driver: str, exact_counts: bool = True
) -> Findings:
    """All observable properties of the special claim of a scheduled pod (spec §2, §3.4, §3.5).

    A long-lived container's request counts exactly its quantity. exact_counts: so does a request
    that only non-sidecar init containers use; false for pods whose init containers reuse later
    containers' devices (CTR-3), where such a request is their shared shortfall (1 to their largest
    quantity).
    """
    f = Findings()
    status = claim_status(pod)
    f.check(status is not None, "STATUS-1", "pod.status.extendedResourceClaimStatus is not set")
    f.check(claim is not None, "ALLOC-7", f"special claim {status and status.get('resourceClaimName')!r} not found")
    if not status or claim is None:
        return f
    _check_metadata(f, pod, claim)
    mappings = status.get("requestMappings") or []
    wanted = expected_requests(pod, resource_to_class)
    _check_mappings(f, pod, mappings, wanted)
    requests = {r["name"]: r for r in claim["spec"]["devices"]["requests"]}
    _check_requests(f, pod, claim, requests, mappings, resource_to_class, wanted, exact_counts)
    _check_allocation(f, pod, claim, requests, driver)
    return f


def _check_metadata(f: Findings, pod: Obj, claim: Obj) -> None:
    meta, pod_meta = claim["metadata"], pod["metadata"]
    f.check(
        meta.get("annotations", {}).get(ANNOTATION) == "true",
        "CLAIM-1",
        f"annotation {ANNOTATION} is {meta.get('annotations', {}).get(ANNOTATION)!r}, expected 'true'",
    )
    owners = meta.get("ownerReferences") or []
    f.check(
        len(owners) == 1
        and owners[0].get("kind") == "Pod"
        and owners[0].get("apiVersion") == "v1"
        and owners[0].get("uid") == pod_meta["uid"]
        and owners[0].get("name") == pod_meta["name"]
        and owners[0].get("controller") is True,
        "CLAIM-2",
        f"ownerReferences {owners} are not one controller reference to pod {pod_meta['name']}",
    )
    f.check(
        FINALIZER in (meta.get("finalizers") or []),
        "ALLOC-7",
        f"finalizer {FINALIZER} missing: {meta.get('finalizers')}",
    )


def _check_mappings(f: Findings, pod: Obj, mappings: list[Obj], wanted: dict[tuple[str, str], int]) -> None:
    """STATUS-2 as multisets: no repeated triple; one mapping per (container, resource), except that
    a non-sidecar init container may be mapped to several requests (reuse, CTR-3)."""
    triples = Counter((m["containerName"], m["resourceName"], m["requestName"]) for m in mappings)
    repeated = sorted(t for t, n in triples.items() if n > 1)
    f.check(not repeated, "STATUS-2", f"repeated (container, resource, request) mappings: {repeated}")
    pairs = Counter((m["containerName"], m["resourceName"]) for m in mappings)
    shared = plain_init_containers(pod)
    f.check(
        set(pairs) == set(wanted) and all(n == 1 for (c, _), n in pairs.items() if c not in shared),
        "STATUS-2",
        f"mappings per (container, resource): {sorted(pairs.items())}; expected exactly one for each of "
        f"{sorted(wanted)}" + (f" (at least one for init containers {sorted(shared)})" if shared else ""),
    )


def _check_requests(
    f: Findings,
    pod: Obj,
    claim: Obj,
    requests: dict[str, Obj],
    mappings: list[Obj],
    resource_to_class: dict[str, str],
    wanted: dict[tuple[str, str], int],
    exact_counts: bool,
) -> None:
    devices = claim["spec"]["devices"]
    f.check(
        not devices.get("constraints") and not devices.get("config"),
        "CLAIM-3",
        f"the claim sets constraints {devices.get('constraints')} or config {devices.get('config')}",
    )
    for m in mappings:
        f.check(
            m["requestName"] in requests,
            "CLAIM-4",
            f"mapping {m} names request {m['requestName']!r} absent from the claim",
        )
    shared = plain_init_containers(pod)
    for name, req in requests.items():
        users = [m for m in mappings if m["requestName"] == name]
        f.check(bool(users), "CLAIM-4", f"claim request {name} has no mapping")
        exact = req.get("exactly") or {}
        # Empty values (e.g. `selectors: []`) say nothing; anything else is more than the KEP's plain request.
        besides = {k: v for k, v in req.items() if k not in ("name", "exactly") and v}
        extra = {k: v for k, v in exact.items() if k not in EXACT_FIELDS and v}
        f.check(
            "exactly" in req and not besides and not extra,
            "CLAIM-3",
            f"request {name} is not a plain `exactly` request of class, ExactCount and count: {req}",
        )
        f.check(
            exact.get("allocationMode", "ExactCount") == "ExactCount",
            "CLAIM-3",
            f"request {name} has allocationMode {exact.get('allocationMode')!r}",
        )
        classes = {resource_to_class.get(m["resourceName"]) for m in users}
        f.check(
            not users or classes == {exact.get("deviceClassName")},
            "CLAIM-3",
            f"request {name} uses class {exact.get('deviceClassName')!r}, its mappings {users} resolve to {classes}",
        )
        owners = [m for m in users if m["containerName"] not in shared]  # long-lived containers
        for m in owners or (users if exact_counts else []):
            want = wanted.get((m["containerName"], m["resourceName"]))
            f.check(
                exact.get("count") == want,
                "CLAIM-3",
                f"request {name} counts {exact.get('count')} devices, container {m['containerName']} asked {want}",
            )
        if users and not owners and not exact_counts:  # shared by init containers: their largest shortfall
            most = max(wanted.get((m["containerName"], m["resourceName"]), 0) for m in users)
            f.check(
                1 <= (exact.get("count") or 0) <= most,
                "CLAIM-3",
                f"shared init request {name} counts {exact.get('count')} devices, its init containers ask at most {most}",
            )


def _check_allocation(f: Findings, pod: Obj, claim: Obj, requests: dict[str, Obj], driver: str) -> None:
    pod_meta = pod["metadata"]
    allocation = (claim.get("status") or {}).get("allocation")
    f.check(allocation is not None, "ALLOC-7", "special claim has no status.allocation")
    if allocation:
        results = allocation["devices"]["results"]
        for name, req in requests.items():
            want = (req.get("exactly") or {}).get("count", 1)
            got = [r for r in results if r["request"] == name]
            f.check(len(got) == want, "CLAIM-4", f"request {name} has {len(got)} allocated devices, expected {want}")
        stray = sorted({r["request"] for r in results} - set(requests))
        f.check(not stray, "CLAIM-4", f"allocation results for requests {stray} the claim does not have")
        f.check(
            all(r["driver"] == driver for r in results),
            "NAME-1",
            f"devices from drivers {sorted({r['driver'] for r in results})}, expected {driver}",
        )
        devices = [(r["pool"], r["device"]) for r in results]
        f.check(
            len(devices) == len(set(devices)), "ALLOC-1", f"a device is allocated twice within the claim: {devices}"
        )
    reserved = (claim.get("status") or {}).get("reservedFor") or []
    f.check(
        [(r.get("resource"), r.get("name"), r.get("uid")) for r in reserved]
        == [("pods", pod_meta["name"], pod_meta["uid"])],
        "ALLOC-7",
        f"reservedFor is {reserved}, expected only pod {pod_meta['name']}",
    )


def scheme_name(pod: Obj, container: str, resource: str) -> str | None:
    """container-<i>-request-<j> for a container's resource (ALLOC-5): i counts init then regular
    containers, j is the resource's position among the container's resource names sorted (the API
    server defaults requests from limits, so both are read). None for an unknown container or name."""
    for i, c in enumerate(_containers(pod)):
        if c["name"] == container:
            res = c.get("resources") or {}
            names = sorted({*(res.get("requests") or {}), *(res.get("limits") or {})})
            return f"container-{i}-request-{names.index(resource)}" if resource in names else None
    return None


def request_naming(pod: Obj, claim: Obj) -> str:
    """ALLOC-5, informational: whether the claim's request names follow the naming scheme.

    A long-lived container's mapping must name the request the scheme gives its (container,
    resource); a request that only non-sidecar init containers use (their shared shortfall) must
    carry the scheme name of one of them."""
    status = claim_status(pod)
    assert status is not None, "request_naming is for a pod whose status names its special claim"
    mappings = status["requestMappings"]
    shared = plain_init_containers(pod)
    differ = []
    for m in mappings:
        want = scheme_name(pod, m["containerName"], m["resourceName"])
        if m["containerName"] not in shared and m["requestName"] != want:
            differ.append(f"{m['containerName']}/{m['resourceName']} -> {m['requestName']}, scheme: {want}")
    for name in sorted({m["requestName"] for m in mappings}):
        users = [m for m in mappings if m["requestName"] == name]
        allowed = sorted({str(scheme_name(pod, m["containerName"], m["resourceName"])) for m in users})
        if all(m["containerName"] in shared for m in users) and name not in allowed:
            differ.append(f"shared init request {name}, scheme: one of {allowed}")
    names = sorted(r["name"] for r in claim["spec"]["devices"]["requests"])
    if differ:
        return f"request names {names} differ from container-<i>-request-<j>: " + "; ".join(differ)
    return f"request names {names} follow container-<i>-request-<j>"


def allocation_results(claim: Obj) -> list[Obj]:
    """The device results of a claim's allocation; none while it is not allocated."""
    return (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []


def allocated_devices(claim: Obj) -> list[tuple[str, str]]:
    """(pool, device) pairs allocated in a claim."""
    return sorted((r["pool"], r["device"]) for r in allocation_results(claim))


def current_version(api: Api, namespace: str) -> str:
    """The API server's resourceVersion now (of a list in `namespace`): a point to watch from."""
    version: str = api.resource("v1", "Pod").get(namespace=namespace, limit=1).metadata.resourceVersion
    return version


def as_scheduled(api: Api, namespace: str, name: str, since: str, timeout: int = 60) -> tuple[Obj | None, list[Obj]]:
    """The pod as it was when PodScheduled first turned True, and the namespace's ResourceClaims at
    exactly that resourceVersion (an Exact list): the claim's state at the moment of scheduling,
    not after it, however fast the writes followed each other. Replays the pod's events from
    `since` (taken before the pod was created); (None, []) if no such event came in `timeout` s."""
    pods = api.resource("v1", "Pod")
    for event in pods.watch(
        namespace=namespace, field_selector=f"metadata.name={name}", resource_version=since, timeout=timeout
    ):
        pod = event["raw_object"]
        scheduled = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"]
        if scheduled and scheduled[0].get("status") == "True":
            claims = (
                api.resource(RESOURCE_API, "ResourceClaim")
                .get(
                    namespace=namespace,
                    resource_version=pod["metadata"]["resourceVersion"],
                    resource_version_match="Exact",
                )
                .to_dict()["items"]
            )
            return pod, claims
    return None, []


def incomplete_at_scheduling(pod: Obj, claims: list[Obj]) -> list[str]:
    """ALLOC-7: what the special claim lacked when its pod was scheduled ([] when complete)."""
    status = claim_status(pod)
    name = (status or {}).get("resourceClaimName")
    claim = next((c for c in claims if c["metadata"]["name"] == name), None)
    if status is None:
        return ["the pod status named no special claim (extendedResourceClaimStatus unset)"]
    if claim is None:
        return [f"claim {name} did not exist yet (claims then: {[c['metadata']['name'] for c in claims]})"]
    missing = []
    if FINALIZER not in (claim["metadata"].get("finalizers") or []):
        missing.append(f"finalizer {FINALIZER} (finalizers {claim['metadata'].get('finalizers')})")
    if not (claim.get("status") or {}).get("allocation"):
        missing.append("an allocation")
    reserved = [r.get("uid") for r in (claim.get("status") or {}).get("reservedFor") or []]
    if pod["metadata"]["uid"] not in reserved:
        missing.append(f"a reservation for the pod (reservedFor {reserved})")
    return [f"claim {name} lacked {m}" for m in missing]
