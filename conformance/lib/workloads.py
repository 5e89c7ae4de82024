"""Applying stored workload manifests unmodified, and reading what their containers saw.

The harness sets only the namespace of each object; everything else is applied as written.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from conformance.lib.profile import Profile
from kube.api import Api, Obj

WORKLOAD_KINDS = {"Pod", "Deployment", "Job", "StatefulSet", "ReplicaSet", "DaemonSet"}


def load_manifest(path: Path) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def apply_manifest(api: Api, path: Path, namespace: str) -> list[Obj]:
    created = []
    for obj in load_manifest(path):
        obj.setdefault("metadata", {})["namespace"] = namespace
        created.append(api.create(obj, namespace))
    return created


def requested_names(objs: list[Obj]) -> set[str]:
    """Every extended resource name the manifest's containers ask for."""
    names: set[str] = set()
    for obj in objs:
        spec = obj["spec"] if obj["kind"] == "Pod" else obj["spec"].get("template", {}).get("spec", {})
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            res = c.get("resources") or {}
            names |= {n for part in ("limits", "requests") for n in (res.get(part) or {}) if "/" in n}
    return names


def pods_of(api: Api, namespace: str, objs: list[Obj]) -> list[Obj]:
    """The pods a manifest produced: bare pods by name, controllers' pods by their selector."""
    pods: list[Obj] = []
    for obj in objs:
        if obj["kind"] == "Pod":
            pod = api.get("v1", "Pod", obj["metadata"]["name"], namespace)
            pods += [pod] if pod else []
        elif obj["kind"] in WORKLOAD_KINDS:
            labels = obj["spec"]["selector"]["matchLabels"] if "selector" in obj["spec"] else \
                obj["spec"]["template"]["metadata"]["labels"]
            selector = ",".join(f"{k}={v}" for k, v in labels.items())
            pods += api.list("v1", "Pod", namespace, label_selector=selector)
    return pods


@dataclass(frozen=True)
class ContainerView:
    container: str
    device_ids: list[str]
    raw: str
    channels: dict[str, list[str]]  # the profile's further channels: name -> device ids they show


def probe_container(api: Api, profile: Profile, pod: Obj, container: str) -> ContainerView:
    """Run the profile's probe in a running container; read the log of a finished one."""
    name, ns = pod["metadata"]["name"], pod["metadata"]["namespace"]
    statuses = [*(pod["status"].get("initContainerStatuses") or []), *(pod["status"].get("containerStatuses") or [])]
    state = next((s.get("state") or {} for s in statuses if s["name"] == container), {})
    raw = api.exec(ns, name, list(profile.probe.command), container) if "running" in state else api.logs(ns, name, container)
    return ContainerView(container, profile.probe.device_ids(raw), raw, profile.probe.channel_ids(raw))
