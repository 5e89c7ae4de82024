"""What the kubelet shows and admits for DRA-backed names (spec §3.7; KUBELET-3, KUBELET-4)."""

from __future__ import annotations

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import IMPLICIT_PREFIX
from conformance.lib.oracles import scenario
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
def test_node_status_never_lists_dra_backed_names(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    served = scenario.run_pod_and_verify(
        target, check, namespace, pods.pod("holder", [pods.container("main", p, {p.extended_resource_name: 1})])
    )
    dra_nodes = sorted(pods.dra_capacity(api, p.driver))
    node = served.pod["spec"]["nodeName"]
    assert node in dra_nodes, f"precondition: pod holder ran on {node}, not on a node of the driver {dra_nodes}"
    names = {p.extended_resource_name, p.implicit_resource_name}
    listed = {n: hits for n in dra_nodes if (hits := _dra_names_in_status(api.get("v1", "Node", n), names))}
    check.that(
        "KUBELET-4", not listed, f"DRA nodes list DRA-backed names in status while pod holder runs on {node}: {listed}"
    )


@pytest.mark.requirement("KUBELET-3")
def test_implicit_and_explicit_names_are_admitted(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    names = (p.extended_resource_name, p.implicit_resource_name)
    containers = [pods.container("explicit", p, {names[0]: 1}), pods.container("implicit", p, {names[1]: 1})]
    api.create(pods.pod("admitted", containers), namespace)
    # A refusal at admission ends the pod as Failed (reason OutOf<resource>): stop waiting then.
    pod = pods.wait_phase(api, namespace, "admitted", ("Running", "Failed"), timeout=180)
    # Only a node that does not advertise the names shows that admission leaves them out of its fit check.
    allocatable = (api.get("v1", "Node", pod["spec"]["nodeName"]).get("status") or {}).get("allocatable") or {}
    assert not set(names) & set(allocatable), (
        f"precondition: node {pod['spec']['nodeName']} should advertise neither {names}: {allocatable}"
    )
    with check("KUBELET-3", stop=True):
        assert pod["status"]["phase"] == "Running", (
            f"pod refused at admission: reason {pod['status'].get('reason')!r}: {pods.summary(api, namespace, 'admitted')}"
        )
    scenario.verify_served(target, check, pod)
