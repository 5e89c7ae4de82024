"""DRAExtendedResource switched ON -> OFF -> ON on all four components with workloads running
(spec §3.11 GATE-1..3, §3.1 API-2 and API-8). Runs on a `gate-cycle` cluster (one DRA worker).

The tests are the scenario's steps, in file order: pods are started with the gate on, the gate
goes off (module fixture `gate_off`), each test checks one behaviour while it is off, then the
gate goes back on (`gate_on_again`) and the last test checks that service resumes.
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from conformance.lib import pods, scenario, survivors
from conformance.lib.special_claim import RESOURCE_API, claim_status
from conformance.suite.conftest import Target
from conformance.suite.gate_cycle.conftest import Gate

pytestmark = pytest.mark.serial
EXPLICIT_CLASS_NAME = "example.com/gate-cycle-gpu"  # a name no pod asks for: classes here only test the API


@dataclass
class Before:
    """What was started while the gate was on."""
    explicit: survivors.Snapshot  # must come through the cycle
    implicit: survivors.Snapshot  # re-admitted by kubelets restarted with the gate off
    doomed: survivors.Snapshot    # deleted while the gate is off
    device_class: str                       # created with extendedResourceName while on


def _gpu_pod(target: Target, name: str, resource: str, count: int = 2) -> dict:
    return pods.pod(name, [pods.container("main", target.profile.workload_image, {resource: count})])


@pytest.fixture(scope="module")
def before(request: pytest.FixtureRequest, target: Target, module_namespace: str, gate: Gate) -> Before:
    p = target.profile
    started = {name: survivors.snapshot(scenario.run_pod_and_verify(
                   target, module_namespace, _gpu_pod(target, name, resource)))
               for name, resource in (("explicit", p.extended_resource_name), ("implicit", p.implicit_resource_name),
                                      ("doomed", p.extended_resource_name))}
    cls = pods.create_device_class(target.api, request, p.driver, EXPLICIT_CLASS_NAME, prefix="gate-on")
    return Before(**started, device_class=cls["metadata"]["name"])


@pytest.fixture(scope="module")
def gate_off(before: Before, gate: Gate) -> Before:
    gate.set(False)
    return before


@pytest.mark.requirement("GATE-2")
def test_explicit_name_pods_survive_switching_off(target: Target, gate_off: Before) -> None:
    survivors.check(target, [gate_off.explicit], "GATE-2", "switching the gate off")


@pytest.mark.requirement("GATE-2")
def test_implicit_name_pods_stopped_by_kubelet_restarted_off(target: Target, module_namespace: str,
                                                             gate_off: Before) -> None:
    """Found on 1.36.3 (docs/findings.md): with the gate off the kubelet no longer leaves implicit
    names out of its admission check, so re-admitting the running pod after its restart fails."""
    api, name = target.api, gate_off.implicit.name
    reason = f"OutOf{target.profile.implicit_resource_name}"
    with pods.requirement("GATE-2"):
        pods.wait_phase(api, module_namespace, name, ("Succeeded", "Failed"), timeout=60)
        pods.wait_event(api, module_namespace, name, reason, timeout=30)


@pytest.mark.requirement("API-2")
def test_device_class_field_dropped_while_off(request: pytest.FixtureRequest, target: Target, gate_off: Before) -> None:
    api, p = target.api, target.profile
    res = api.resource(RESOURCE_API, "DeviceClass")
    created = pods.create_device_class(api, request, p.driver, EXPLICIT_CLASS_NAME, prefix="gate-off")
    name = created["metadata"]["name"]
    stored = api.get(RESOURCE_API, "DeviceClass", name)["spec"]
    assert "extendedResourceName" not in created["spec"] and "extendedResourceName" not in stored, \
        f"[API-2] a DeviceClass created with the gate off kept extendedResourceName: returned {created['spec']}, stored {stored}"
    res.patch(name=name, body={"spec": {"extendedResourceName": EXPLICIT_CLASS_NAME}},
              content_type="application/merge-patch+json")
    stored = api.get(RESOURCE_API, "DeviceClass", name)["spec"]
    assert "extendedResourceName" not in stored, \
        f"[API-2] an update adding extendedResourceName with the gate off was stored: {stored}"
    res.patch(name=gate_off.device_class, body={"metadata": {"labels": {"kep5004.io/touched": "while-off"}}},
              content_type="application/merge-patch+json")
    kept = api.get(RESOURCE_API, "DeviceClass", gate_off.device_class)["spec"]
    assert kept.get("extendedResourceName") == EXPLICIT_CLASS_NAME, \
        f"[API-2] updating a class that already had extendedResourceName dropped it with the gate off: {kept}"


@pytest.mark.requirement("API-8")
def test_pod_status_field_dropped_while_off(target: Target, module_namespace: str, gate_off: Before) -> None:
    api, p = target.api, target.profile
    api.create(pods.pod("plain", [pods.container("main", p.workload_image, {}, command=pods.SLEEP)]), module_namespace)
    pods.wait_running(api, module_namespace, "plain")
    status = {"resourceClaimName": "made-up", "requestMappings": [
        {"containerName": "main", "resourceName": p.extended_resource_name, "requestName": "container-0-request-0"}]}
    api.resource("v1", "Pod").status.patch(name="plain", namespace=module_namespace,
                                           body={"status": {"extendedResourceClaimStatus": status}},
                                           content_type="application/merge-patch+json")
    stored = pods.get(api, module_namespace, "plain")
    assert claim_status(stored) is None, \
        f"[API-8] a status update adding extendedResourceClaimStatus was stored with the gate off: {claim_status(stored)}"
    name = gate_off.explicit.name  # the field stays on pods that already had it
    assert claim_status(pods.get(api, module_namespace, name)), \
        f"[API-8] pod {name} lost its extendedResourceClaimStatus with the gate off"


@pytest.mark.requirement("GATE-1")
def test_new_pods_stay_pending_without_claim_while_off(target: Target, module_namespace: str, gate_off: Before) -> None:
    target.api.create(_gpu_pod(target, "waiting", target.profile.extended_resource_name), module_namespace)
    # 30 s like the upstream gate-cycle test; without device plugin the scheduler finds no node.
    pods.assert_stays_unscheduled(target.api, module_namespace, "waiting", "GATE-1", duration=30)


@pytest.mark.requirement("GATE-2", "CLAIM-5")
def test_claims_collected_while_off(target: Target, module_namespace: str, gate_off: Before) -> None:
    doomed = gate_off.doomed
    target.api.delete("v1", "Pod", doomed.name, module_namespace)
    with pods.requirement("GATE-2"):
        pods.wait_gone(target.api, RESOURCE_API, "ResourceClaim", doomed.claim, module_namespace)


@pytest.fixture(scope="module")
def gate_on_again(gate_off: Before, gate: Gate) -> Before:
    gate.set(True)
    return gate_off


@pytest.mark.requirement("GATE-3", "GATE-2")
def test_service_resumes_after_switching_on(target: Target, module_namespace: str, gate_on_again: Before) -> None:
    api, p = target.api, target.profile
    survivors.check(target, [gate_on_again.explicit], "GATE-3", "switching the gate back on")
    with pods.requirement("GATE-3"):
        waiting = pods.wait_running(api, module_namespace, "waiting", timeout=180)
        scenario.verify_served(target, waiting)
        # Together these take every device, including those of the pods that ended while the
        # gate was off: the kubelet must have unprepared their claims once it was back (GATE-2).
        for name, resource in (("after", p.extended_resource_name), ("after-implicit", p.implicit_resource_name)):
            scenario.run_pod_and_verify(target, module_namespace, _gpu_pod(target, name, resource))
