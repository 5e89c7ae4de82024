"""Building the pods the catalogue tests need from the profile, and waiting on them."""
from __future__ import annotations

import json

from conformance.lib.api import Api, Obj
from conformance.lib.waits import wait_for

SLEEP = "trap 'exit 0' TERM; sleep 3600 & wait"


def container(name: str, image: str, resources: dict[str, int], command: str = "", restart_always: bool = False) -> Obj:
    """A container asking for `resources` the usual way: integer limits only."""
    c: Obj = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent",
              "command": ["sh", "-c", command or f"fake-gpu-probe; {SLEEP}"],
              "resources": {"limits": {k: str(v) for k, v in resources.items()}}}
    if restart_always:
        c["restartPolicy"] = "Always"
    return c


def pod(name: str, containers: list[Obj], init: list[Obj] | None = None, restart: str = "Never") -> Obj:
    spec: Obj = {"containers": containers, "restartPolicy": restart, "terminationGracePeriodSeconds": 1}
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def get(api: Api, namespace: str, name: str) -> Obj:
    found = api.get("v1", "Pod", name, namespace)
    assert found is not None, f"pod {namespace}/{name} does not exist"
    return found


def condition(pod: Obj, kind: str) -> Obj:
    return next((c for c in (pod.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def summary(api: Api, namespace: str, name: str) -> str:
    found = api.get("v1", "Pod", name, namespace)
    if not found:
        return "pod is gone"
    status = found.get("status") or {}
    return json.dumps({"phase": status.get("phase"), "nodeName": found["spec"].get("nodeName"),
                       "conditions": status.get("conditions"),
                       "extendedResourceClaimStatus": status.get("extendedResourceClaimStatus"),
                       "containerStatuses": status.get("containerStatuses")}, indent=1)


def wait_running(api: Api, namespace: str, name: str, timeout: float = 120) -> Obj:
    return wait_for(lambda: (p := api.get("v1", "Pod", name, namespace)) and
                    (p.get("status") or {}).get("phase") == "Running" and p,
                    timeout=timeout, what=f"pod {name} to be Running", describe=lambda: summary(api, namespace, name))


def wait_phase(api: Api, namespace: str, name: str, phases: tuple[str, ...], timeout: float = 120) -> Obj:
    return wait_for(lambda: (p := api.get("v1", "Pod", name, namespace)) and
                    (p.get("status") or {}).get("phase") in phases and p,
                    timeout=timeout, what=f"pod {name} to reach {'/'.join(phases)}",
                    describe=lambda: summary(api, namespace, name))


def wait_unschedulable(api: Api, namespace: str, name: str, timeout: float = 60) -> Obj:
    """PodScheduled=False with reason Unschedulable (never the message text: it is not stable)."""
    return wait_for(lambda: (p := api.get("v1", "Pod", name, namespace)) and
                    condition(p, "PodScheduled").get("reason") == "Unschedulable" and p,
                    timeout=timeout, what=f"pod {name} to be Unschedulable", describe=lambda: summary(api, namespace, name))
