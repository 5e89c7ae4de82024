"""How container resource names resolve to DeviceClasses (spec §3.2; NAME-*, NEG-5).

Classes created here select the profile's devices (`device.driver == <driver>`) and get unique
names and unique explicit names, because the name-to-class mapping is cluster-wide. Each
name-resolution check reads the special claim before scenario.verify_served, whose claim
problems end the test (see conformance/lib/oracles/resolution.py).
"""

from __future__ import annotations

import uuid

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import (
    IMPLICIT_PREFIX,
    RESOURCE_API,
    allocated_devices,
    claim_status,
    special_claim,
)
from conformance.lib.objects.workloads import probe_container
from conformance.lib.oracles import scenario
from conformance.lib.oracles.resolution import misresolved, resolution
from conformance.suite.conftest import Target, needs_explicit_name
from kube.api import Api, Obj
from kube.waits import WaitTimeout, wait_for

# Deleting or clearing the losing class of a shared explicit name can drop the winner's mapping.


def _run(target: Target, check: Checks, namespace: str, pod_obj: Obj, rid: str) -> tuple[Obj, Obj | None]:
    """Create the pod and wait until it runs (`rid` fails, and the test ends, if it does not);
    return it with its special claim."""
    target.api.create(pod_obj, namespace)
    with check(rid, stop=True):
        pod = pods.wait_running(target.api, namespace, pod_obj["metadata"]["name"], timeout=180)
    return pod, special_claim(target.api, pod)


def _check_resolved(check: Checks, rid: str, pod: Obj, claim: Obj | None, classes: dict[str, str]) -> None:
    """`rid`: each name in `classes` resolved to its class, with as many devices as the container asked."""
    with check(rid):
        bad = misresolved(pod, claim, classes)
        assert not bad, pods.observed(
            f"expected {classes}; not served as asked: {bad}; resolved: {resolution(pod, claim)}", pod, claim
        )


@pytest.mark.requirement("NAME-2")
def test_implicit_name_of_the_profile_class(target: Target, check: Checks, namespace: str) -> None:
    p = target.profile
    pod, claim = _run(
        target,
        check,
        namespace,
        pods.pod("implicit", [pods.container("main", p, {p.implicit_resource_name: 1})]),
        "NAME-2",
    )
    _check_resolved(check, "NAME-2", pod, claim, {p.implicit_resource_name: p.device_class})
    scenario.verify_served(target, check, pod)


@pytest.mark.requirement("NAME-2")
def test_implicit_name_of_a_class_without_explicit_name(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    p = target.profile
    cls = pods.create_device_class(target.api, request, p.driver, prefix="implicit")["metadata"]["name"]
    name = IMPLICIT_PREFIX + cls
    pod, claim = _run(
        target, check, namespace, pods.pod("implicit-new", [pods.container("main", p, {name: 2})]), "NAME-2"
    )
    _check_resolved(check, "NAME-2", pod, claim, {name: cls})
    scenario.verify_served(target, check, pod, classes={name: cls})


CLASS_SETTLE_S = 5  # for the scheduler to have seen a DeviceClass just created


def _classes_sharing_a_name(api: Api, request: pytest.FixtureRequest, driver: str) -> tuple[str, str, str]:
    """Two classes declaring one new explicit name, the second created later: (name, older, newer)."""
    tag = uuid.uuid4().hex[:8]
    shared = f"example.com/dup-{tag}"
    # The newer class gets the lexicographically larger name, so that an implementation ordering
    # by name alone (the tie-breaker) would pick the older class and fail.
    older = pods.create_device_class(api, request, driver, shared, name=f"dup-a-{tag}.kep5004.io")
    pods.wait_elapsed(1.1)  # creationTimestamp has one-second granularity
    newer = pods.create_device_class(api, request, driver, shared, name=f"dup-b-{tag}.kep5004.io")
    stamps = (older["metadata"]["creationTimestamp"], newer["metadata"]["creationTimestamp"])
    assert stamps[0] < stamps[1], f"precondition: creationTimestamps {stamps} should differ"
    # The scheduler learns of classes through its informer: a pod created right away can meet a
    # scheduler that knows only the older class (seen once on 1.35.4 with nine clusters on two
    # cores, 2026-12-05). An implementation that picks the older class still fails after this.
    pods.wait_elapsed(CLASS_SETTLE_S)
    return shared, older["metadata"]["name"], newer["metadata"]["name"]


@pytest.mark.requirement("NAME-3")
def test_newest_class_wins_a_shared_explicit_name(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    p = target.profile
    shared, older, newer = _classes_sharing_a_name(target.api, request, p.driver)
    # Both classes stay untouched until the check (BUG-5; the next test touches the loser).
    pod, claim = _run(target, check, namespace, pods.pod("dup", [pods.container("main", p, {shared: 1})]), "NAME-3")
    _check_resolved(check, "NAME-3", pod, claim, {shared: newer})
    scenario.verify_served(target, check, pod, classes={shared: newer})


@pytest.mark.requirement("NAME-3")
def test_deleting_the_losing_class_keeps_the_winner(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    api, p = target.api, target.profile
    shared, older, newer = _classes_sharing_a_name(api, request, p.driver)
    api.delete(RESOURCE_API, "DeviceClass", older)
    pods.wait_gone(api, RESOURCE_API, "DeviceClass", older, None, timeout=60)
    pods.wait_elapsed(2)  # for the scheduler to see the deletion before the pod
    api.create(pods.pod("dup-after", [pods.container("main", p, {shared: 1})]), namespace)
    # Running, or reported Unschedulable first (the bug's signature; then a short grace period
    # for a scheduler that was merely late), so that a buggy cluster does not cost the full timeout.
    with check("NAME-3", stop=True):
        wait_for(
            lambda: (
                (found := api.get("v1", "Pod", "dup-after", namespace))
                and (
                    (found.get("status") or {}).get("phase") == "Running"
                    or pods.condition(found, "PodScheduled").get("reason") == "Unschedulable"
                )
            ),
            timeout=120,
            what="pod dup-after to run or be reported Unschedulable",
            describe=lambda: pods.summary(api, namespace, "dup-after"),
        )
    try:
        pod = pods.wait_running(api, namespace, "dup-after", timeout=30)
    except WaitTimeout as err:
        stuck = f"after the losing class {older} was deleted, {shared} no longer served by {newer}: {err}"
        check.known_bug("NAME-3", "BUG-5", target.minor, stuck)  # upstream's, not the driver's or the test's
        return
    claim = special_claim(api, pod)
    _check_resolved(check, "NAME-3", pod, claim, {shared: newer})
    scenario.verify_served(target, check, pod, classes={shared: newer})


@pytest.mark.requirement("NAME-4", "NEG-5")
def test_unmapped_name_stays_unschedulable(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    name = f"example.com/unmapped-{uuid.uuid4().hex[:8]}"
    api.create(pods.pod("unmapped", [pods.container("main", p, {name: 1})]), namespace)
    with check("NAME-4"):
        pods.wait_unschedulable(api, namespace, "unmapped", timeout=90)
        assert pods.is_unscheduled(api, namespace, "unmapped"), (
            "Unschedulable, but not Pending without a node, "
            "a special claim and a status: " + pods.unscheduled_state(api, namespace, "unmapped")
        )
    pods.check_stays_unscheduled(api, check, namespace, "unmapped", "NEG-5", duration=15)


@pytest.mark.requirement("NAME-5")
def test_pod_created_before_its_class_runs_once_the_class_exists(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    api, p = target.api, target.profile
    name = f"example.com/late-{uuid.uuid4().hex[:8]}"
    api.create(pods.pod("early", [pods.container("main", p, {name: 1})]), namespace)
    with check("NAME-4", stop=True):  # no class maps the name yet
        before = pods.wait_unschedulable(api, namespace, "early", timeout=90)
    cls = pods.create_device_class(api, request, p.driver, name, prefix="late")["metadata"]["name"]
    # Where the scheduler re-queues on no DeviceClass event (NAME-5's by_version in the catalogue),
    # the retry waits for the five-minute flush of unschedulable pods: a deadline past it, which
    # costs nothing where the event re-queues the pod at once.
    with check("NAME-5", stop=True):
        pod = pods.wait_running(api, namespace, "early", timeout=420)
    check.that(
        "NAME-5",
        pod["metadata"]["uid"] == before["metadata"]["uid"],
        f"pod was recreated: uid {before['metadata']['uid']} -> {pod['metadata']['uid']}",
    )
    scenario.verify_served(target, check, pod, classes={name: cls})


@pytest.mark.requirement("NAME-6", "KUBELET-2")
def test_zero_request_runs_without_claim(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    api.create(pods.pod("zero", [pods.container("main", p, {p.extended_resource_name: 0})]), namespace)
    with check("NAME-6", stop=True):
        pod = pods.wait_running(api, namespace, "zero", timeout=180)
    with check("NAME-6"):
        assert claim_status(pod) is None, f"status set for a zero request: {pods.summary(api, namespace, 'zero')}"
        assert pods.owned_claims(api, namespace, "zero") == [], (
            f"a claim was created for a zero request: {pods.unscheduled_state(api, namespace, 'zero')}"
        )
    seen = probe_container(api, p, pod, "main")
    check.that(
        "KUBELET-2",
        p.probe.saw_nothing(seen.raw),
        f"container asking for 0 sees devices (or its probe did not run): {seen.raw.strip()[:400]!r}",
    )


@pytest.mark.requirement("NAME-7")
def test_explicit_and_implicit_names_are_not_merged(target: Target, check: Checks, namespace: str) -> None:
    p = target.profile
    needs_explicit_name(target.profile)
    resources = {p.extended_resource_name: 2, p.implicit_resource_name: 1}
    pod, claim = _run(target, check, namespace, pods.pod("both", [pods.container("main", p, resources)]), "NAME-7")
    # Each name its own mapping to a request of its own count: a merged request (count 3, or both
    # mappings naming one request) cannot show 2 for one name and 1 for the other.
    _check_resolved(check, "NAME-7", pod, claim, {n: p.device_class for n in resources})
    with check("NAME-7"):
        devices = allocated_devices(claim or {})
        assert len(devices) == 3 == len(set(devices)), pods.observed(
            f"expected 3 distinct devices for 2 + 1 units, the claim has {devices}", pod, claim
        )
    scenario.verify_served(target, check, pod)
