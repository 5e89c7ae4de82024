"""A kube-scheduler of the suite's own: a pod beside the cluster's scheduler that runs only the
scheduler profiles a test module defines (its pods pick one by spec.schedulerName).

A pod rather than the cluster's scheduler reconfigured: nothing of the cluster changes, so the
tests run wherever the suite may create pods and bind kube-scheduler's two roles (a vendor's
cluster, a managed control plane), no restart of a control-plane component costs time, and a
plugin that crashes (BUG-12) ends this pod only.

It is the cluster's scheduler in what decides placements: the image, feature gates and emulated
version of its mirror pod (kubeadm and kind make one), on the same node. Where no mirror pod is
visible, the image is upstream's for the API server's version and KEP-5004's gate is set as the
API server reports it. It takes no part in leader election (no other instance runs its profiles)
and serves nothing (--secure-port=0, so it needs no delegated authentication either).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError

from clusters import health
from conformance.lib.objects import pods
from conformance.lib.objects.cleanup import labelled
from kube import metrics
from kube.api import RBAC_API, Api, Obj
from kube.features import DRAExtendedResource
from kube.versions import KubeVersion
from kube.waits import wait_for

NAME = "kep5004-scheduler"
CONTAINER = "kube-scheduler"
# kubeadm binds both to the cluster's scheduler: the second covers the storage classes and volume
# objects its volume plugins watch (without them its informers never sync).
ROLES = ("system:kube-scheduler", "system:volume-scheduler")
CONFIG_DIR = "/etc/kep5004-scheduler"
# Flags of the cluster's scheduler that change what it decides, carried over.
DECIDING_FLAGS = ("--feature-gates=", "--emulated-version=")
START_TIMEOUT_S = 180
ERROR_LINE = re.compile(r"Error:|E\d{4} ")
# Each plugin's score of each node for each pod, logged at level 10 by schedule_one.go: that file
# alone at that level, so that a placement the suite finds wrong can show what decided it.
SCORE_LOGGING = "--vmodule=schedule_one=10"
SCORE_LINE = re.compile(
    r'"Plugin scored node for pod" pod="(?P<pod>[^"]+)" plugin="(?P<plugin>[^"]+)" '
    r'node="(?P<node>[^"]+)" score=(?P<score>-?\d+)'
)


@dataclass(frozen=True)
class Basis:
    """What the suite's scheduler takes from the cluster's."""

    image: str
    node: str | None  # the cluster's scheduler's node, where its image is sure to be
    flags: tuple[str, ...]
    source: str  # how it was found, for messages


def basis(api: Api, version: KubeVersion) -> Basis:
    mirror = health.static_pod(api, CONTAINER)
    if mirror:
        container = mirror["spec"]["containers"][0]
        flags = tuple(a for a in container.get("command") or [] if a.startswith(DECIDING_FLAGS))
        where = f"kube-system/{mirror['metadata']['name']}"
        return Basis(container["image"], mirror["spec"].get("nodeName"), flags, f"as {where}")
    gate = metrics.value(api.raw("/metrics"), "kubernetes_feature_enabled", name=DRAExtendedResource)
    flags = () if gate is None else (f"--feature-gates={DRAExtendedResource}={str(gate == 1).lower()}",)
    return Basis(
        f"registry.k8s.io/kube-scheduler:{version.tag}",
        None,
        flags,
        "upstream's image for the API server's version (no kube-scheduler mirror pod is visible)",
    )


def configuration(profiles: list[dict[str, Any]]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "profiles": profiles,
        },
        sort_keys=False,
    )


def _binding_name(namespace: str, role: str) -> str:
    return f"kep5004:{namespace}:{role}"


def manifests(namespace: str, profiles: list[dict[str, Any]], base: Basis) -> list[Obj]:
    """The ServiceAccount, its bindings to kube-scheduler's roles, the configuration and the pod."""
    account = {"kind": "ServiceAccount", "name": NAME, "namespace": namespace}
    bindings = [
        labelled(
            {
                "apiVersion": RBAC_API,
                "kind": "ClusterRoleBinding",
                "metadata": {"name": _binding_name(namespace, role)},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [account],
            }
        )
        for role in ROLES
    ]
    container = {
        "name": CONTAINER,
        "image": base.image,
        "imagePullPolicy": "IfNotPresent",
        "command": [CONTAINER, f"--config={CONFIG_DIR}/config.yaml", "--secure-port=0", SCORE_LOGGING, *base.flags],
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [{"name": "config", "mountPath": CONFIG_DIR, "readOnly": True}],
    }
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": NAME},
        "spec": {
            "serviceAccountName": NAME,
            "tolerations": [{"operator": "Exists"}],  # the control-plane node's taints
            "containers": [container],
            "volumes": [{"name": "config", "configMap": {"name": NAME}}],
        },
    }
    if base.node:
        pod["spec"]["nodeName"] = base.node  # placed by no scheduler: the cluster's may be busy or down
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME}},
        *bindings,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME},
            "data": {"config.yaml": configuration(profiles)},
        },
        pod,
    ]


class NotStarted(Exception):
    """The suite's scheduler could not be created or does not schedule (the message says why)."""


def _last_words(api: Api, namespace: str, previous: bool = False) -> str:
    """Its log's error lines (klog's "E<mmdd> ", cobra's "Error:", which comes before the usage
    text of a refused flag), else its last lines."""
    try:
        lines = api.logs(namespace, NAME, CONTAINER, previous=previous).strip().splitlines()
    except Exception as err:  # not started yet, gone: say so instead
        return f"no log ({err})"
    return " | ".join([line for line in lines if ERROR_LINE.match(line)][:3] or lines[-5:])


def _bound(api: Api, namespace: str, name: str) -> str | None:
    """The node pod `name` is bound to; NotStarted once the scheduler has exited before that."""
    node: str | None = ((api.get("v1", "Pod", name, namespace) or {}).get("spec") or {}).get("nodeName")
    if not node and container_status(api, namespace).get("restartCount", 0):
        raise NotStarted(f"it exited before it bound pod {name}: {_last_words(api, namespace, previous=True)}")
    return node


def start(api: Api, namespace: str, profiles: list[dict[str, Any]], version: KubeVersion, canary: Obj) -> Basis:
    """The suite's scheduler running `profiles` in `namespace`; returns once it has bound
    `canary` (a pod any node takes) through the first profile, so that a scheduler that cannot
    work (its informers forbidden, a flag it refuses) is told apart from the placements it makes.
    NotStarted leaves nothing of it behind."""
    base = basis(api, version)
    name = canary["metadata"]["name"]
    canary["spec"]["schedulerName"] = profiles[0]["schedulerName"]
    created: list[Obj] = []
    try:
        for obj in [*manifests(namespace, profiles, base), canary]:
            api.create(obj, None if _cluster_scoped(obj) else namespace)
            created.append(obj)
        pods.wait_running(api, namespace, NAME, timeout=START_TIMEOUT_S)
        wait_for(
            lambda: _bound(api, namespace, name),
            timeout=START_TIMEOUT_S,
            interval=0.25,
            what=f"pod {name} to be bound by the suite's kube-scheduler",
            describe=lambda: _last_words(api, namespace),
        )
        api.delete("v1", "Pod", name, namespace)
    except Exception as err:  # forbidden, image not pullable, not scheduling: the caller reports it
        _delete(api, namespace, created)
        why = (
            err
            if isinstance(err, NotStarted)
            # the API server's message (its first line: RBAC goes on to list every rule not held)
            else f"{err.status} {str(err.summary()).splitlines()[0]}"
            if isinstance(err, DynamicApiError)
            else f"{type(err).__name__}: {err}"
        )
        raise NotStarted(f"kube-scheduler {base.image} ({base.source}) in {namespace}: {why}") from None
    return base


def _cluster_scoped(obj: Obj) -> bool:
    return bool(obj["kind"] == "ClusterRoleBinding")


def _delete(api: Api, namespace: str, objs: list[Obj]) -> None:
    """The pods and bindings among `objs` gone (the namespace takes the rest)."""
    for obj in reversed(objs):
        if obj["kind"] in ("Pod", "ClusterRoleBinding"):
            where = None if _cluster_scoped(obj) else namespace
            api.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], where)


def stop(api: Api, namespace: str) -> None:
    """The pod and its bindings gone (the namespace takes the rest)."""
    _delete(api, namespace, manifests(namespace, [], Basis("", None, (), "")))


def scores(api: Api, namespace: str, pod: str) -> str:
    """The suite's scheduler's last scores for pod `pod`, per node and plugin ("node-a:
    NodeAffinity 100, NodeResourcesFit 8; node-b: …"), or why there are none."""
    try:
        log = api.logs(namespace, NAME, CONTAINER)
    except ApiException as err:
        return f"no log of the suite's kube-scheduler ({err.status} {err.reason})"
    by_node: dict[str, dict[str, int]] = {}
    for line in SCORE_LINE.finditer(log):
        if line["pod"] == f"{namespace}/{pod}":
            by_node.setdefault(line["node"], {})[line["plugin"]] = int(line["score"])
    if not by_node:
        return "none logged (kube-scheduler scores nothing where one node is feasible)"
    return "; ".join(
        f"{node}: " + ", ".join(f"{plugin} {score}" for plugin, score in sorted(plugins.items()))
        for node, plugins in sorted(by_node.items())
    )


def _panic_in(log: str) -> str | None:
    """The panic in `log` and the scheduler's plugin frames of its stack ("panic: … ; <function> ; …"),
    or None."""
    lines = [line.strip() for line in log.splitlines()]
    start = next((i for i, line in enumerate(lines) if line.startswith("panic:")), None)
    if start is None:
        return None
    # A frame is a function line, then its file and line (ending in ".go:<n> +0x..").
    frames = [
        line.split("(0x", 1)[0]
        for line in lines[start + 1 : start + 80]
        if "/scheduler/framework/plugins/" in line and ".go:" not in line
    ]
    return " ; ".join([lines[start], *frames[:10]])


def panic(api: Api, namespace: str, culprit: str) -> str | None:
    """The panic that ended the suite's kube-scheduler, from the log of the instance that runs or
    ran last, or of the one before it; of the two, the one whose frames name `culprit`: the log of
    an instance still crashing may show the panic line before its frames. None: neither panicked.
    (A crashing container waits in the kubelet's back-off, so its restart count is no sign of
    when it ended.)"""
    found = []
    for previous in (False, True):
        try:
            log = api.logs(namespace, NAME, CONTAINER, previous=previous)
        except ApiException:
            continue  # no earlier instance
        if (text := _panic_in(log)) is not None:
            found.append(text)
    return next((p for p in found if culprit in p), found[0] if found else None)


def container_status(api: Api, namespace: str) -> dict[str, Any]:
    """The status of the suite's kube-scheduler container ({} before it has one)."""
    found = api.get("v1", "Pod", NAME, namespace)
    assert found, f"the suite's kube-scheduler pod {namespace}/{NAME} is gone"
    statuses: list[dict[str, Any]] = (found.get("status") or {}).get("containerStatuses") or [{}]
    return statuses[0]
