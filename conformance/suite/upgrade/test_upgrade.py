"""Kubernetes upgrade and downgrade by one minor with workloads running (spec §3.11 UPGRADE-1).

Runs on an `upgrade` cluster (one DRA worker) made at the oldest pinned version; it is moved to
the newest pinned version (control plane and kubelets, clusters/upgrade.py) and back. The tests
are the scenario's steps in file order: pods with explicit and implicit names started before
each step must come through it untouched, pods started after it must get claims and devices,
and after the downgrade deleting pods must still garbage-collect their claims.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from clusters import upgrade
from clusters.images import BuiltImages, ImagesMissingError
from clusters.nodes import KindNodes
from clusters.versions import KubeVersion, supported_versions
from conformance.lib import driver_setup, pods, scenario, survivors
from conformance.lib.checks import Checks
from conformance.lib.special_claim import RESOURCE_API
from conformance.lib.steps import setup_checks
from conformance.suite.conftest import Target

pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def versions(target: Target) -> tuple[KubeVersion, KubeVersion]:
    """(oldest, newest) pinned versions: the cluster must start at the oldest, one minor below."""
    pinned = sorted(supported_versions())
    low, high = pinned[0], pinned[-1]
    if (high.major, high.minor) != (low.major, low.minor + 1):
        pytest.fail(f"the upgrade scenario needs pinned versions one minor apart, clusters/versions.env has "
                    f"{[v.tag for v in pinned]}", pytrace=False)
    if target.version != low:
        pytest.fail(f"the upgrade scenario starts at {low.tag}; the cluster runs {target.version.tag}", pytrace=False)
    return low, high


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
        return [survivors.snapshot(scenario.run_pod_and_verify(target, check, module_namespace, pods.pod(
                    f"{prefix}-{kind}", [pods.container("main", p, {resource: count})]), as_id="UPGRADE-1"))
                for kind, resource in (("explicit", p.extended_resource_name), ("implicit", p.implicit_resource_name))]
    return run


@pytest.fixture(scope="module")
def before_upgrade(start, versions) -> list[survivors.Snapshot]:
    return start(setup_checks(f"starting the pods at {versions[0].tag}, before the upgrade"), "before", 2)


@pytest.fixture(scope="module")
def upgraded(before_upgrade, versions, move_to) -> list[survivors.Snapshot]:
    move_to(versions[1])
    return before_upgrade


@pytest.mark.requirement("UPGRADE-1")
def test_pods_survive_upgrade_and_new_pods_get_claims(check: Checks, target: Target, upgraded, versions, start,
                                                      record_property) -> None:
    record_property("versions", f"{versions[0].tag} -> {versions[1].tag}")
    survivors.check_unchanged(target, check, upgraded, "UPGRADE-1", f"the upgrade to {versions[1].tag}")
    upgraded += start(check, "upgraded", 1)  # these must come through the downgrade too


@pytest.fixture(scope="module")
def downgraded(upgraded, versions, move_to) -> list[survivors.Snapshot]:
    move_to(versions[0])
    return upgraded


@pytest.mark.requirement("UPGRADE-1")
def test_pods_survive_downgrade_and_claims_are_collected(check: Checks, target: Target, module_namespace: str,
                                                         downgraded, versions, start) -> None:
    survivors.check_unchanged(target, check, downgraded, "UPGRADE-1", f"the downgrade to {versions[0].tag}")
    start(check, "downgraded", 1)
    for snap in downgraded:  # pods from before the upgrade and from between the steps
        target.api.delete("v1", "Pod", snap.name, module_namespace)
    with check("UPGRADE-1"):
        for snap in downgraded:
            pods.wait_gone(target.api, RESOURCE_API, "ResourceClaim", snap.claim, module_namespace)
