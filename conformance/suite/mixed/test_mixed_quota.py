"""Quota in a cluster where one name is served by a device plugin on one node and by DRA on
another (spec §3.10 with §3.8, not a spec ID: KEP-5). Admission charges a pod before anyone knows which path
will serve it, so `requests.<name>` must charge each pod once whichever node it lands on, while
the claim keys may only grow for the pod that really got a special claim.
"""

from __future__ import annotations

import pytest

from conformance.catalogue import requirement
from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.quota import CLAIM_COUNT, devices_key, initialised, quota, settle
from conformance.suite.conftest import Target
from conformance.suite.mixed import helpers
from conformance.suite.mixed.conftest import Workers


@pytest.mark.serial
@pytest.mark.requirement("KEP-5")
def test_each_path_charges_a_pod_once(check: Checks, target: Target, namespace: str, workers: Workers) -> None:
    api, p = target.api, target.profile
    applies, why = requirement("KEP-5").applies_to(target.minor, gate_enabled=True)
    if not applies:
        pytest.skip(why)
    name_key = f"requests.{p.extended_resource_name}"
    expected = {name_key: 2, CLAIM_COUNT: 1, devices_key(p.device_class): 1}
    api.create(quota("mixed", list(expected)), namespace)
    initialised(api, namespace, "mixed")
    placed = {"on-dra": workers.dra, "on-device-plugin": workers.device_plugin}
    for name, node in placed.items():
        api.create(helpers.pinned_pod(name, p, node, {p.extended_resource_name: 1}), namespace)
    with check("KEP-5", stop=True):
        running = {name: pods.wait_running(api, namespace, name, timeout=180) for name in placed}
    paths = {name: helpers.path_of(pod) for name, pod in running.items()}
    # Prerequisite, not the requirement: each pod was served the way its node offers the name.
    assert paths == {"on-dra": "dra", "on-device-plugin": "device-plugin"}, (
        f"each pod should be served by its node's path: {paths}\n"
        + "\n".join(helpers.pod_state(api, namespace, name) for name in placed)
    )
    now = settle(api, namespace, "mixed", expected)
    check.that(
        "KEP-5",
        all(now.get(key, 0) == value for key, value in expected.items()),
        f"quota used {now}, expected {expected}: {name_key} one per pod whichever path served it, "
        f"one special claim and its one device for the pod on the DRA node only\n"
        + "\n".join(helpers.pod_state(api, namespace, name) for name in placed),
    )
