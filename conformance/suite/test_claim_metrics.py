"""kube-controller-manager's gauge of ResourceClaims tells special claims apart (KEP-7). The KEP's
monitoring section gives the gauge a `source` label for claims made for extended resources; the
gauge is computed from the controller's view of every claim when it is read, so at rest it must
agree with the claims the API lists, counted by the same rule.

The controller manager is read through a port-forward to its pod (kubeadm binds it to the node's
loopback) with the suite's own credentials; where no such pod is visible (a managed control plane)
or the suite may not forward to it, the ID is `not tested`, saying why.
"""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from clusters import health
from conformance.catalogue import requirement
from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import is_special
from conformance.lib.oracles import scenario
from conformance.suite.conftest import Target
from kube import metrics
from kube.api import RESOURCE_API, Api, Obj
from kube.versions import Minor
from kube.waits import WaitTimeout, wait_for

EXTENDED_RESOURCE = "extended_resource"  # the label value releases emit (the KEP writes "extended-resource")
TEMPLATE_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
DEFAULT_SECURE_PORT = 10257


def claims_gauge(minor: Minor) -> str:
    """The gauge's name: 1.37 moved the DRA metrics under one subsystem, with no alias for the old name."""
    return (
        "dynamic_resource_allocation_resource_claims"
        if minor >= (1, 37)
        else "resourceclaim_controller_resource_claims"
    )


def source_of(claim: Obj) -> str:
    """The gauge's `source` for a claim: made for extended resources, from a pod's template, or by a user."""
    if is_special(claim):
        return EXTENDED_RESOURCE
    annotations = claim["metadata"].get("annotations") or {}
    return "resource_claim_template" if annotations.get(TEMPLATE_ANNOTATION) else ""


def _leader_node(api: Api) -> str | None:
    """The node of the kube-controller-manager that holds its leader lease (only the leader runs
    the controllers, so only its gauge counts claims); None when the lease cannot be read."""
    try:
        lease = api.get("coordination.k8s.io/v1", "Lease", "kube-controller-manager", "kube-system")
    except ApiException:
        return None
    holder = ((lease or {}).get("spec") or {}).get("holderIdentity") or ""
    return holder.split("_", 1)[0] or None  # "<node>_<uid>"


def _controller_manager(api: Api) -> tuple[str, int] | None:
    pod = health.static_pod(api, "kube-controller-manager", _leader_node(api))
    if pod is None or (pod.get("status") or {}).get("phase") != "Running":
        return None
    args = [a for c in pod["spec"]["containers"] for a in (c.get("command") or []) + (c.get("args") or [])]
    port = next((int(a.split("=", 1)[1]) for a in args if a.startswith("--secure-port=")), DEFAULT_SECURE_PORT)
    return pod["metadata"]["name"], port


@pytest.mark.serial  # the gauge counts every claim of the cluster: tests alongside would move it
@pytest.mark.requirement("KEP-7")
def test_the_claims_gauge_counts_special_claims_under_their_source(
    target: Target, check: Checks, namespace: str
) -> None:
    api, p = target.api, target.profile
    applies, why = requirement("KEP-7").applies_to(target.minor, gate_enabled=True)
    if not applies:
        pytest.skip(why)
    found = _controller_manager(api)
    if found is None:
        check.not_tested(
            "KEP-7", "no running kube-controller-manager pod (component=kube-controller-manager) in kube-system"
        )
        return
    kcm, port = found
    gauge = claims_gauge(target.minor)

    def page() -> str:
        return api.pod_https_get("kube-system", kcm, port, "/metrics")

    try:
        page()
    except ApiException as err:
        check.not_tested("KEP-7", f"kube-controller-manager's /metrics not readable: {err.reason}")
        return
    # One pod served through the name (a special claim), one through an ordinary claim of the class.
    scenario.run_pod_and_verify(
        target, check, namespace, pods.pod("named", [pods.container("main", p, {p.extended_resource_name: 1})])
    )
    api.create(pods.user_claim("own", p.device_class), namespace)
    own = pods.container("main", p, {})
    own["resources"]["claims"] = [{"name": "own"}]
    ordinary = pods.pod("claimed", [own])
    ordinary["spec"]["resourceClaims"] = [{"name": "own", "resourceClaimName": "own"}]
    api.create(ordinary, namespace)
    pods.wait_running(api, namespace, "claimed", timeout=180)

    def compared() -> tuple[dict[str, float | None], dict[str, int]]:
        text = page()
        allocated = [c for c in api.list(RESOURCE_API, "ResourceClaim") if (c.get("status") or {}).get("allocation")]
        listed = {source: sum(1 for c in allocated if source_of(c) == source) for source in (EXTENDED_RESOURCE, "")}
        shown = {source: metrics.value(text, gauge, allocated="true", source=source) for source in listed}
        return shown, listed

    def agree(shown: dict[str, float | None], listed: dict[str, int]) -> bool:
        return all((shown[s] or 0) == n for s, n in listed.items())

    with check("KEP-7"):
        try:
            # The gauge reads kube-controller-manager's informer, which may trail the API briefly.
            wait_for(
                lambda: agree(*compared()),
                timeout=60,
                interval=2,
                what=f"{gauge} to agree with the claims the API lists",
            )
        except WaitTimeout:
            pass
        shown, listed = compared()
        assert listed[EXTENDED_RESOURCE] >= 1 and agree(shown, listed), (
            f'{gauge}{{allocated="true"}} by source: {shown} (None: no sample); the API lists allocated '
            f"claims by the same rule: {listed} (the special claim of pod named, the ordinary claim own)"
        )
