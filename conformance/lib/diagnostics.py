"""What a failing test leaves behind: events, pods, claims, slices, the API server's endpoints and driver logs."""
from __future__ import annotations

import re
from pathlib import Path

import allure
import yaml
from kubernetes.client import CoreV1Api

from kube.api import RESOURCE_API, Api, Obj



def _clean(obj: Obj) -> Obj:
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


def collect(api: Api, namespace: str, driver_namespace: str | None, driver_selector: str | None,
            dest: Path) -> list[Path]:
    """Write the objects a person would look at first; attach each to the Allure report."""
    dest.mkdir(parents=True, exist_ok=True)
    dumps: dict[str, object] = {
        "events": sorted(({"time": e.get("lastTimestamp") or e.get("eventTime"), "object": e["involvedObject"].get("name"),
                           "type": e.get("type"), "reason": e.get("reason"), "message": e.get("message")}
                          for e in api.list("v1", "Event", namespace)), key=lambda e: str(e["time"])),
        "pods": [_clean(p) for p in api.list("v1", "Pod", namespace)],
        "resourceclaims": [_clean(c) for c in api.list(RESOURCE_API, "ResourceClaim", namespace)],
        "resourceslices": [_clean(s) for s in api.list(RESOURCE_API, "ResourceSlice")],
        "deviceclasses": [_clean(c) for c in api.list(RESOURCE_API, "DeviceClass")],
        # Where pods (a driver among them) reach the API server: after an upgrade or a restarted
        # API server, a driver refused there cannot read claims (docs/findings.md, session 14).
        "apiserver-endpointslices": [_clean(e) for e in api.list(
            "discovery.k8s.io/v1", "EndpointSlice", "default", label_selector="kubernetes.io/service-name=kubernetes")],
    }
    written = []
    for name, content in dumps.items():
        path = dest / f"{name}.yaml"
        path.write_text(yaml.safe_dump(content, sort_keys=False))
        written.append(path)
    if driver_namespace:
        written += _driver_logs(api, driver_namespace, driver_selector, dest)
    for path in written:
        allure.attach.file(str(path), name=path.name, attachment_type=allure.attachment_type.TEXT)
    return written


def _driver_logs(api: Api, namespace: str, selector: str | None, dest: Path) -> list[Path]:
    core = CoreV1Api(api.client)
    written = []
    for pod in core.list_namespaced_pod(namespace, label_selector=selector or "").items:
        for container in pod.spec.containers:
            try:
                text = core.read_namespaced_pod_log(pod.metadata.name, namespace, container=container.name, tail_lines=500)
            except Exception as err:  # a crashed or pending pod has no log: say so in the file
                text = f"(no log: {err})"
            path = dest / f"driver-{pod.metadata.name}-{container.name}.log"
            path.write_text(text)
            written.append(path)
    return written


def safe_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid)[-150:]
