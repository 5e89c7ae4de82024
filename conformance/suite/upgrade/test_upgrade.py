"""Kubernetes upgrade and downgrade by one minor with workloads running (spec §3.11 UPGRADE-1).

Runs on an `in-place` cluster (one DRA worker) of any pinned version; it is moved to the
neighbouring pinned minor (control plane and kubelets, clusters/upgrade.py) and back: up then
down from every version but the newest, down then up again (a rollback and a re-upgrade) from
the newest, so that each version has a verdict of its own. The tests are the scenario's steps in
file order: pods with explicit and implicit names started before each move must come through it
untouched, pods started after it must get claims and devices, and after the move back deleting
pods must still garbage-collect their claims.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from clusters import upgrade
from clusters.images import BuiltImages, ImagesMissingError
from clusters.nodes import KindNodes
from clusters.versions import upgrade_partner
from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import RESOURCE_API
from conformance.lib.oracles import scenario, survivors
from conformance.lib.scenarios.steps import setup_checks
from conformance.lib.setup import driver_setup
from conformance.suite.conftest import Target
from kube.versions import KubeVersion

pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def versions(target: Target) -> tuple[KubeVersion, KubeVersion]:
    """(the cluster's version, the pinned neighbour it moves to and back from)."""
    partner = upgrade_partner(target.version)
    if partner is None:
        pytest.fail(
            f"the upgrade scenario needs a pinned version one minor away from {target.version.tag} "
            "(clusters/versions.env)",
            pytrace=False,
        )
    return target.version, partner


@pytest.fixture(scope="module")
def move_to(target: Target, kubeconfig: Path, kind_nodes: KindNodes) -> Callable[[KubeVersion], None]:
    try:
        images = BuiltImages.load()
    except ImagesMissingError as err:
        pytest.fail(str(err), pytrace=False)

    def move(version: KubeVersion) -> None:
        upgrade.change_version(kubeconfig, kind_nodes, version, images)
        server = target.api.server_version()
        assert server.startswith(version.tag), f"the API server reports {server} after moving to {version.tag}"
        # Restarted kubelets drop the driver's ResourceSlices until it registers again.
        driver_setup.wait_published(target.api, target.profile)

    return move


@pytest.fixture(scope="module")
def start(target: Target, module_namespace: str) -> Callable[[Checks, str, int], list[survivors.Snapshot]]:
    """Start one pod per name (explicit and implicit), `count` devices each, named <prefix>-<kind>;
    each must run and be served end to end (checked as UPGRADE-1: pods created after a step get claims)."""
    p = target.profile

    def run(check: Checks, prefix: str, count: int) -> list[survivors.Snapshot]:
        return [
            survivors.snapshot(
                scenario.run_pod_and_verify(
                    target,
                    check,
                    module_namespace,
                    pods.pod(f"{prefix}-{kind}", [pods.container("main", p, {resource: count})]),
                    as_id="UPGRADE-1",
                )
            )
            for kind, resource in (("explicit", p.extended_resource_name), ("implicit", p.implicit_resource_name))
        ]

    return run


@pytest.fixture(scope="module")
def before_move(start, versions) -> list[survivors.Snapshot]:
    return start(
        setup_checks(f"starting the pods at {versions[0].tag}, before moving to {versions[1].tag}"), "before", 2
    )


def _move(versions: tuple[KubeVersion, KubeVersion], back: bool) -> str:
    to, other = (versions[0], versions[1]) if back else (versions[1], versions[0])
    return f"the {'upgrade' if to > other else 'downgrade'} to {to.tag}"


@pytest.fixture(scope="module")
def moved(before_move, versions, move_to) -> list[survivors.Snapshot]:
    move_to(versions[1])
    return before_move


@pytest.mark.requirement("UPGRADE-1")
def test_pods_survive_the_move_to_the_neighbour_and_new_pods_get_claims(
    check: Checks, target: Target, moved, versions, start, record_property
) -> None:
    record_property("versions", f"{versions[0].tag} -> {versions[1].tag} -> {versions[0].tag}")
    survivors.check_unchanged(target, check, moved, "UPGRADE-1", _move(versions, back=False))
    moved += start(check, "moved", 1)  # these must come through the move back too


@pytest.fixture(scope="module")
def moved_back(moved, versions, move_to) -> list[survivors.Snapshot]:
    move_to(versions[0])
    return moved


@pytest.mark.requirement("UPGRADE-1")
def test_pods_survive_the_move_back_and_claims_are_collected(
    check: Checks, target: Target, module_namespace: str, moved_back, versions, start
) -> None:
    survivors.check_unchanged(target, check, moved_back, "UPGRADE-1", _move(versions, back=True))
    start(check, "back", 1)
    for snap in moved_back:  # pods from before the first move and from between the moves
        target.api.delete("v1", "Pod", snap.name, module_namespace)
    with check("UPGRADE-1"):
        for snap in moved_back:
            pods.wait_gone(target.api, RESOURCE_API, "ResourceClaim", snap.claim, module_namespace)
