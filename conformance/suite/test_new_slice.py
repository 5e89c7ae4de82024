"""A pod waiting for devices of a DRA-backed name is bound promptly once a ResourceSlice offers
one (KEP-4).

NAME-5 shows the retry on a new DeviceClass; here the class exists from the start and the devices
come later. The class maps a name of its own to a driver of its own, for which the test itself
publishes a one-device slice on a node the pod fits: nothing else can bring the pod in, and no
driver takes part (the pod is deleted once bound: no kubelet plugin exists to prepare it).
"""

from __future__ import annotations

import time
import uuid

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import RESOURCE_API
from conformance.suite.conftest import Target
from kube.api import Api
from kube.waits import WaitTimeout, wait_for

# kube-scheduler's backoff for a pod that failed is at most 10 s by default; its periodic retry of
# unschedulable pods, which would bring the pod in without any event, comes after five minutes.
PROMPT = 60
JUDGED = 90  # s for the scheduler's first word on a new pod (a busy 2-core host takes seconds)


def _first_word(api: Api, namespace: str, name: str) -> str | None:
    """The scheduler's first word on a pod: None once it is Unschedulable, the node once bound."""

    def word() -> tuple[str | None] | None:
        pod = pods.get(api, namespace, name)
        if node := pod.get("spec", {}).get("nodeName"):
            return (node,)
        return (None,) if pods.condition(pod, "PodScheduled").get("reason") == "Unschedulable" else None

    return wait_for(
        word,
        timeout=JUDGED,
        what=f"pod {name} Unschedulable or bound",
        describe=lambda: pods.summary(api, namespace, name),
    )[0]


@pytest.mark.requirement("KEP-4")
def test_a_new_slice_brings_a_waiting_pod_in(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    api, p = target.api, target.profile
    nodes = sorted(pods.dra_capacity(api, p.driver))
    if not nodes:
        pytest.skip(f"not tested: no node publishes devices of {p.driver}, so none is known to take such pods")
    suffix = uuid.uuid4().hex[:8]
    driver, name = f"late-{suffix}.kep5004.io", f"example.com/late-{suffix}"
    pods.create_device_class(api, request, driver, name, prefix="late")

    def ask(pod_name: str) -> str:
        api.create(pods.pod(pod_name, [pods.container("main", p, {name: 1})]), namespace)
        return pod_name

    waiting = ask("waiting")
    with check("KEP-4", stop=True):  # no word from the scheduler: nothing to judge KEP-4 by
        node = _first_word(api, namespace, waiting)
    if node:
        # No node has a device of the class, yet the pod got its name. kube-scheduler's plugins
        # read DeviceClasses from a cache its informer fills while a cycle runs: a pod created
        # right after its class can pass NodeResourcesFit (the name left to DRA) after
        # DynamicResources, earlier in the same cycle, found no class and asked for no claim
        # (BUG-13). A second pod, created once the first one's binding has shown the class in that
        # cache, tells the race from a scheduler that binds such pods always.
        status = pods.get(api, namespace, waiting).get("status", {}).get("extendedResourceClaimStatus")
        claims = [c["metadata"]["name"] for c in api.list(RESOURCE_API, "ResourceClaim", namespace)]
        first = (
            f"pod {waiting} was bound to {node} right after {name}'s class was created, although no node "
            f"offers a device of that class (its extendedResourceClaimStatus: {status}; claims in the "
            f"namespace: {claims})"
        )
        api.resource("v1", "Pod").delete(name=waiting, namespace=namespace, body={"gracePeriodSeconds": 0})
        waiting = ask("waiting-again")
        with check("KEP-4", stop=True):
            node = _first_word(api, namespace, waiting)
        if node:
            with check("ALLOC-2", stop=True):
                raise AssertionError(f"{first}; so was pod {waiting}, created when the class was long known, to {node}")
        check.known_bug(
            "ALLOC-2",
            "BUG-13",
            target.minor,
            f"{first}; pod {waiting}, created once the scheduler had used the class, was held Unschedulable",
        )

    slice_name = f"late-{suffix}"
    api.create(pods.node_slice(slice_name, driver, nodes[0], 1))
    request.addfinalizer(lambda: api.delete(RESOURCE_API, "ResourceSlice", slice_name))
    published = time.monotonic()
    try:
        pod = wait_for(
            lambda: (q := pods.get(api, namespace, waiting)).get("spec", {}).get("nodeName") and q,
            timeout=PROMPT,
            interval=1,
            what=f"pod {waiting} bound after a ResourceSlice offered a device of {name}'s class on {nodes[0]}",
            describe=lambda: pods.summary(api, namespace, waiting),
        )
    except WaitTimeout as late:
        with check("KEP-4"):
            raise AssertionError(
                f"{late}; the scheduler did not try the pod again on the new slice (its periodic retry "
                "of unschedulable pods comes only after five minutes)"
            ) from None
        return
    finally:
        # No plugin of that driver exists to prepare the pod: it goes as soon as it is judged.
        api.resource("v1", "Pod").delete(name=waiting, namespace=namespace, body={"gracePeriodSeconds": 0})
    check.that("KEP-4", True, "")  # bound within PROMPT s of the slice
    check.observe("KEP-4", f"bound to {pod['spec']['nodeName']} {time.monotonic() - published:.0f} s after the slice")
