"""The pod status field `extendedResourceClaimStatus`: its field names and how the API server
validates writes of it (spec §3.5 STATUS-3, §3.1 API-7, §3.12 NEG-6), and health entries naming
the special claim (§3.1 API-9).

Invalid writes go to pods of their own that ask for a name no DeviceClass serves, so they stay
Pending and no scheduler-written status gets in the way. A control pod first shows that the same
write without the defect is accepted, so a rejection is about the defect; the control is a
prerequisite of those checks, not a requirement (API-7 and NEG-6 only say what must be refused).
"""

from __future__ import annotations

import copy

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import allocated_devices, claim_status
from conformance.lib.objects.writes import accepted, check_refused_as_invalid
from conformance.lib.oracles import scenario
from conformance.suite.conftest import Target

UNSERVED = "example.com/status-test"  # no DeviceClass maps it: the pods stay Pending
VALID = {
    "resourceClaimName": "status-test-claim",
    "requestMappings": [{"containerName": "main", "resourceName": UNSERVED, "requestName": "container-0-request-0"}],
}


def _with(change) -> dict:
    status = copy.deepcopy(VALID)
    change(status)
    return status


# case -> (status written, the requirements that name the rule it breaks)
INVALID = {
    "no-mappings": (_with(lambda s: s.update(requestMappings=[])), ("API-7", "NEG-6")),
    "unknown-container": (_with(lambda s: s["requestMappings"][0].update(containerName="nope")), ("API-7", "NEG-6")),
    "resource-not-requested": (
        _with(lambda s: s["requestMappings"][0].update(resourceName="example.com/other")),
        ("API-7", "NEG-6"),
    ),
    "repeated-mapping": (
        _with(lambda s: s["requestMappings"].append(dict(s["requestMappings"][0]))),
        ("API-7", "NEG-6"),
    ),
    "request-name-not-dns-label": (
        _with(lambda s: s["requestMappings"][0].update(requestName="Not_A_Label")),
        ("API-7", "NEG-6"),
    ),
    "claim-name-invalid": (_with(lambda s: s.update(resourceClaimName="Not_A_Name")), ("API-7",)),
}


def _pending_pod(target: Target, namespace: str, name: str) -> str:
    target.api.create(pods.pod(name, [pods.container("main", target.profile, {UNSERVED: 1})]), namespace)
    return name


def _write_status(target: Target, namespace: str, name: str, status: dict) -> dict:
    return (
        target.api.resource("v1", "Pod")
        .status.patch(
            name=name,
            namespace=namespace,
            body={"status": {"extendedResourceClaimStatus": status}},
            content_type="application/merge-patch+json",
        )
        .to_dict()
    )


@pytest.fixture(scope="module")
def control(target: Target, module_namespace: str) -> None:
    """Prerequisite of the invalid writes: the valid write is accepted and stored as written."""
    stored = claim_status(
        _write_status(target, module_namespace, _pending_pod(target, module_namespace, "control"), VALID)
    )
    assert stored == VALID, f"control: a valid extendedResourceClaimStatus was not stored as written: {stored}"


@pytest.mark.requirement("STATUS-3")
def test_status_field_names(target: Target, check: Checks, namespace: str) -> None:
    p = target.profile
    target.api.create(pods.pod("names", [pods.container("main", p, {p.extended_resource_name: 1})]), namespace)
    with check(p.served_by, stop=True):
        pod = pods.wait_running(target.api, namespace, "names", timeout=180)
    # Read before any oracle: with other field names the oracles would stop the test first.
    status = claim_status(pod) or {}
    with check("STATUS-3"):
        assert set(status) == {"resourceClaimName", "requestMappings"}, f"status fields: {sorted(status)}"
        keys = [sorted(m) for m in status["requestMappings"]]
        assert keys == [["containerName", "requestName", "resourceName"]], f"mapping fields: {keys}"


@pytest.mark.requirement("API-7", "NEG-6")
@pytest.mark.usefixtures("control")
@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_status_write_is_rejected(
    target: Target, check: Checks, namespace: str, case: str, record_property
) -> None:
    status, ids = INVALID[case]
    name = _pending_pod(target, namespace, case)
    body = check_refused_as_invalid(
        check,
        ids,
        lambda: _write_status(target, namespace, name, status),
        f"status write {case}",
        field="extendedResourceClaimStatus",
    )
    record_property("rejection", body[:500])  # the spec leaves messages and paths open


def _with_health_entry(pod: dict, container: str, name: str, resource_id: str) -> dict:
    """A status patch: the pod's container statuses as they are, `container` given one
    allocatedResourcesStatus entry (the whole list is sent: it has no merge key)."""
    statuses = copy.deepcopy(pod["status"]["containerStatuses"])
    for status in statuses:
        if status["name"] == container:
            status["allocatedResourcesStatus"] = [
                {"name": name, "resources": [{"resourceID": resource_id, "health": "Healthy"}]}
            ]
    return {"status": {"containerStatuses": statuses}}


@pytest.mark.requirement("API-9")
def test_health_status_may_name_the_special_claim(target: Target, check: Checks, namespace: str) -> None:
    """A container's allocatedResourcesStatus may name `claim:<special claim>/<request>`; a claim
    the pod does not have is still refused, so the acceptance is about the special claim."""
    api, p = target.api, target.profile
    served = scenario.run_pod_and_verify(
        target, check, namespace, pods.pod("health", [pods.container("main", p, {p.extended_resource_name: 1})])
    )
    status = claim_status(served.pod)
    request = next(m["requestName"] for m in status["requestMappings"] if m["containerName"] == "main")
    pool, device = allocated_devices(served.claim)[0]
    resource_id = f"{p.driver}/{pool}/{device}"
    statuses = api.resource("v1", "Pod").status

    def write(claim: str) -> dict:
        body = _with_health_entry(pods.get(api, namespace, "health"), "main", f"claim:{claim}/{request}", resource_id)
        return statuses.patch(
            name="health", namespace=namespace, body=body, content_type="application/merge-patch+json"
        ).to_dict()

    name = f"claim:{status['resourceClaimName']}/{request}"
    with check("API-9"):
        stored = accepted(lambda: write(status["resourceClaimName"]), f"a health entry named {name}")
        entries = [
            e["name"]
            for c in stored["status"].get("containerStatuses") or []
            for e in c.get("allocatedResourcesStatus") or []
        ]
        assert name in entries, f"the API server accepted a health entry named {name} but returned {entries}"
    check_refused_as_invalid(
        check,
        ["API-9"],
        lambda: write("not-a-claim-of-this-pod"),
        "a health entry naming a claim the pod does not have",
    )
