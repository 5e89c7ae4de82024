"""ResourceQuota accounting of special claims and DRA-backed names (spec §3.10; QUOTA-*).

Quota keys:
  count/resourceclaims.resource.k8s.io               claims, the special one included (QUOTA-1)
  <class>.deviceclass.resource.k8s.io/devices        devices of the class in claims (QUOTA-2)
  requests.<explicit name>                           pod requests + claim devices not counted via the pod (QUOTA-3, 1.35+)
  requests.deviceclass.resource.kubernetes.io/<cls>  devices of the class via claims and names (QUOTA-4, 1.35+)
A pod's devices must be charged once (QUOTA-5).
"""
from __future__ import annotations

import json

import pytest
from kubernetes.utils.quantity import parse_quantity

from conformance.lib import pods, scenario
from conformance.lib.special_claim import IMPLICIT_PREFIX
from conformance.lib.waits import WaitTimeout, wait_for
from conformance.suite.conftest import Target

CLAIM_COUNT = "count/resourceclaims.resource.k8s.io"


def devices_key(cls: str) -> str:
    return f"{cls}.deviceclass.resource.k8s.io/devices"


def implicit_key(cls: str) -> str:
    return f"requests.{IMPLICIT_PREFIX}{cls}"


def quota(name: str, keys: list[str], limit: int = 20) -> dict:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
            "spec": {"hard": {k: str(limit) for k in keys}}}


def used(api, namespace: str, name: str) -> dict[str, int]:
    q = api.get("v1", "ResourceQuota", name, namespace) or {}
    return {k: int(parse_quantity(v)) for k, v in ((q.get("status") or {}).get("used") or {}).items()}


def settle(api, namespace: str, name: str, expected: dict[str, int], timeout: float = 90) -> dict[str, int]:
    """Wait until status.used shows the expected values (admission and the quota controller
    update it asynchronously); return what it shows in the end, matching or not."""
    def matches() -> bool:
        now = used(api, namespace, name)
        return all(now.get(k, 0) == v for k, v in expected.items())
    try:
        wait_for(matches, timeout=timeout, interval=2, what=f"quota {name} used {expected}",
                 describe=lambda: json.dumps(used(api, namespace, name)))
    except WaitTimeout:
        pass  # each key is asserted below with its own requirement
    return used(api, namespace, name)


@pytest.mark.requirement("QUOTA-1", "QUOTA-2", "QUOTA-3", "QUOTA-4", "QUOTA-5")
def test_quota_counts_special_claim_once(target: Target, namespace: str) -> None:
    api, p = target.api, target.profile
    cls, ern = p.device_class, p.extended_resource_name
    keys = [CLAIM_COUNT, devices_key(cls), f"requests.{ern}"]
    # The implicit-name quota key and the implicit name in pods exist from 1.35 on.
    modern = target.minor >= (1, 35)
    if modern:
        keys.append(implicit_key(cls))
    api.create(quota("dra", keys), namespace)
    with pods.requirement("QUOTA-1"):
        wait_for(lambda: (api.get("v1", "ResourceQuota", "dra", namespace) or {}).get("status", {}).get("hard"),
                 timeout=60, what="the quota controller to initialise quota dra")
    # An ordinary claim for one device of the class, not used by any pod (quota counts its spec).
    api.create(pods.user_claim("unused", cls, count=1), namespace)
    # 1.35+: one explicit and one implicit unit, so requests.<explicit> must add the implicit
    # device the pod spec does not count (QUOTA-3), and both keys must count each device once.
    # 1.34: implicit names are not served (BUG-1), so two explicit units.
    resources = {ern: 1, p.implicit_resource_name: 1} if modern else {ern: 2}
    api.create(pods.pod("quota", [pods.container("main", p.workload_image, resources)]), namespace)
    with pods.requirement("QUOTA-1"):
        pod = pods.wait_running(api, namespace, "quota", timeout=180)
    served = scenario.verify_served(target, pod)
    expected = {CLAIM_COUNT: 2, devices_key(cls): 3, f"requests.{ern}": 3 if modern else 2}
    if modern:
        expected[implicit_key(cls)] = 3
    now = settle(api, namespace, "dra", expected)
    shown = f"quota used {now}, expected {expected}\n{pods.summary(api, namespace, 'quota')}\nspecial claim requests: " \
            f"{served.claim['spec']['devices']['requests']}"
    assert now.get(CLAIM_COUNT) == 2, f"[QUOTA-1] special claim + ordinary claim should count 2: {shown}"
    assert now.get(devices_key(cls)) == 3, f"[QUOTA-2] 2 special-claim devices + 1 ordinary should count 3: {shown}"
    if modern:
        ern_used = now.get(f"requests.{ern}")
        assert ern_used is not None and ern_used <= 3, f"[QUOTA-5] requests.{ern} counts devices twice: {shown}"
        assert ern_used == 3, f"[QUOTA-3] requests.{ern} should be 1 (pod) + 1 implicit + 1 claim = 3: {shown}"
        implicit_used = now.get(implicit_key(cls))
        assert implicit_used is not None and implicit_used <= 3, f"[QUOTA-5] {implicit_key(cls)} counts devices twice: {shown}"
        assert implicit_used == 3, f"[QUOTA-4] {implicit_key(cls)} should be 3: {shown}"
    else:
        # 1.34 counts only what pod specs ask for under the explicit name.
        assert now.get(f"requests.{ern}") == 2, f"[QUOTA-3] 1.34: requests.{ern} should count the pod's 2: {shown}"


@pytest.mark.requirement("QUOTA-4")
def test_implicit_quota_key_for_class_without_explicit_name(target: Target, namespace: str,
                                                             request: pytest.FixtureRequest) -> None:
    api, p = target.api, target.profile
    cls = pods.create_device_class(api, request, p.driver, prefix="quota")["metadata"]["name"]
    api.create(quota("implicit", [CLAIM_COUNT, devices_key(cls), implicit_key(cls)]), namespace)
    with pods.requirement("QUOTA-4"):
        wait_for(lambda: (api.get("v1", "ResourceQuota", "implicit", namespace) or {}).get("status", {}).get("hard"),
                 timeout=60, what="the quota controller to initialise quota implicit")
    name = IMPLICIT_PREFIX + cls
    api.create(pods.pod("implicit-quota", [pods.container("main", p.workload_image, {name: 2})]), namespace)
    with pods.requirement("QUOTA-4"):
        pod = pods.wait_running(api, namespace, "implicit-quota", timeout=180)
    scenario.verify_served(target, pod, classes={name: cls})
    expected = {CLAIM_COUNT: 1, devices_key(cls): 2, implicit_key(cls): 2}
    now = settle(api, namespace, "implicit", expected)
    # The spec's primary statement: the key counts the class's devices requested through the
    # implicit name (2). Its open question: a class without extendedResourceName may not be
    # charged at all (0). The observed value below settles it on this cluster.
    assert now.get(implicit_key(cls), 0) == 2, \
        (f"[QUOTA-4] {implicit_key(cls)} for class {cls} without extendedResourceName is {now.get(implicit_key(cls), 0)}, "
         f"expected 2 (quota used {now}; claims counted {now.get(CLAIM_COUNT)}, class devices {now.get(devices_key(cls))})")
