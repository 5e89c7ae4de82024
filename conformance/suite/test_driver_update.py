"""A rolling update of the driver with pods running (spec §3.7 KUBELET-1 across a driver update).

Every DaemonSet of the profile's driver pods is rolled (a pod-template annotation, what
`kubectl rollout restart` does, so any driver can be tested). Pods started before keep running
with their devices, a pod created while the update rolls and one created after it are prepared,
a pod prepared by the old driver pods is unprepared by the new ones, and no prepare or unprepare
fails on the way.
"""
from __future__ import annotations

import time

import pytest

from conformance.lib import driver_setup, pods, scenario, survivors
from conformance.lib.special_claim import RESOURCE_API
from conformance.lib.waits import wait_for
from conformance.suite.conftest import Target

pytestmark = pytest.mark.serial
RESTARTED_AT = "kep5004.io/restarted-at"


def _driver_daemonsets(target: Target) -> list[dict]:
    p = target.profile
    if not p.driver_namespace or not p.driver_selector:
        pytest.fail(f"profile {p.name} declares no driverPods (namespace and selector): the suite cannot "
                    "find the driver's DaemonSets to update", pytrace=False)
    wanted = dict(item.split("=", 1) for item in p.driver_selector.split(","))
    found = [ds for ds in target.api.list("apps/v1", "DaemonSet", p.driver_namespace)
             if wanted.items() <= (ds["spec"]["template"]["metadata"].get("labels") or {}).items()
             and ds["status"].get("desiredNumberScheduled", 0) > 0]
    if not found:
        pytest.fail(f"no DaemonSet in {p.driver_namespace} runs pods labelled {p.driver_selector}", pytrace=False)
    return found


def _rolled_out(target: Target, name: str, namespace: str) -> bool:
    ds = target.api.get("apps/v1", "DaemonSet", name, namespace)
    s = ds["status"]
    return (s.get("observedGeneration", 0) >= ds["metadata"]["generation"]
            and s.get("updatedNumberScheduled", 0) == s["desiredNumberScheduled"]
            == s.get("numberAvailable", 0) == s.get("currentNumberScheduled", 0)
            and len(target.api.list("v1", "Pod", namespace, label_selector=",".join(
                f"{k}={v}" for k, v in ds["spec"]["selector"]["matchLabels"].items()))) == s["desiredNumberScheduled"])


def _prepare_failures(target: Target, namespace: str) -> list[str]:
    """Warning events about preparing or unpreparing claims (the kubelet's FailedPrepare... reasons)."""
    return [f"{e['involvedObject']['name']}: {e['reason']}: {e.get('message')}"
            for e in target.api.list("v1", "Event", namespace)
            if e.get("type") == "Warning" and "prepare" in (e.get("reason") or "").lower()]


@pytest.mark.requirement("KUBELET-1")
def test_rolling_driver_update_keeps_pods_served(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile

    def gpu_pod(name: str, resource: str, count: int) -> dict:
        return pods.pod(name, [pods.container("main", p.workload_image, {resource: count})])

    before = [survivors.snapshot(scenario.run_pod_and_verify(target, namespace, gpu_pod(name, resource, 2)))
              for name, resource in (("before", p.extended_resource_name),
                                     ("before-implicit", p.implicit_resource_name))]
    daemonsets = _driver_daemonsets(target)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for ds in daemonsets:
        api.resource("apps/v1", "DaemonSet").patch(
            name=ds["metadata"]["name"], namespace=ds["metadata"]["namespace"],
            body={"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: stamp}}}}},
            content_type="application/merge-patch+json")
    api.create(gpu_pod("during", p.extended_resource_name, 1), namespace)
    with pods.requirement("KUBELET-1"):
        for ds in daemonsets:
            name, ns = ds["metadata"]["name"], ds["metadata"]["namespace"]
            wait_for(lambda: _rolled_out(target, name, ns), timeout=300, interval=2,
                     what=f"DaemonSet {ns}/{name} to finish its rolling update",
                     describe=lambda: str(api.get("apps/v1", "DaemonSet", name, ns)["status"]))
        driver_setup.wait_published(api, p)
    survivors.check(target, before, "KUBELET-1", "the driver's rolling update")
    with pods.requirement("KUBELET-1"):
        scenario.verify_served(target, pods.wait_running(api, namespace, "during", timeout=180))
        scenario.run_pod_and_verify(target, namespace, gpu_pod("after", p.implicit_resource_name, 1))
        api.delete("v1", "Pod", before[0].name, namespace)  # prepared by the old driver pod
        pods.wait_gone(api, RESOURCE_API, "ResourceClaim", before[0].claim, namespace)
        pods.wait_gone(api, "v1", "Pod", before[0].name, namespace)
    failures = _prepare_failures(target, namespace)
    assert not failures, f"[KUBELET-1] preparing or unpreparing failed during the driver update: {failures}"
