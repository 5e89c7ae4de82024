"""What the driver still holds prepared on a node, where its profile exposes that (`nodeState`).

NodeUnprepareResources leaves no trace a user can see through the API: the devices become
allocatable as soon as the claim is gone, whether or not the driver cleaned up. A profile
that declares `nodeState` lets the suite ask the driver's pod on the node directly; other
profiles get `not applicable` for that part of the check, with the reason.
"""
from __future__ import annotations

from conformance.lib.checks import Checks
from conformance.lib.profile import Profile
from kube.api import Api
from kube.waits import wait_for

NO_CAPABILITY = "the profile declares no nodeState command, so the driver's node-side state cannot be seen"


def held_claims(api: Api, profile: Profile, node: str) -> set[str]:
    """Claim UIDs the driver reports as still prepared on `node`."""
    state = profile.node_state
    assert state is not None, NO_CAPABILITY
    pods = api.list("v1", "Pod", profile.driver_namespace, label_selector=state.pod_selector,
                    field_selector=f"spec.nodeName={node}")
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    assert running, f"no running driver pod ({state.pod_selector}) on node {node}"
    return set().union(*(state.claim_uids(api.exec(p["metadata"]["namespace"], p["metadata"]["name"],
                                                   list(state.command))) for p in running))


def check_released(api: Api, profile: Profile, check: Checks, rid: str, node: str, claim_uids: list[str],
                   timeout: float = 120) -> None:
    """`rid`: the driver on `node` unprepared every claim in `claim_uids` (the kubelet retries
    unprepare on its reconcile loop, hence a generous timeout)."""
    if profile.node_state is None:
        check.not_tested(rid, f"node-side release of claims not checked: {NO_CAPABILITY}")
        return
    with check(rid):
        wait_for(lambda: not set(claim_uids) & held_claims(api, profile, node), timeout=timeout, interval=3,
                 what=f"the driver on {node} to unprepare claims {claim_uids}",
                 describe=lambda: f"still held: {sorted(set(claim_uids) & held_claims(api, profile, node))}")
