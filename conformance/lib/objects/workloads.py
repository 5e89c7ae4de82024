"""Applying stored workload manifests unmodified, and reading what their containers saw.

The harness sets only the namespace of each object; everything else is applied as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from conformance.lib.profile import Profile
from kube.api import Api, ExecError, Obj

WORKLOAD_KINDS = {"Pod", "Deployment", "Job", "StatefulSet", "ReplicaSet", "DaemonSet"}
# Namespaced objects a workload may bring along and refer to.
COMPANION_KINDS = {"Service", "ResourceClaim", "ResourceClaimTemplate", "ConfigMap", "Secret", "ServiceAccount"}


def load_manifest(path: Path) -> list[Obj]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def manifest_problems(path: Path) -> list[str]:
    """Why a manifest cannot be applied as a workload (each problem a line), before anything is
    created: not YAML, documents that are no Kubernetes object, kinds that are neither a workload
    nor a namespaced object one lives on, or no workload at all."""
    try:
        docs = load_manifest(path)
    except yaml.YAMLError as err:
        return [f"{path.name}: not valid YAML: {' '.join(str(err).split())}"]
    problems, workloads = [], 0
    for i, doc in enumerate(docs, 1):
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if not kind or not doc.get("apiVersion"):
            problems.append(f"{path.name}: document {i} is not a Kubernetes object (apiVersion and kind)")
        elif kind in WORKLOAD_KINDS:
            workloads += 1
        elif kind not in COMPANION_KINDS:
            problems.append(
                f"{path.name}: document {i} is a {kind}, neither a workload "
                f"({', '.join(sorted(WORKLOAD_KINDS))}) nor an object one brings along "
                f"({', '.join(sorted(COMPANION_KINDS))})"
            )
    if not problems and not workloads:
        problems.append(f"{path.name}: no workload ({', '.join(sorted(WORKLOAD_KINDS))})")
    return problems


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
            labels = (
                obj["spec"]["selector"]["matchLabels"]
                if "selector" in obj["spec"]
                else obj["spec"]["template"]["metadata"]["labels"]
            )
            selector = ",".join(f"{k}={v}" for k, v in labels.items())
            pods += api.list("v1", "Pod", namespace, label_selector=selector)
    return pods


@dataclass(frozen=True)
class ContainerView:
    container: str
    device_ids: list[str]
    raw: str
    channels: dict[str, list[str]]  # the profile's further channels: name -> device ids they show


class ProbeError(RuntimeError):
    """The profile's probe did not run to a clean end in a container: what it printed is no
    evidence of what the container sees (nor of "nothing"). Not an AssertionError on purpose:
    it breaks the test, naming the probe, instead of failing whichever check was waiting on it."""


def probe_container(api: Api, profile: Profile, pod: Obj, container: str) -> ContainerView:
    """Run the profile's probe in a running container (exiting non-zero, it is a ProbeError); read
    the log of a finished one (whose exit code is its command's, not the probe's: a test may end
    a container with a failure on purpose; its "sees nothing" still needs the profile's sign)."""
    name, ns = pod["metadata"]["name"], pod["metadata"]["namespace"]
    statuses = [*(pod["status"].get("initContainerStatuses") or []), *(pod["status"].get("containerStatuses") or [])]
    state = next((s.get("state") or {} for s in statuses if s["name"] == container), {})
    where = f"profile {profile.name}'s probe {profile.probe.shell!r} in {ns}/{name} container {container}"
    if "running" in state:
        try:
            raw = api.exec(ns, name, list(profile.probe.command), container)
        except ExecError as err:
            raise ProbeError(f"{where} exited {err.code}: {err.output.strip()[-400:] or '(no output)'}") from None
    else:
        raw = api.logs(ns, name, container)
    return ContainerView(container, profile.probe.device_ids(raw), raw, profile.probe.channel_ids(raw))
