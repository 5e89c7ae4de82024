"""The pod status field `extendedResourceClaimStatus`: its field names and how the API server
validates writes of it (spec §3.5 STATUS-3, §3.1 API-7, §3.12 NEG-6).

Invalid writes go to pods of their own that ask for a name no DeviceClass serves, so they stay
Pending and no scheduler-written status gets in the way; a control pod shows that the same
write without the defect is accepted, so a rejection is about the defect.
"""
from __future__ import annotations

import copy
import json

import pytest
from kubernetes.dynamic.exceptions import ApiException

from conformance.lib import pods, scenario
from conformance.lib.special_claim import claim_status
from conformance.suite.conftest import Target

UNSERVED = "example.com/status-test"  # no DeviceClass maps it: the pods stay Pending
VALID = {"resourceClaimName": "status-test-claim", "requestMappings": [
    {"containerName": "main", "resourceName": UNSERVED, "requestName": "container-0-request-0"}]}


def _with(change) -> dict:
    status = copy.deepcopy(VALID)
    change(status)
    return status


INVALID = {
    "no-mappings": _with(lambda s: s.update(requestMappings=[])),
    "unknown-container": _with(lambda s: s["requestMappings"][0].update(containerName="nope")),
    "resource-not-requested": _with(lambda s: s["requestMappings"][0].update(resourceName="example.com/other")),
    "repeated-mapping": _with(lambda s: s["requestMappings"].append(dict(s["requestMappings"][0]))),
    "request-name-not-dns-label": _with(lambda s: s["requestMappings"][0].update(requestName="Not_A_Label")),
    "claim-name-invalid": _with(lambda s: s.update(resourceClaimName="Not_A_Name")),
}


def _pending_pod(target: Target, namespace: str, name: str) -> str:
    target.api.create(pods.pod(name, [pods.container("main", target.profile.workload_image, {UNSERVED: 1})]), namespace)
    return name


def _write_status(target: Target, namespace: str, name: str, status: dict) -> dict:
    return target.api.resource("v1", "Pod").status.patch(
        name=name, namespace=namespace, body={"status": {"extendedResourceClaimStatus": status}},
        content_type="application/merge-patch+json").to_dict()


@pytest.mark.requirement("STATUS-3")
def test_status_field_names(target: Target, namespace: str) -> None:
    p = target.profile
    served = scenario.run_pod_and_verify(target, namespace, pods.pod(
        "names", [pods.container("main", p.workload_image, {p.extended_resource_name: 1})]))
    status = claim_status(served.pod)
    assert set(status) == {"resourceClaimName", "requestMappings"}, f"[STATUS-3] status fields: {sorted(status)}"
    keys = [sorted(m) for m in status["requestMappings"]]
    assert keys == [["containerName", "requestName", "resourceName"]], f"[STATUS-3] mapping fields: {keys}"


@pytest.mark.requirement("API-7", "NEG-6")
def test_valid_status_write_is_accepted(target: Target, namespace: str) -> None:
    stored = claim_status(_write_status(target, namespace, _pending_pod(target, namespace, "control"), VALID))
    assert stored == VALID, f"[API-7] a valid extendedResourceClaimStatus was not stored as written: {stored}"


@pytest.mark.requirement("API-7", "NEG-6")
@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_status_write_is_rejected(target: Target, namespace: str, case: str, record_property) -> None:
    name = _pending_pod(target, namespace, case)
    with pytest.raises(ApiException) as rejected:
        stored = _write_status(target, namespace, name, INVALID[case])
        pytest.fail(f"[NEG-6] status write {case} was accepted; stored {json.dumps(claim_status(stored))}")
    body = rejected.value.body.decode() if isinstance(rejected.value.body, bytes) else str(rejected.value.body)
    record_property("rejection", body[:500])  # the spec leaves messages and paths open
    assert rejected.value.status == 422, f"[NEG-6] expected 422 Invalid for {case}, got {rejected.value.status}: {body}"
    assert "extendedResourceClaimStatus" in body, f"[NEG-6] the rejection does not name the field: {body}"
