"""What the driver still holds prepared on a node, where its profile exposes that (`nodeState`).

NodeUnprepareResources leaves no trace a user can see through the API: the devices become
allocatable as soon as the claim is gone, whether or not the driver cleaned up. A profile
that declares `nodeState` lets the suite ask the driver's pod on the node directly; other
profiles get `not tested` for that part of the check, with the reason.

A release is only evidence once the same state was seen holding the claim: a `nodeState` that
matches nothing would otherwise "release" every claim at once. So the state is read while the
pod still runs (`held_before`), and `check_released` requires the claims in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.lib.checks import Checks
from conformance.lib.profile import Profile
from kube.api import Api, NotRunning, Obj
from kube.waits import wait_for

NO_CAPABILITY = "the profile declares no nodeState command, so the driver's node-side state cannot be seen"


def held_claims(api: Api, profile: Profile, node: str) -> set[str]:
    """Claim UIDs the driver reports as still prepared on `node`."""
    state = profile.node_state
    assert state is not None, NO_CAPABILITY
    pods = api.list(
        "v1", "Pod", profile.driver_namespace, label_selector=state.pod_selector, field_selector=f"spec.nodeName={node}"
    )
    # A pod stays Running while its container is created again after a crash: the container counts.
    running = [p for p in pods if _container_running(p, state.container)]
    if not running:
        raise NotRunning(f"no driver pod ({state.pod_selector}) on node {node} with its container running")
    return set().union(
        *(
            state.claim_uids(
                api.exec(p["metadata"]["namespace"], p["metadata"]["name"], list(state.command), state.container)
            )
            for p in running
        )
    )


def _container_running(pod: Obj, container: str | None) -> bool:
    """The pod's `container` (default: its first) is running."""
    name = container or pod["spec"]["containers"][0]["name"]
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return any(c.get("name") == name and "running" in (c.get("state") or {}) for c in statuses)


def held_on_nodes(api: Api, profile: Profile, nodes: list[str]) -> dict[str, frozenset[str]]:
    """node -> claim UIDs the driver holds prepared there now (none where it cannot be read)."""
    if profile.node_state is None:
        return {}
    held = {}
    for node in nodes:
        try:
            held[node] = frozenset(held_claims(api, profile, node))
        except NotRunning:
            held[node] = frozenset()
    return held


@dataclass(frozen=True)
class Held:
    """The driver's state on `node` read while the claims' pods still ran."""

    node: str
    claim_uids: tuple[str, ...]
    seen: frozenset[str] = frozenset()
    unreadable: str = ""  # why the state could not be read then

    def missing(self) -> list[str]:
        return sorted(set(self.claim_uids) - self.seen)


def held_before(api: Api, profile: Profile, node: str, claim_uids: list[str]) -> Held:
    """Read the driver's state on `node` before the claims' pods are deleted (nothing to read
    without the capability; check_released then says `not tested`)."""
    if profile.node_state is None:
        return Held(node, tuple(claim_uids))
    try:
        return Held(node, tuple(claim_uids), frozenset(held_claims(api, profile, node)))
    except NotRunning as err:
        return Held(node, tuple(claim_uids), unreadable=str(err))


def check_released(api: Api, profile: Profile, check: Checks, rid: str, held: Held, timeout: float = 120) -> None:
    """`rid`: the driver on the node held every claim while its pod ran and unprepared it after
    (the kubelet retries unprepare on its reconcile loop, hence a generous timeout)."""
    if profile.node_state is None:
        check.not_tested(rid, f"node-side release of claims not checked: {NO_CAPABILITY}")
        return
    node, claim_uids = held.node, list(held.claim_uids)
    with check(rid):
        assert not held.unreadable and not held.missing(), (
            f"the driver's state on {node} (nodeState of profile {profile.name}) did not list claim(s) "
            f"{held.missing()} as prepared while their pods ran, so their release cannot be seen: "
            f"{held.unreadable or f'it listed {sorted(held.seen)}'}"
        )
        wait_for(
            lambda: not set(claim_uids) & held_claims(api, profile, node),
            timeout=timeout,
            interval=3,
            what=f"the driver on {node} to unprepare claims {claim_uids}",
            describe=lambda: f"still held: {sorted(set(claim_uids) & held_claims(api, profile, node))}",
        )
