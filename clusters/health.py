"""Waiting for a cluster to be healthy again after its nodes or components were changed.

Each function takes the kubeconfig, as the suite's fixtures hold it, and reads the API through
kube.api; errors of components that restart meanwhile count as "not yet" (TRANSIENT_ERRORS).
"""

from __future__ import annotations

from pathlib import Path

from kube import metrics as metrics_lib
from kube.api import TRANSIENT_ERRORS, Api, Obj
from kube.waits import wait_for

# Seconds between two reads: components restarting under us gain nothing from a tighter loop.
INTERVAL = 3


def _ready(obj: Obj) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions") or []
    )


def node_states(api: Api) -> dict[str, tuple[bool, str]]:
    """node -> (Ready, kubelet version)."""
    return {
        n["metadata"]["name"]: (_ready(n), n["status"]["nodeInfo"]["kubeletVersion"]) for n in api.list("v1", "Node")
    }


def wait_nodes_ready(kubeconfig: Path, kubelet_version: str | None = None, timeout: float = 300) -> None:
    """Every node Ready (and running `kubelet_version`, if given)."""
    api = Api(kubeconfig)

    def done() -> bool:
        states = node_states(api)
        return bool(states) and all(ok and kubelet_version in (None, v) for ok, v in states.values())

    what = "every node Ready" + (f" with kubelet {kubelet_version}" if kubelet_version else "")
    wait_for(
        done,
        timeout=timeout,
        what=what,
        interval=INTERVAL,
        describe=lambda: str(node_states(api)),
        transient=TRANSIENT_ERRORS,
    )


def wait_daemonset_ready(kubeconfig: Path, namespace: str, name: str, timeout: float = 180) -> None:
    """Every pod the DaemonSet should run is ready."""
    api = Api(kubeconfig)

    def state() -> dict[str, int]:
        status = (api.get("apps/v1", "DaemonSet", name, namespace) or {}).get("status") or {}
        return {k: status.get(k, 0) for k in ("desiredNumberScheduled", "numberReady")}

    wait_for(
        lambda: (s := state())["desiredNumberScheduled"] > 0 and s["numberReady"] == s["desiredNumberScheduled"],
        timeout=timeout,
        interval=2,
        transient=TRANSIENT_ERRORS,
        what=f"DaemonSet {namespace}/{name} ready on every node",
        describe=lambda: str(state()),
    )


def wait_api_ready(kubeconfig: Path, timeout: float = 300) -> None:
    """kube-apiserver answers /readyz with ok: its informers synced and its RBAC roles in place.
    Answering at all is not enough: a server that has just started refuses even the cluster admin
    until its authorizer's caches are filled (kubeadm then fails with "forbidden")."""
    api = Api(kubeconfig)
    wait_for(
        lambda: api.raw("/readyz").strip() == "ok",
        timeout=timeout,
        what="kube-apiserver ready (/readyz)",
        interval=INTERVAL,
        transient=TRANSIENT_ERRORS,
    )


def static_pod(api: Api, component: str, node: str | None = None) -> Obj | None:
    """The mirror pod of a control-plane component on a node, or on any node (kubeadm labels
    them component=<name>)."""
    where = {"field_selector": f"spec.nodeName={node}"} if node else {}
    items = api.list("v1", "Pod", namespace="kube-system", label_selector=f"component={component}", **where)
    return items[0] if items else None


def wait_static_pods(
    kubeconfig: Path,
    node: str,
    components: tuple[str, ...],
    marker: str,
    timeout: float = 300,
    absent: str | None = None,
) -> None:
    """Each component's mirror pod runs a container whose command or image contains `marker`
    (and no part containing `absent`), and is Ready."""
    api = Api(kubeconfig)

    def current(component: str) -> bool:
        pod = static_pod(api, component, node)
        if not pod or not _ready(pod):
            return False
        c = pod["spec"]["containers"][0]
        parts = [c["image"], *(c.get("command") or [])]
        return any(marker in part for part in parts) and not (absent and any(absent in part for part in parts))

    wait_for(
        lambda: all(current(c) for c in components),
        timeout=timeout,
        what=f"{', '.join(components)} on {node} with {marker!r}" + (f" and without {absent!r}" if absent else ""),
        interval=INTERVAL,
        describe=lambda: str({c: current(c) for c in components}),
        transient=TRANSIENT_ERRORS,
    )


def feature_enabled(kubeconfig: Path | None, gate: str, node: str | None = None) -> bool | None:
    """What the API server (or a node's kubelet) reports in kubernetes_feature_enabled for `gate`."""
    metrics = Api(kubeconfig).raw(f"/api/v1/nodes/{node}/proxy/metrics" if node else "/metrics")
    state = metrics_lib.value(metrics, "kubernetes_feature_enabled", name=gate)
    return None if state is None else state == 1
