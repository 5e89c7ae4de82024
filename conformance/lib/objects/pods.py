"""Building the pods the catalogue tests need from the profile, and waiting on them."""

from __future__ import annotations

import json
import time
import uuid as _uuid
from collections.abc import Callable

import pytest

from conformance.lib.checks import Checks
from conformance.lib.objects import node_failures
from conformance.lib.objects.cleanup import labelled
from conformance.lib.objects.special_claim import allocated_devices
from conformance.lib.profile import Profile
from kube.api import RESOURCE_API, Api, Obj
from kube.waits import WaitTimeout, holds_for, wait_for

SLEEP = "trap 'exit 0' TERM; sleep 3600 & wait"


def container(
    name: str, profile: Profile, resources: dict[str, int], command: str = "", restart_always: bool = False
) -> Obj:
    """A container of the profile's workload image asking for `resources` the usual way (integer
    limits only); by default it runs the profile's probe, then sleeps."""
    c: Obj = {
        "name": name,
        "image": profile.workload_image,
        "imagePullPolicy": profile.workload_pull_policy,
        "command": ["sh", "-c", command or f"{profile.probe.shell}; {SLEEP}"],
        "resources": {"limits": {k: str(v) for k, v in resources.items()}},
    }
    if restart_always:
        c["restartPolicy"] = "Always"
    return c


def pod(name: str, containers: list[Obj], init: list[Obj] | None = None, restart: str = "Never") -> Obj:
    spec: Obj = {"containers": containers, "restartPolicy": restart, "terminationGracePeriodSeconds": 1}
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def only_on(nodes: list[str]) -> Obj:
    """Node affinity to these nodes by metadata.name (terms are ORed: a field selector takes one
    value per term). The scheduler still decides, unlike spec.nodeName, so allocation and its
    failures happen as for any pod."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_named(n) for n in nodes]}
        }
    }


def _named(node: str) -> Obj:
    """A node selector term matching `node` by metadata.name."""
    return {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}


def pinned(p: Obj, node: str) -> Obj:
    """`p`, placeable only on `node`."""
    p["spec"]["affinity"] = only_on([node])
    return p


def preferring(p: Obj, node: str) -> Obj:
    """`p`, preferring `node` (NodeAffinity's score; any other node stays possible)."""
    p["spec"]["affinity"] = {
        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": _named(node)}]}
    }
    return p


class Abandoned(AssertionError):
    """A wait ended before its deadline: what it waited for can no longer happen (the reason)."""


def landing(
    api: Api,
    namespace: str,
    pod_obj: Obj,
    timeout: float = 120,
    hopeless: Callable[[], str | None] | None = None,
) -> Obj:
    """Create the pod, wait until the scheduler binds it, delete it and wait until it and its
    claims are gone (so that its devices are free for the next one); the pod as it was bound.
    While it is unbound, `hopeless` may end the wait with a reason (Abandoned; the pod is left
    in place)."""
    name = pod_obj["metadata"]["name"]
    api.create(pod_obj, namespace)

    def bound() -> Obj | None:
        found = api.get("v1", "Pod", name, namespace)
        if found and found["spec"].get("nodeName"):
            return found
        if hopeless and (reason := hopeless()):
            raise Abandoned(f"pod {name} left unbound: {reason}")
        return None

    # Polled often: a binding takes well under a second, and callers place pods one after the
    # other (SCORE-2, MIXED-4), each waiting for the last to be gone.
    placed = wait_for(
        bound,
        timeout=timeout,
        interval=0.25,
        what=f"pod {name} bound to a node",
        describe=lambda: summary(api, namespace, name),
    )
    api.delete("v1", "Pod", name, namespace)
    wait_gone(api, "v1", "Pod", name, namespace, interval=0.5)
    wait_for(
        lambda: not _claims_of(api, namespace, placed["metadata"]["uid"]),
        timeout=60,
        interval=0.5,
        what=f"the claims of pod {name} deleted after it",
        describe=lambda: str(_claims_of(api, namespace, placed["metadata"]["uid"])),
    )
    return placed


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
    return json.dumps(
        {
            "phase": status.get("phase"),
            "nodeName": found["spec"].get("nodeName"),
            "conditions": status.get("conditions"),
            "extendedResourceClaimStatus": status.get("extendedResourceClaimStatus"),
            "containerStatuses": status.get("containerStatuses"),
        },
        indent=1,
    )


def wait_running(api: Api, namespace: str, name: str, timeout: float = 120) -> Obj:
    """The pod once Running. A node-side cause found meanwhile (the driver's prepare failing again
    and again, CDI devices the runtime could not inject) ends the wait as a failure of the ID
    that judges it (conformance/lib/objects/node_failures.py), not as this wait's timeout."""

    def running() -> Obj | None:
        pod = api.get("v1", "Pod", name, namespace)
        if pod and (pod.get("status") or {}).get("phase") == "Running":
            return pod
        if pod and (cause := node_failures.blame(api, pod)):
            raise cause
        return None

    try:
        return wait_for(
            running, timeout=timeout, what=f"pod {name} to be Running", describe=lambda: summary(api, namespace, name)
        )
    except WaitTimeout:
        pod = api.get("v1", "Pod", name, namespace)
        if pod and (cause := node_failures.blame(api, pod, settled=True)):
            raise cause from None
        raise


def wait_phase(api: Api, namespace: str, name: str, phases: tuple[str, ...], timeout: float = 120) -> Obj:
    return wait_for(
        lambda: (p := api.get("v1", "Pod", name, namespace)) and (p.get("status") or {}).get("phase") in phases and p,
        timeout=timeout,
        what=f"pod {name} to reach {'/'.join(phases)}",
        describe=lambda: summary(api, namespace, name),
    )


def wait_unschedulable(api: Api, namespace: str, name: str, timeout: float = 60) -> Obj:
    """PodScheduled=False with reason Unschedulable (never the message text: it is not stable)."""
    return wait_for(
        lambda: (
            (p := api.get("v1", "Pod", name, namespace))
            and condition(p, "PodScheduled").get("reason") == "Unschedulable"
            and p
        ),
        timeout=timeout,
        what=f"pod {name} to be Unschedulable",
        describe=lambda: summary(api, namespace, name),
    )


# --- Helpers for the catalogue tests (allocation, naming, claims, containers, quota, workloads) ---


def device_class(
    name: str,
    driver: str,
    extended_resource_name: str | None = None,
    selects: str | None = None,
    parameters: Obj | None = None,
) -> Obj:
    """A DeviceClass selecting every device of `driver` (those of them the CEL expression
    `selects` is true for, where given), optionally with an explicit name and with opaque
    configuration `parameters` for the driver."""
    expression = f'device.driver == "{driver}"' + (f" && ({selects})" if selects else "")
    spec: Obj = {"selectors": [{"cel": {"expression": expression}}]}
    if extended_resource_name is not None:
        spec["extendedResourceName"] = extended_resource_name
    if parameters is not None:
        spec["config"] = [{"opaque": {"driver": driver, "parameters": parameters}}]
    return labelled({"apiVersion": RESOURCE_API, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec})


def node_slice(name: str, driver: str, node: str, devices: int) -> Obj:
    """A ResourceSlice of its own pool, publishing `devices` attribute-less devices of `driver` on
    `node` (dev-0, dev-1, ...), as a driver's kubelet plugin would."""
    return labelled(
        {
            "apiVersion": RESOURCE_API,
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": f"dev-{i}"} for i in range(devices)],
            },
        }
    )


def create_device_class(
    api: Api,
    request: pytest.FixtureRequest,
    driver: str,
    extended_resource_name: str | None = None,
    prefix: str = "cls",
    name: str | None = None,
    selects: str | None = None,
    parameters: Obj | None = None,
) -> Obj:
    """Create a uniquely named DeviceClass; it is deleted when the test ends unless --keep."""
    name = name or f"{prefix}-{_uuid.uuid4().hex[:8]}.kep5004.io"
    created = api.create(device_class(name, driver, extended_resource_name, selects, parameters))
    if not request.config.getoption("--keep"):
        request.addfinalizer(lambda: api.delete(RESOURCE_API, "DeviceClass", name))
    return created


def user_claim(name: str, device_class_name: str, count: int = 1, request_name: str = "gpu") -> Obj:
    """An ordinary ResourceClaim asking for `count` devices of a class."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": request_name,
                        "exactly": {
                            "deviceClassName": device_class_name,
                            "allocationMode": "ExactCount",
                            "count": count,
                        },
                    }
                ]
            }
        },
    }


def dra_capacity(api: Api, driver: str) -> dict[str, int]:
    """node -> number of devices the driver publishes for it (node-local ResourceSlices)."""
    counts: dict[str, int] = {}
    for s in api.list(RESOURCE_API, "ResourceSlice"):
        if s["spec"]["driver"] == driver and s["spec"].get("nodeName"):
            node = s["spec"]["nodeName"]
            counts[node] = counts.get(node, 0) + len(s["spec"].get("devices") or [])
    return counts


def pool_nodes(api: Api, driver: str) -> dict[str, str]:
    """pool name -> node of the driver's node-local ResourceSlices."""
    return {
        s["spec"]["pool"]["name"]: s["spec"]["nodeName"]
        for s in api.list(RESOURCE_API, "ResourceSlice")
        if s["spec"]["driver"] == driver and s["spec"].get("nodeName")
    }


def owned_claims(api: Api, namespace: str, name: str) -> list[str]:
    """Names of the claims in the namespace whose controller is the named pod (any uid)."""
    found = api.get("v1", "Pod", name, namespace)
    return _claims_of(api, namespace, found["metadata"]["uid"]) if found else []


def _claims_of(api: Api, namespace: str, uid: str) -> list[str]:
    """Names of the claims in the namespace whose controller is the pod of this uid."""
    return [
        c["metadata"]["name"]
        for c in api.list(RESOURCE_API, "ResourceClaim", namespace)
        if any(o.get("uid") == uid and o.get("controller") for o in c["metadata"].get("ownerReferences") or [])
    ]


def unscheduled_state(api: Api, namespace: str, name: str) -> str:
    """The pod summary plus the claims it owns: what a Pending-pod assertion shows."""
    return f"{summary(api, namespace, name)}\nclaims owned by the pod: {owned_claims(api, namespace, name)}"


def is_unscheduled(api: Api, namespace: str, name: str, reason: str | None = "Unschedulable") -> bool:
    """Pending, PodScheduled=False (with `reason` unless None), no nodeName, no claim, no status."""
    p = api.get("v1", "Pod", name, namespace)
    if not p:
        return False
    cond = condition(p, "PodScheduled")
    status = p.get("status") or {}
    return (
        status.get("phase") == "Pending"
        and not p["spec"].get("nodeName")
        and cond.get("status") == "False"
        and (reason is None or cond.get("reason") == reason)
        and not status.get("extendedResourceClaimStatus")
        and not owned_claims(api, namespace, name)
    )


def check_stays_unscheduled(
    api: Api,
    check: Checks,
    namespace: str,
    name: str,
    req_id: str,
    duration: float = 15,
    reason: str | None = "Unschedulable",
) -> None:
    """Check `req_id`: the pod becomes unscheduled (see is_unscheduled) and stays so for `duration` s."""
    what = (
        f"pod {name} Pending with PodScheduled=False{f' ({reason})' if reason else ''}, "
        "no special claim and no extendedResourceClaimStatus"
    )

    def settled() -> bool:  # unscheduled as required, or bound to a node (then holds_for fails at once)
        found = api.get("v1", "Pod", name, namespace)
        return bool(found and found["spec"].get("nodeName")) or is_unscheduled(api, namespace, name, reason)

    with check(req_id):
        wait_for(settled, timeout=90, what=what, describe=lambda: unscheduled_state(api, namespace, name))
        holds_for(
            lambda: is_unscheduled(api, namespace, name, reason),
            duration=duration,
            what=what,
            describe=lambda: unscheduled_state(api, namespace, name),
        )


def wait_event(api: Api, namespace: str, name: str, reason: str, timeout: float = 60) -> Obj:
    """An event with `reason` about the object (its message is not looked at: it is not stable)."""

    def events() -> list[Obj]:
        return api.list("v1", "Event", namespace, field_selector=f"involvedObject.name={name}")

    return wait_for(
        lambda: next((e for e in events() if e.get("reason") == reason), None),
        timeout=timeout,
        what=f"a {reason} event for {name}",
        describe=lambda: str([(e.get("reason"), e.get("type")) for e in events()]),
    )


def wait_gone(
    api: Api, api_version: str, kind: str, name: str, namespace: str | None, timeout: float = 180, interval: float = 2
) -> None:
    """Wait until the object no longer exists (NotFound)."""
    wait_for(
        lambda: api.get(api_version, kind, name, namespace) is None,
        timeout=timeout,
        interval=interval,
        what=f"{kind} {namespace + '/' if namespace else ''}{name} to be deleted",
        describe=lambda: json.dumps(
            {
                k: v
                for k, v in ((api.get(api_version, kind, name, namespace) or {}).get("metadata") or {}).items()
                if k in ("deletionTimestamp", "finalizers", "ownerReferences")
            }
        ),
    )


def wait_elapsed(seconds: float) -> None:
    """Let at least `seconds` of wall-clock time pass, through the suite's deadline wait (used where
    a later creationTimestamp is needed; timestamps have one-second granularity)."""
    start = time.monotonic()
    wait_for(
        lambda: time.monotonic() - start >= seconds, timeout=seconds + 5, interval=0.1, what=f"{seconds} s to pass"
    )


def claim_devices(api: Api, namespace: str, claim_name: str) -> list[tuple[str, str]]:
    """(pool, device) pairs allocated to a claim; [] if it is gone or not allocated."""
    return allocated_devices(api.get(RESOURCE_API, "ResourceClaim", claim_name, namespace) or {})


def observed(problems: str, p: Obj | None, claim: Obj | None = None) -> str:
    """Problems followed by the pod status and the claim, for assertion messages."""
    shown = {
        "pod": p
        and {
            "name": p["metadata"]["name"],
            "uid": p["metadata"].get("uid"),
            "nodeName": p["spec"].get("nodeName"),
            "status": {
                k: (p.get("status") or {}).get(k)
                for k in ("phase", "conditions", "extendedResourceClaimStatus", "resourceClaimStatuses")
            },
        },
        "claim": claim
        and {
            "metadata": {
                k: claim["metadata"].get(k) for k in ("name", "uid", "annotations", "ownerReferences", "finalizers")
            },
            "spec": claim.get("spec"),
            "status": claim.get("status"),
        },
    }
    return f"{problems}\nobserved:\n{json.dumps(shown, indent=1, default=str)}"
