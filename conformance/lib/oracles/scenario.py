"""The end-to-end check shared by most suite tests: run a pod, then verify every observable."""

from __future__ import annotations

from dataclasses import dataclass

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import check_special_claim, special_claim
from conformance.lib.oracles.devices import (
    check_containers_see,
    device_ids,
    expected_per_container,
    merge,
    user_claim_devices,
)
from conformance.lib.target import Target
from kube.api import Obj


@dataclass
class Served:
    pod: Obj
    claim: Obj
    seen: dict[str, list[str]]  # container -> device ids it must see (from the claims); verify_served's
    # CTR-1 checks (or as_id) compared each container's probe output with exactly these


def verify_served(
    target: Target,
    check: Checks,
    pod: Obj,
    classes: dict[str, str] | None = None,
    exact_counts: bool = True,
    as_id: str | None = None,
) -> Served:
    """Check the special claim, the pod status and what each container sees, for a running pod.

    classes maps each DRA-backed resource name the pod uses to its DeviceClass; default: the
    profile's explicit and implicit names. Devices of the pod's ordinary ResourceClaims are
    added to what the containers using them should see. Every oracle's check is recorded under
    its own ID, or all under `as_id` (see Checks.all). Claim problems stop the test (what the
    containers should see is computed from the claim); container problems do not.
    """
    api, profile = target.api, target.profile
    classes = classes or {
        profile.extended_resource_name: profile.device_class,
        profile.implicit_resource_name: profile.device_class,
    }
    claim = special_claim(api, pod)
    shown = lambda: pods.observed("", pod, claim)  # noqa: E731 - evaluated only on failure
    check.all(
        check_special_claim(pod, claim, classes, profile.driver, exact_counts), stop=True, observed=shown, as_id=as_id
    )
    assert claim is not None, "a missing claim failed ALLOC-7 above, which stopped the test"
    ids = device_ids(api, profile)
    expected = merge(expected_per_container(pod, claim, ids, profile.probe), user_claim_devices(api, profile, pod, ids))
    check.all(check_containers_see(api, profile, pod, expected), observed=shown, as_id=as_id)
    return Served(pod, claim, expected)


def run_pod_and_verify(
    target: Target,
    check: Checks,
    namespace: str,
    pod_obj: Obj,
    classes: dict[str, str] | None = None,
    exact_counts: bool = True,
    timeout: float = 180,
    served_by: str | None = None,
    as_id: str | None = None,
) -> Served:
    """Create the pod, wait until it runs (a failure of `served_by`, default the ID that judges the
    profile's name being served, which ends the test), then verify_served. as_id: record everything,
    the wait included, as that one ID (a scenario step's "new pods are served end to end")."""
    target.api.create(pod_obj, namespace)
    with check(as_id or served_by or target.profile.served_by, stop=True):
        pod = pods.wait_running(target.api, namespace, pod_obj["metadata"]["name"], timeout=timeout)
    return verify_served(target, check, pod, classes, exact_counts, as_id=as_id)
