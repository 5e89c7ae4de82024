"""The end-to-end check shared by most suite tests: run a pod, then verify every observable."""
from __future__ import annotations

import json
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


def run_pod_and_verify(target, namespace: str, pod_obj: Obj, classes: dict[str, str] | None = None,
                       exact_counts: bool = True, timeout: float = 180) -> Served:
    """Create the pod, wait until it runs and assert the special claim, status and devices.

    classes maps each DRA-backed resource name the pod uses to its DeviceClass; default:
    the profile's explicit and implicit names.
    """
    api, profile = target.api, target.profile
    classes = classes or {profile.extended_resource_name: profile.device_class,
                          profile.implicit_resource_name: profile.device_class}
    name = pod_obj["metadata"]["name"]
    api.create(pod_obj, namespace)
    pod = pods.wait_running(api, namespace, name, timeout=timeout)
    claim = special_claim(api, pod)
    findings = check_special_claim(pod, claim, classes, profile.driver, exact_counts)
    assert not findings, _report(findings.render(), pod, claim)
    ids = device_ids(api, profile)
    expected = merge(expected_per_container(pod, claim, ids), user_claim_devices(api, profile, pod, ids))
    seen = check_containers_see(api, profile, pod, expected)
    assert not seen, _report(seen.render(), pod, claim)
    return Served(pod, claim, expected)


def _report(problems: str, pod: Obj, claim: Obj | None) -> str:
    shown = {"pod.status.extendedResourceClaimStatus": (pod.get("status") or {}).get("extendedResourceClaimStatus"),
             "claim": claim and {"metadata": {k: claim["metadata"].get(k) for k in ("name", "annotations", "ownerReferences", "finalizers")},
                                 "spec": claim.get("spec"), "status": claim.get("status")}}
    return f"{problems}\nobserved:\n{json.dumps(shown, indent=1, default=str)}"
