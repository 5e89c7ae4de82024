"""A DRA-backed name is served only by devices its DeviceClass selects (KEP-1).

The suite's other classes select every device of the driver, so a scheduler that ignored a
class's selectors for the special claim would pass them all; here the class selects one device of
the driver's by an attribute value no other device has, read from its ResourceSlices.
"""

from __future__ import annotations

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import allocated_devices, special_claim
from conformance.lib.oracles import scenario
from conformance.suite.conftest import Target, lone_device


@pytest.mark.serial  # it takes the one device its class selects: tests running alongside could hold it
@pytest.mark.requirement("KEP-1")
def test_the_special_claim_gets_only_devices_its_class_selects(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    api, p = target.api, target.profile
    lone = lone_device(target, request, "selected")
    device, name = lone.device, lone.resource
    api.create(pods.pod("one", [pods.container("main", p, {name: 1})]), namespace)
    with check("KEP-1", stop=True):
        pod = pods.wait_running(api, namespace, "one", timeout=180)
    claim = special_claim(api, pod)
    with check("KEP-1"):
        got = allocated_devices(claim or {})
        assert got == [device], pods.observed(
            f"the class selects only {device} ({lone.selects}); allocated {got}", pod, claim
        )
    scenario.verify_served(target, check, pod, classes={name: lone.device_class})
    # The class selects one device in the whole cluster: two in one pod fit nowhere.
    api.create(pods.pod("two", [pods.container("main", p, {name: 2})]), namespace)
    with check("KEP-1"):
        pods.wait_unschedulable(api, namespace, "two", timeout=90)
    pods.check_stays_unscheduled(api, check, namespace, "two", "KEP-1", duration=15)
