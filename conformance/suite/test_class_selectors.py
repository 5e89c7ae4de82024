"""A DRA-backed name is served only by devices its DeviceClass selects (KEP-1).

The suite's other classes select every device of the driver, so a scheduler that ignored a
class's selectors for the special claim would pass them all; here the class selects one device of
the driver's by an attribute value no other device has, read from its ResourceSlices.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter

import pytest

from conformance.lib import pods, scenario
from conformance.lib.checks import Checks
from conformance.lib.special_claim import RESOURCE_API, allocated_devices, special_claim
from conformance.suite.conftest import Target
from kube.api import Api


def one_device(api: Api, driver: str) -> tuple[tuple[str, str], str] | None:
    """A device of `driver` as (pool, name) and a CEL expression true for it alone: an attribute
    whose value no other device of the driver shares (CEL sees a device's attributes, not its name)."""
    attributes: list[tuple[tuple[str, str], str, str]] = []  # (pool, device), qualified name, value as CEL
    for s in api.list(RESOURCE_API, "ResourceSlice"):
        if s["spec"]["driver"] != driver:
            continue
        for d in s["spec"].get("devices") or []:
            for name, typed in (d.get("attributes") or {}).items():
                value = typed.get("string", typed.get("int"))
                if value is not None:
                    qualified = name if "/" in name else f"{driver}/{name}"
                    attributes.append(((s["spec"]["pool"]["name"], d["name"]), qualified, json.dumps(value)))
    shared = Counter((name, value) for _, name, value in attributes)
    unique = sorted((device, name, value) for device, name, value in attributes if shared[(name, value)] == 1)
    if not unique:
        return None
    device, qualified, value = unique[-1]
    domain, name = qualified.rsplit("/", 1)
    return device, f'device.attributes["{domain}"].{name} == {value}'


@pytest.mark.serial  # it takes the one device its class selects: tests running alongside could hold it
@pytest.mark.requirement("KEP-1")
def test_the_special_claim_gets_only_devices_its_class_selects(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    api, p = target.api, target.profile
    found = one_device(api, p.driver)
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
