"""ResourceQuota helpers for the quota tests: the keys KEP-5004 charges, and reading what is used.

Quota keys:
  count/resourceclaims.resource.k8s.io               claims, the special one included (QUOTA-1)
  <class>.deviceclass.resource.k8s.io/devices        devices of the class in claims (QUOTA-2)
  requests.<explicit name>                           pod requests + claim devices not counted via the pod (QUOTA-3, 1.35+)
  requests.deviceclass.resource.kubernetes.io/<cls>  devices of the class via claims and names (QUOTA-4, 1.35+)
"""

from __future__ import annotations

import json

from kubernetes.utils.quantity import parse_quantity

from conformance.lib.objects.special_claim import IMPLICIT_PREFIX
from kube.api import Api, Obj
from kube.waits import WaitTimeout, wait_for

CLAIM_COUNT = "count/resourceclaims.resource.k8s.io"


def devices_key(cls: str) -> str:
    return f"{cls}.deviceclass.resource.k8s.io/devices"


def implicit_key(cls: str) -> str:
    return f"requests.{IMPLICIT_PREFIX}{cls}"


def quota(name: str, keys: list[str], limit: int = 20) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": name},
        "spec": {"hard": {k: str(limit) for k in keys}},
    }


def used(api: Api, namespace: str, name: str) -> dict[str, int]:
    q = api.get("v1", "ResourceQuota", name, namespace) or {}
    return {k: int(parse_quantity(v)) for k, v in ((q.get("status") or {}).get("used") or {}).items()}


def settle(api: Api, namespace: str, name: str, expected: dict[str, int], timeout: float = 90) -> dict[str, int]:
    """Wait until status.used shows the expected values (admission and the quota controller
    update it asynchronously); return what it shows in the end, matching or not."""

    def matches() -> bool:
        now = used(api, namespace, name)
        return all(now.get(k, 0) == v for k, v in expected.items())

    try:
        wait_for(
            matches,
            timeout=timeout,
            interval=2,
            what=f"quota {name} used {expected}",
            describe=lambda: json.dumps(used(api, namespace, name)),
        )
    except WaitTimeout:
        pass  # each key is checked below with its own requirement
    return used(api, namespace, name)


def initialised(api: Api, namespace: str, name: str) -> None:
    """Wait until the quota controller has taken the quota on (status.hard set)."""
    wait_for(
        lambda: ((api.get("v1", "ResourceQuota", name, namespace) or {}).get("status") or {}).get("hard"),
        timeout=60,
        what=f"the quota controller to initialise quota {name}",
    )
