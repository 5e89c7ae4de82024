"""The end-to-end check shared by most suite tests: run a pod, then verify every observable."""
from __future__ import annotations

from dataclasses import dataclass

from conformance.lib import pods
from conformance.lib.api import Obj
from conformance.lib.devices import check_containers_see, device_ids, expected_per_container, merge, user_claim_devices
from conformance.lib.special_claim import check_special_claim, special_claim


@dataclass
class Served:
    pod: Obj
    claim: Obj
    seen: dict[str, list[str]]  # container -> device ids its probe printed


def verify_served(target, pod: Obj, classes: dict[str, str] | None = None, exact_counts: bool = True) -> Served:
    """Assert the special claim, the pod status and what each container sees, for a running pod.

    classes maps each DRA-backed resource name the pod uses to its DeviceClass; default: the
    profile's explicit and implicit names. Devices of the pod's ordinary ResourceClaims are
    added to what the containers using them should see.
    """
    api, profile = target.api, target.profile
    classes = classes or {profile.extended_resource_name: profile.device_class,
                          profile.implicit_resource_name: profile.device_class}
    claim = special_claim(api, pod)
    findings = check_special_claim(pod, claim, classes, profile.driver, exact_counts)
    assert not findings, pods.observed(findings.render(), pod, claim)
    ids = device_ids(api, profile)
    expected = merge(expected_per_container(pod, claim, ids), user_claim_devices(api, profile, pod, ids))
    seen = check_containers_see(api, profile, pod, expected)
    assert not seen, pods.observed(seen.render(), pod, claim)
    return Served(pod, claim, expected)


def run_pod_and_verify(target, namespace: str, pod_obj: Obj, classes: dict[str, str] | None = None,
                       exact_counts: bool = True, timeout: float = 180) -> Served:
    """Create the pod, wait until it runs, then verify_served."""
    target.api.create(pod_obj, namespace)
    pod = pods.wait_running(target.api, namespace, pod_obj["metadata"]["name"], timeout=timeout)
    return verify_served(target, pod, classes, exact_counts)
