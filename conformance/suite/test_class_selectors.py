"""A DRA-backed name is served only by devices its DeviceClass selects (KEP-1).

The suite's other classes select every device of the driver, so a scheduler that ignored a
class's selectors for the special claim would pass them all; here the class selects one device
name of the driver's, read from its ResourceSlices.
"""

from __future__ import annotations

import uuid

import pytest

from conformance.lib import devices, pods, scenario
from conformance.lib.checks import Checks
from conformance.lib.special_claim import allocated_devices, special_claim
from conformance.suite.conftest import Target


@pytest.mark.serial  # it names one device per node: tests running alongside could hold that one
@pytest.mark.requirement("KEP-1")
def test_the_special_claim_gets_only_devices_its_class_selects(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    api, p = target.api, target.profile
    published = sorted({device for _, device in devices.device_ids(api, p)})
    with check("KEP-1", stop=True):
        assert published, f"driver {p.driver} publishes no device"
    chosen = published[-1]
    name = f"example.com/selected-{uuid.uuid4().hex[:8]}"
    cls = pods.create_device_class(
        api, request, p.driver, name, prefix="selected", selects=f'device.name == "{chosen}"'
    )
    api.create(pods.pod("one", [pods.container("main", p, {name: 1})]), namespace)
    with check("KEP-1", stop=True):
        pod = pods.wait_running(api, namespace, "one", timeout=180)
    claim = special_claim(api, pod)
    with check("KEP-1"):
        got = [device for _, device in allocated_devices(claim or {})]
        assert got == [chosen], pods.observed(
            f"the class selects only devices named {chosen}; allocated {got}", pod, claim
        )
    scenario.verify_served(target, check, pod, classes={name: cls["metadata"]["name"]})
    # A node has at most one device of that name: two in one pod fit on none.
    api.create(pods.pod("two", [pods.container("main", p, {name: 2})]), namespace)
    with check("KEP-1"):
        pods.wait_unschedulable(api, namespace, "two", timeout=90)
    pods.check_stays_unscheduled(api, check, namespace, "two", "KEP-1", duration=15)
