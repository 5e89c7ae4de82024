"""A rolling update of the driver with pods running (spec §3.7 KUBELET-1 across a driver update).

Every DaemonSet of the profile's driver pods is rolled (a pod-template annotation, what
`kubectl rollout restart` does, so any driver can be tested). Pods started before keep running
with their devices, a pod created while the update rolls and one created after it are prepared
(their containers see their devices), a claim prepared by the old driver pods is unprepared
through the new ones, and no prepare fails on the way.

Unprepare is seen twice: the kubelet removes a deleted pod's object only once
NodeUnprepareResources succeeded for the pod's claims, and, where the profile exposes it
(`nodeState`, conformance/lib/oracles/driver_state.py), the driver on the node no longer holds the claim.
The API alone cannot show the second: the devices become allocatable once the claim is gone,
whether or not the driver cleaned up.
"""

from __future__ import annotations

import time

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import RESOURCE_API
from conformance.lib.oracles import driver_state, scenario, survivors
from conformance.lib.setup import driver_setup
from conformance.suite.conftest import Target
from kube.waits import wait_for

pytestmark = pytest.mark.serial
RESTARTED_AT = "kep5004.io/restarted-at"


def _driver_daemonsets(target: Target) -> list[dict]:
    p = target.profile
    if not p.driver_namespace or not p.driver_selector:
        pytest.fail(
            f"profile {p.name} declares no driverPods (namespace and selector): the suite cannot "
            "find the driver's DaemonSets to update",
            pytrace=False,
        )
    # The API server reads the selector (set-based ones too); the DaemonSets are its pods' owners.
    owners = {
        o["name"]
        for q in target.api.list("v1", "Pod", p.driver_namespace, label_selector=p.driver_selector)
        for o in q["metadata"].get("ownerReferences") or []
        if o.get("kind") == "DaemonSet"
    }
    found = [
        ds
        for ds in target.api.list("apps/v1", "DaemonSet", p.driver_namespace)
        if ds["metadata"]["name"] in owners and ds["status"].get("desiredNumberScheduled", 0) > 0
    ]
    if not found:
        pytest.fail(f"no DaemonSet in {p.driver_namespace} runs pods labelled {p.driver_selector}", pytrace=False)
    return found


def _rolled_out(target: Target, name: str, namespace: str) -> bool:
    ds = target.api.get("apps/v1", "DaemonSet", name, namespace)
    s = ds["status"]
    return (
        s.get("observedGeneration", 0) >= ds["metadata"]["generation"]
        and s.get("updatedNumberScheduled", 0)
        == s["desiredNumberScheduled"]
        == s.get("numberAvailable", 0)
        == s.get("currentNumberScheduled", 0)
        and len(
            target.api.list(
                "v1",
                "Pod",
                namespace,
                label_selector=",".join(f"{k}={v}" for k, v in ds["spec"]["selector"]["matchLabels"].items()),
            )
        )
        == s["desiredNumberScheduled"]
    )


def _prepare_failures(target: Target, namespace: str) -> list[str]:
    """Warning events about preparing or unpreparing claims (the kubelet's FailedPrepare... reasons)."""
    return [
        f"{e['involvedObject']['name']}: {e['reason']}: {e.get('message')}"
        for e in target.api.list("v1", "Event", namespace)
        if e.get("type") == "Warning" and "prepare" in (e.get("reason") or "").lower()
    ]


def _prepared(target: Target, check: Checks, namespace: str, name: str) -> None:
    """KUBELET-1: the pod runs and its containers see its claim's devices (the driver prepared them)."""
    with check("KUBELET-1", stop=True):
        pod = pods.wait_running(target.api, namespace, name, timeout=180)
    scenario.verify_served(target, check, pod, as_id="KUBELET-1")


@pytest.mark.requirement("KUBELET-1")
def test_rolling_driver_update_keeps_pods_served(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile

    def gpu_pod(name: str, resource: str, count: int) -> dict:
        return pods.pod(name, [pods.container("main", p, {resource: count})])

    before = [
        survivors.snapshot(
            scenario.run_pod_and_verify(target, check, namespace, gpu_pod(name, resource, 2), served_by=rid)
        )
        for name, resource, rid in (
            ("before", p.extended_resource_name, p.served_by),
            ("before-implicit", p.implicit_resource_name, "NAME-2"),
        )
    ]
    daemonsets = _driver_daemonsets(target)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for ds in daemonsets:
        api.resource("apps/v1", "DaemonSet").patch(
            name=ds["metadata"]["name"],
            namespace=ds["metadata"]["namespace"],
            body={"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}},
            content_type="application/merge-patch+json",
        )
    api.create(gpu_pod("during", p.extended_resource_name, 1), namespace)
    for ds in daemonsets:
        name, ns = ds["metadata"]["name"], ds["metadata"]["namespace"]
        wait_for(
            lambda: _rolled_out(target, name, ns),
            timeout=300,
            interval=2,
            what=f"DaemonSet {ns}/{name} to finish its rolling update",
            describe=lambda: str(api.get("apps/v1", "DaemonSet", name, ns)["status"]),
        )
    driver_setup.wait_published(api, p)
    survived = survivors.check_unchanged(target, check, before, "KUBELET-1", "the driver's rolling update")
    _prepared(target, check, namespace, "during")
    api.create(gpu_pod("after", p.implicit_resource_name, 1), namespace)
    _prepared(target, check, namespace, "after")
    # "before" was prepared by an old driver pod: the kubelet must unprepare it through the new one,
    # and it removes the deleted pod's object only once NodeUnprepareResources has succeeded.
    held = driver_state.held_before(api, p, survived[0].pod["spec"]["nodeName"], [before[0].claim_uid])
    api.delete("v1", "Pod", before[0].name, namespace)
    with check("KUBELET-1"):
        pods.wait_gone(api, "v1", "Pod", before[0].name, namespace)
    driver_state.check_released(api, p, check, "KUBELET-1", held)
    with check("CLAIM-5"):
        pods.wait_gone(api, RESOURCE_API, "ResourceClaim", before[0].claim, namespace)
    failures = _prepare_failures(target, namespace)
    check.that("KUBELET-1", not failures, f"preparing or unpreparing failed during the driver update: {failures}")
