"""A DRA-backed name is served only by devices its DeviceClass selects (KEP-1).

The suite's other classes select every device of the driver, so a scheduler that ignored a
class's selectors for the special claim would pass them all; here the class selects one device of
the driver's by an attribute value no other device has, read from its ResourceSlices.
"""

from __future__ import annotations

import uuid

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import allocated_devices, special_claim
from conformance.lib.oracles import devices, scenario
from conformance.suite.conftest import Target


@pytest.mark.serial  # it takes the one device its class selects: tests running alongside could hold it
@pytest.mark.requirement("KEP-1")
def test_the_special_claim_gets_only_devices_its_class_selects(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    api, p = target.api, target.profile
    found = devices.one_device(api, p.driver)
    if found is None:
        pytest.skip(f"not tested: driver {p.driver} publishes no attribute whose value tells one device apart")
    device, selects = found
    name = f"example.com/selected-{uuid.uuid4().hex[:8]}"
    cls = pods.create_device_class(api, request, p.driver, name, prefix="selected", selects=selects)
    api.create(pods.pod("one", [pods.container("main", p, {name: 1})]), namespace)
    with check("KEP-1", stop=True):
        pod = pods.wait_running(api, namespace, "one", timeout=180)
    claim = special_claim(api, pod)
    with check("KEP-1"):
        got = allocated_devices(claim or {})
        assert got == [device], pods.observed(
            f"the class selects only {device} ({selects}); allocated {got}", pod, claim
        )
    scenario.verify_served(target, check, pod, classes={name: cls["metadata"]["name"]})
    # The class selects one device in the whole cluster: two in one pod fit nowhere.
    api.create(pods.pod("two", [pods.container("main", p, {name: 2})]), namespace)
    with check("KEP-1"):
        pods.wait_unschedulable(api, namespace, "two", timeout=90)
    pods.check_stays_unscheduled(api, check, namespace, "two", "KEP-1", duration=15)
