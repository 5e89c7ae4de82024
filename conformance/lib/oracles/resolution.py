"""Which DeviceClass each container's DRA-backed resource name resolved to, as the pod's special
claim shows it: what name-resolution checks (NAME-*) compare with the class they expect.

Read before the claim oracle (scenario.verify_served), whose claim problems stop a test: a name
resolved to the wrong class then fails the NAME-* check too instead of leaving it credited.
"""

from __future__ import annotations

from conformance.lib.objects.special_claim import allocation_results, claim_status, expected_requests
from kube.api import Obj

Resolved = tuple[str | None, int]  # DeviceClass of the mapped request, devices allocated to that request


def resolution(pod: Obj, claim: Obj | None) -> dict[tuple[str, str], Resolved]:
    """(container, resource name) -> what the request its mapping names uses and got; empty when
    the pod has no extendedResourceClaimStatus or the claim does not exist."""
    status = claim_status(pod)
    if not status or not claim:
        return {}
    classes = {r["name"]: (r.get("exactly") or {}).get("deviceClassName") for r in claim["spec"]["devices"]["requests"]}
    results = allocation_results(claim)
    return {
        (m["containerName"], m["resourceName"]): (
            classes.get(m["requestName"]),
            sum(r["request"] == m["requestName"] for r in results),
        )
        for m in status.get("requestMappings") or []
    }


def misresolved(
    pod: Obj, claim: Obj | None, classes: dict[str, str], exact_counts: bool = True
) -> dict[tuple[str, str], Resolved | None]:
    """The pod's requests for the names in `classes` (name -> the DeviceClass it must resolve to)
    that the claim does not serve with that class and as many devices as asked (at least one when
    not exact_counts: init containers share requests, CTR-3): (container, name) -> what the claim
    shows for it, None when it is not mapped. Empty when every such request is served."""
    seen = resolution(pod, claim)
    bad: dict[tuple[str, str], Resolved | None] = {}
    for (container, name), count in expected_requests(pod, classes).items():
        got = seen.get((container, name))
        if got is None or got[0] != classes[name] or not (got[1] == count if exact_counts else got[1] >= 1):
            bad[(container, name)] = got
    return bad
