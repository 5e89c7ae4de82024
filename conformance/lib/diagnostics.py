"""What a failing test leaves behind: events, pods, claims, slices, the API server's endpoints and driver logs."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import allure
import yaml
from kubernetes.client import CoreV1Api

from kube.api import RESOURCE_API, TRANSIENT_ERRORS, Api, Obj
from kube.waits import WaitTimeout, wait_for

T = TypeVar("T")
# How long the diagnostics of one test wait, in all, for an API server that is not answering:
# tests that restart it (upgrade, faults) can fail while it is away, and it is usually back
# well within this. Beyond it, each file says why it is empty instead of failing the test twice.
API_BACK_S = 60


class _Reader:
    """Reads for one test's diagnostics, sharing one deadline for an API server that is away."""

    def __init__(self) -> None:
        self.end = time.monotonic() + API_BACK_S

    def __call__(self, read: Callable[[], T], what: str) -> T | str:
        try:
            return wait_for(
                lambda: (read(),),
                timeout=max(0.0, self.end - time.monotonic()),
                interval=2,
                what=what,
                transient=TRANSIENT_ERRORS,
            )[0]
        except WaitTimeout as err:
            return f"(could not be read: {err})"


def _clean(obj: Obj) -> Obj:
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


def collect(
    api: Api, namespace: str, driver_namespace: str | None, driver_selector: str | None, dest: Path
) -> list[Path]:
    """Write the objects a person would look at first; attach each to the Allure report. Never
    raises for an API server that does not answer: each file then says why it is empty."""
    dest.mkdir(parents=True, exist_ok=True)
    read = _Reader()
    lists: dict[str, tuple[str, str, str | None, dict[str, str]]] = {
        "events": ("v1", "Event", namespace, {}),
        "pods": ("v1", "Pod", namespace, {}),
        "resourceclaims": (RESOURCE_API, "ResourceClaim", namespace, {}),
        "resourceslices": (RESOURCE_API, "ResourceSlice", None, {}),
        "deviceclasses": (RESOURCE_API, "DeviceClass", None, {}),
        # Where pods (a driver among them) reach the API server: after an upgrade or a restarted
        # API server, a driver refused there cannot read claims (docs/upstream/downgrade-service-refused.md).
        "apiserver-endpointslices": (
            "discovery.k8s.io/v1",
            "EndpointSlice",
            "default",
            {"label_selector": "kubernetes.io/service-name=kubernetes"},
        ),
    }
    written = []
    for name, (version, kind, ns, selectors) in lists.items():
        found = read(lambda: api.list(version, kind, ns, **selectors), f"{kind} objects to be listed")
        content = found if isinstance(found, str) else _events(found) if kind == "Event" else [_clean(o) for o in found]
        path = dest / f"{name}.yaml"
        path.write_text(yaml.safe_dump(content, sort_keys=False))
        written.append(path)
    if driver_namespace:
        written += _driver_logs(api, driver_namespace, driver_selector, dest, read)
    for path in written:
        allure.attach.file(str(path), name=path.name, attachment_type=allure.attachment_type.TEXT)
    return written


def _events(events: list[Obj]) -> list[dict[str, Any]]:
    return sorted(
        (
            {
                "time": e.get("lastTimestamp") or e.get("eventTime"),
                "object": e["involvedObject"].get("name"),
                "type": e.get("type"),
                "reason": e.get("reason"),
                "message": e.get("message"),
            }
            for e in events
        ),
        key=lambda e: str(e["time"]),
    )


def _driver_logs(api: Api, namespace: str, selector: str | None, dest: Path, read: _Reader) -> list[Path]:
    core = CoreV1Api(api.client)
    pods = read(
        lambda: core.list_namespaced_pod(namespace, label_selector=selector or "").items,
        f"the driver's pods in {namespace} to be listed",
    )
    if isinstance(pods, str):
        path = dest / "driver-pods.log"
        path.write_text(pods)
        return [path]
    written = []
    for pod in pods:
        # Optional in the generated models, always set on a pod the API server lists.
        assert pod.metadata is not None and pod.metadata.name is not None and pod.spec is not None
        name = pod.metadata.name
        for container in pod.spec.containers:
            try:
                text = core.read_namespaced_pod_log(name, namespace, container=container.name, tail_lines=500)
            except Exception as err:  # a crashed or pending pod has no log: say so in the file
                text = f"(no log: {err})"
            path = dest / f"driver-{name}-{container.name}.log"
            path.write_text(text)
            written.append(path)
    return written


def safe_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid)[-150:]
