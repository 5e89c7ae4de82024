"""What the kubelet shows and admits for DRA-backed names (spec §3.7; KUBELET-3, KUBELET-4)."""
from __future__ import annotations

import pytest

from conformance.lib import pods, scenario
from conformance.lib.special_claim import IMPLICIT_PREFIX
from conformance.suite.conftest import Target


def _dra_names_in_status(node: dict, names: set[str]) -> dict[str, dict[str, str]]:
    """field -> {name: value} of the given names, or any implicit name, in node status."""
    found = {}
    for field in ("capacity", "allocatable"):
        values = (node.get("status") or {}).get(field) or {}
        hits = {k: v for k, v in values.items() if k in names or k.startswith(IMPLICIT_PREFIX)}
        if hits:
            found[field] = hits
    return found


@pytest.mark.requirement("KUBELET-4")
def test_node_status_never_lists_dra_backed_names(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    served = scenario.run_pod_and_verify(target, namespace, pods.pod("holder", [
        pods.container("main", p.workload_image, {p.extended_resource_name: 1})]))
    dra_nodes = sorted(pods.dra_capacity(api, p.driver))
    assert served.pod["spec"]["nodeName"] in dra_nodes, f"[KUBELET-4] pod ran on {served.pod['spec']['nodeName']}, not a DRA node {dra_nodes}"
    names = {p.extended_resource_name, p.implicit_resource_name}
    listed = {n: hits for n in dra_nodes if (hits := _dra_names_in_status(api.get("v1", "Node", n), names))}
    assert not listed, f"[KUBELET-4] DRA nodes list DRA-backed names in status while pod holder runs: {listed}"


@pytest.mark.requirement("KUBELET-3")
def test_implicit_and_explicit_names_are_admitted(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    containers = [pods.container("explicit", p.workload_image, {p.extended_resource_name: 1}),
                  pods.container("implicit", p.workload_image, {p.implicit_resource_name: 1})]
    api.create(pods.pod("admitted", containers), namespace)
    with pods.requirement("KUBELET-3"):
        # A refusal at admission ends the pod as Failed (reason OutOf<resource>): stop waiting then.
        pod = pods.wait_phase(api, namespace, "admitted", ("Running", "Failed"), timeout=180)
    assert pod["status"]["phase"] == "Running", \
        f"[KUBELET-3] pod refused at admission: reason {pod['status'].get('reason')!r}: {pods.summary(api, namespace, 'admitted')}"
    node = api.get("v1", "Node", pod["spec"]["nodeName"])
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    assert p.implicit_resource_name not in allocatable, \
        f"[KUBELET-3] precondition: node {pod['spec']['nodeName']} should not advertise {p.implicit_resource_name}: {allocatable}"
    served = scenario.verify_served(target, pod)
    assert len(served.seen["explicit"]) == 1 and len(served.seen["implicit"]) == 1, f"[KUBELET-3] devices seen: {served.seen}"
