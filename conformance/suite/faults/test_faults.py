"""Faults with extended-resource workloads running and new ones arriving (FAULT-1..6, the suite's
own requirements: what the spec's promises mean when a component fails).

Each test starts pods that ask for the DRA-backed name on the in-place cluster's DRA worker,
injects one fault as it happens to a real cluster (clusters/faults.py), starts more pods around
it and then asks conformance/lib/oracles/recovery.py whether everything converged: pods running with
their claims' devices and seeing exactly them, no device in two claims, no claim without its
pod, the driver's prepared state matching. Pods that must come through a fault untouched are
compared with their snapshot from before (conformance/lib/oracles/survivors.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from clusters import faults
from clusters.nodes import KindNodes, Node
from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import claim_status, claims_owned_by, is_special
from conformance.lib.oracles import recovery, survivors
from conformance.lib.scenarios.disruption import (
    ARRIVING,
    RUNNING,
    arrive,
    driver_killed_while_preparing,
    kubelet_restarted,
    machine_restarted,
    start_served,
)
from conformance.lib.setup import driver_setup
from conformance.suite.conftest import Target
from kube.api import TRANSIENT_ERRORS, Api, Obj
from kube.waits import WaitTimeout, wait_for

pytestmark = pytest.mark.serial
# kube-scheduler retries an unschedulable pod at the latest every five minutes whatever happens;
# a pod that needed that periodic retry to recover was stalled, not served (BUG-11). A scheduler
# that recovers does so within its lease's expiry and a few backoffs (20-60 s on a loaded host).
PROMPT = 120
# How long after a pod is bound its node's kubelet must have sent the request to prepare its claims
# to the stopped driver: the kubelet asks as soon as it admits the pod (about a second when loaded).
REQUEST_SENT = 30
# kube-scheduler stepped through a batch: how long it runs at a time (its claim and binding calls
# for a pod are a few ms apart), and how long it stays stopped before its state is read (long
# enough for requests it had sent to land, up to a few hundred ms on a loaded host).
STEP = 0.02
SENT_LANDS = 0.5
# Batches tried until kube-scheduler is caught between a claim and a binding.
BATCHES = 3
# How long pods that the scheduler left for its periodic retry are watched staying so before that
# is reported: long enough to see a requeue by any other event, far shorter than the retry.
LEFT_FOR = 30


def wait_answering(target: Target, after: str) -> None:
    wait_for(
        lambda: target.api.server_version(),
        timeout=120,
        interval=1,
        transient=TRANSIENT_ERRORS,
        what=f"the API server to answer after {after}",
    )


def running_promptly(
    target: Target, check: Checks, rid: str, namespace: str, names: list[str], after: str, control_plane: Node
) -> str:
    """Check that the named pods run within PROMPT s after `after`; returns `after`, amended when
    the scheduler had to be restarted. Pods stalled the way BUG-11 leaves them are that bug's
    deviation for `rid`; any other stall fails `rid` by name."""
    api = target.api
    left_since: float | None = None  # when every pod not running yet was first seen left for that retry

    def served_or_left() -> tuple[list[str]] | None:
        """([],) once all run; (the others,) once they have stayed left for the retry LEFT_FOR s."""
        nonlocal left_since
        waiting = recovery.not_running(api, namespace, names)
        if not waiting:
            return ([],)
        if recovery.left_for_periodic_retry(api, namespace, waiting) != waiting:
            left_since = None
            return None
        left_since = left_since or time.monotonic()
        # The scheduler's own verdict; the look after it confirms that no other event (a slice,
        # a node) brings the pods back sooner.
        return (waiting,) if time.monotonic() - left_since >= LEFT_FOR else None

    try:
        stalled = wait_for(
            served_or_left,
            timeout=PROMPT,
            interval=2,
            transient=TRANSIENT_ERRORS,
            what=f"pods {names} Running after {after}",
            describe=lambda: recovery.not_running_described(api, namespace, names),
        )[0]
    except WaitTimeout as late:
        stalled = recovery.not_running(api, namespace, names)
        if stalled and recovery.left_for_periodic_retry(api, namespace, stalled) != stalled:
            with check(rid, stop=True):
                raise late from None
    if not stalled:
        return after
    check.known_bug(
        rid,
        "BUG-11",
        target.minor,
        f"after {after}, pods {stalled} are not Running: a restarted scheduler found the special claims "
        "made for them before, deleted them and left the pods to its periodic retry (five minutes); "
        f"{pods.condition(pods.get(api, namespace, stalled[0]), 'PodScheduled').get('message')}",
    )
    # The rest of `rid` (one claim per pod, none orphaned, no device twice) is checked all the
    # same, without waiting minutes for that retry: once the stalled pods' leftover claims are
    # gone, a scheduler starting anew tries every pending pod at once.
    with check(rid, stop=True):
        wait_for(
            lambda: not set(stalled) & set(recovery.unbound_pods_with_special_claims(api, namespace)),
            timeout=60,
            interval=2,
            transient=TRANSIENT_ERRORS,
            what=f"the leftover special claims of {stalled} deleted by the new scheduler",
            describe=lambda: json.dumps(recovery.unbound_pods_with_special_claims(api, namespace)),
        )
    faults.kill_component(control_plane, "kube-scheduler")
    return (
        after + ", then kube-scheduler was killed once more after the deviation was recorded, so that the "
        "stalled pods are retried"
    )


@pytest.mark.requirement("FAULT-1")
def test_pods_are_served_after_the_driver_is_killed_while_preparing(
    target: Target, check: Checks, namespace: str, worker: Node, held_at_start: dict[str, frozenset[str]]
) -> None:
    @contextmanager
    def held_then_killed(drivers: list[Obj]) -> Iterator[None]:
        # Stopped before any pod arrives, the driver cannot finish a preparation before the kill, so
        # the kill lands while the kubelet waits for its answer on every run, however fast the driver
        # (killed the moment a pod was bound, a fast one had often prepared everything already).
        pids = [pid for d in drivers for pid in faults.pod_pids(worker, d["metadata"]["uid"])]
        faults.freeze(worker, pids)
        try:
            yield
            try:
                asked = wait_for(
                    lambda: faults.unread_input(worker, pids),
                    timeout=REQUEST_SENT,
                    interval=0.5,
                    what="the kubelet's request to prepare waiting unread in the stopped driver's sockets",
                )
            except WaitTimeout as e:
                check.not_tested("FAULT-1", f"{e}: the kill may have landed before the kubelet asked")
            else:
                check.observe("FAULT-1", f"unread in the driver's sockets when it was killed: {asked}")
        finally:
            faults.kill(worker, pids)

    driver_killed_while_preparing(
        target, check, namespace, worker.name, held_then_killed, "was killed (SIGKILL)", held_at_start
    )


@pytest.mark.requirement("FAULT-2")
def test_pods_keep_their_devices_when_the_kubelet_restarts(
    target: Target, check: Checks, namespace: str, worker: Node, held_at_start: dict[str, frozenset[str]]
) -> None:
    kubelet_restarted(target, check, namespace, worker.name, worker.restart_kubelet, held_at_start)


def crash_between_claim_and_binding(
    target: Target, control_plane: Node, namespace: str, node: str, batch: list[str]
) -> dict[str, str]:
    """`batch` arrives while kube-scheduler is stopped (SIGSTOP); then the scheduler runs in steps
    of STEP s, stopped again after each long enough for what it sent to land, until it is seen
    stopped with a special claim made for a pod it has not bound: killed (SIGKILL) right there.
    The unbound pods -> their claims; empty (the scheduler running again) when it bound the whole
    batch without being caught so.

    A pod's claim and its binding are API calls a few ms apart: a scheduler killed as soon as a
    claim is seen is past them about one time in three, one advanced step by step is caught in
    between (a stopped scheduler cannot move on, so what is seen is what the crash leaves)."""
    api = target.api
    scheduler = faults.main_pids(control_plane, "--name", "^kube-scheduler$")
    faults.freeze(control_plane, scheduler)
    try:
        arrive(target, namespace, node, batch)
        deadline = time.monotonic() + PROMPT
        while time.monotonic() < deadline:
            faults.run_for(control_plane, scheduler, STEP)
            pods.wait_elapsed(SENT_LANDS)
            if left := recovery.unbound_pods_with_special_claims(api, namespace):
                faults.kill(control_plane, scheduler)
                return left
            if all((pods.get(api, namespace, n).get("spec") or {}).get("nodeName") for n in batch):
                break
    except BaseException:
        faults.thaw(control_plane, scheduler)  # never left stopped for the tests after
        raise
    faults.thaw(control_plane, scheduler)
    return {}


def caught(api: Api, namespace: str, left: dict[str, str]) -> str:
    """How far the scheduler had come with each pod it left: the special claim's allocation
    written or not, the claim named in the pod's status or not (BUG-11's path depends on both)."""
    said = []
    for name in sorted(left):
        pod = pods.get(api, namespace, name)
        for c in claims_owned_by(api, pod):
            if is_special(c):
                allocated = "allocated" if (c.get("status") or {}).get("allocation") else "not allocated"
                named = "named in its status" if claim_status(pod) else "not named in its status"
                said.append(f"{name}: claim {c['metadata']['name']} {allocated}, {named}")
    return "; ".join(said)


@pytest.mark.requirement("FAULT-3")
def test_a_batch_is_served_when_the_scheduler_crashes_while_binding(
    target: Target,
    check: Checks,
    namespace: str,
    worker: Node,
    kind_nodes: KindNodes,
    record_property,
    held_at_start: dict[str, frozenset[str]],
) -> None:
    api = target.api
    control_plane = kind_nodes.control_planes[0]
    for attempt in range(1, BATCHES + 1):
        batch = [f"{n}-{attempt}" for n in RUNNING + ARRIVING]
        left = crash_between_claim_and_binding(target, control_plane, namespace, worker.name, batch)
        record_property(f"batch {attempt}: unbound pods with special claims at the crash", json.dumps(left))
        if left:
            break
        # Bound before the scheduler was caught between a claim and a binding: a new batch, this
        # one gone first (a node has devices for one batch at a time).
        for name in batch:
            api.delete("v1", "Pod", name, namespace)
        with check("FAULT-3", stop=True):
            for name in batch:
                pods.wait_gone(api, "v1", "Pod", name, namespace, timeout=120)
    else:
        check.not_tested(
            "FAULT-3",
            f"in {BATCHES} batches kube-scheduler was never caught between making a pod's special claim and "
            "binding the pod, so it was not crashed there",
        )
        return
    after = (
        f"kube-scheduler was killed between making special claims and binding the pods ({caught(api, namespace, left)})"
    )
    after = running_promptly(target, check, "FAULT-3", namespace, batch, after, control_plane)
    recovery.converged(target, check, "FAULT-3", namespace, batch, after=after, held_at_start=held_at_start)


@pytest.mark.requirement("FAULT-4")
def test_claims_are_collected_when_the_controller_manager_crashes_during_deletion(
    target: Target,
    check: Checks,
    namespace: str,
    worker: Node,
    kind_nodes: KindNodes,
    held_at_start: dict[str, frozenset[str]],
) -> None:
    api = target.api
    start_served(target, check, "FAULT-4", namespace, worker.name)
    for name in RUNNING:
        api.delete("v1", "Pod", name, namespace)
    faults.kill_component(kind_nodes.control_planes[0], "kube-controller-manager")
    # The new pods need the deleted pods' devices back only if the worker is short of them; the
    # oracle checks that the deleted pods' special claims are collected either way.
    arrive(target, namespace, worker.name)
    recovery.converged(
        target,
        check,
        "FAULT-4",
        namespace,
        ARRIVING,
        after="kube-controller-manager was killed while pods were deleted",
        held_at_start=held_at_start,
    )


@pytest.mark.requirement("FAULT-5")
def test_pods_run_again_with_the_same_devices_after_the_machine_restarts(
    target: Target, check: Checks, namespace: str, worker: Node, held_at_start: dict[str, frozenset[str]]
) -> None:
    machine_restarted(
        target, check, namespace, worker.name, lambda: faults.restart_machine(target.api, worker), held_at_start
    )


@pytest.mark.requirement("FAULT-6")
def test_service_goes_on_when_the_api_server_is_briefly_down(
    target: Target,
    check: Checks,
    namespace: str,
    worker: Node,
    kind_nodes: KindNodes,
    held_at_start: dict[str, frozenset[str]],
) -> None:
    before = start_served(target, check, "FAULT-6", namespace, worker.name)
    faults.kill_component(kind_nodes.control_planes[0], "kube-apiserver")
    after = "kube-apiserver was killed and came back"
    wait_answering(target, after)
    with check("FAULT-6"):
        driver_setup.wait_published(target.api, target.profile)
    arrive(target, namespace, worker.name)
    survivors.check_unchanged(target, check, before, "FAULT-6", after)
    # A scheduler that could not renew its lease while the API server was away exits, perhaps
    # in the middle of serving the arriving pods.
    after = running_promptly(
        target, check, "FAULT-6", namespace, RUNNING + ARRIVING, after, kind_nodes.control_planes[0]
    )
    recovery.converged(
        target, check, "FAULT-6", namespace, RUNNING + ARRIVING, after=after, held_at_start=held_at_start
    )
