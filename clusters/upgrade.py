"""Upgrading or downgrading a running kind cluster by one Kubernetes minor, in place.

The other version's kubeadm, kubelet and kubectl are copied into every node and its component
images imported into each node's containerd (nothing is pulled); then kubeadm moves the control
plane and the kubelet binary is swapped, in the order the version skew policy allows: control
plane first on the way up, kubelets first on the way down (a kubelet must never be newer than
its API server). Downgrades are not supported by kubeadm, hence --force; etcd keeps its version
both ways (--etcd-upgrade=false) because etcd cannot go back to an older minor's storage format.
"""

from __future__ import annotations

from pathlib import Path

from clusters import health, probe_patches
from clusters.images import BuiltImages
from clusters.nodes import KindNodes, Node
from clusters.shell import CommandError, progress
from clusters.versions import kubernetes_bin
from kube.api import Api
from kube.versions import KubeVersion

STAGE_DIR = "/kep5004/versions"
BINARIES = ("kubeadm", "kubelet", "kubectl")
COMPONENTS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
# What kubeadm says when it stopped before changing anything: while reading the cluster's
# configuration (kubeadm-config, the component configs, this node's registration and API
# endpoint from its Node object), or in its preflight phase.
NOTHING_CHANGED = (
    "failed to get component configs",
    "failed to get node registration",
    "failed to getAPIEndpoint",
    "error execution phase preflight",
)
APPLY_ATTEMPTS = 3


def staged(version: KubeVersion, binary: str) -> str:
    return f"{STAGE_DIR}/{version.tag}/{binary}"


def stage(nodes: KindNodes, version: KubeVersion, images: BuiltImages) -> None:
    """Binaries and component images of `version` on every node (once per node)."""
    for node in nodes.nodes:
        done = staged(version, ".staged")
        if node.sh(f"test -f {done} && echo yes || true").strip() == "yes":
            continue
        progress(f"{nodes.cluster}: staging Kubernetes {version.tag} on {node.name}")
        node.sh(f"mkdir -p {STAGE_DIR}/{version.tag}")
        for binary in BINARIES:
            node.copy_in(kubernetes_bin(version, binary), staged(version, binary))
        import_components(node, version, images)
        node.sh(f"touch {done}")


def import_components(node: Node, version: KubeVersion, images: BuiltImages) -> None:
    """The component images of `version` (kube-proxy, the control plane's) in the node's containerd,
    pinned: a node of another version's image has none of them, and nothing can be pulled."""
    tmp = staged(version, "components.tar")
    node.sh(f"mkdir -p {STAGE_DIR}/{version.tag}")
    node.copy_in(images.components(version), tmp)
    node.sh(
        "ctr -n k8s.io images import --label=io.cri-containerd.pinned=pinned --all-platforms "
        f"--no-unpack --digests {tmp} >/dev/null && rm {tmp}"
    )


def _apply_control_plane(kubeconfig: Path, node: Node, version: KubeVersion, force: bool) -> None:
    progress(f"{node.name}: kubeadm upgrade apply {version.tag}{' --force (downgrade)' if force else ''}")
    command = (
        f"{staged(version, 'kubeadm')} upgrade apply {version.tag} --yes --ignore-preflight-errors=all "
        f"--etcd-upgrade=false --patches={probe_patches.IN_NODE}{' --force' if force else ''}"
    )
    for attempt in range(1, APPLY_ATTEMPTS + 1):
        # After the kubelets were swapped the API server may have just restarted: the full run's
        # downgrade on 1.35.4 failed with kubernetes-admin "forbidden" to list nodes (load ~40).
        health.wait_api_ready(kubeconfig)
        try:
            node.sh(command, timeout=900)
            break
        except CommandError as err:
            # kubeadm reads the cluster's configuration and version with a 10 s client timeout,
            # which a loaded or restarting API server can miss (seen in three downgrades on
            # 2026-12-05: 1.35.4, the version in preflight; 1.37.2, the kubelet's component config,
            # connection refused; 1.36.3, the node's registration, while the control plane's just
            # swapped kubelet replaced the API server's static pod). It changed
            # nothing then, so trying again is safe; a failure in any phase that changes the cluster
            # is not retried.
            if not any(marker in str(err) for marker in NOTHING_CHANGED) or attempt == APPLY_ATTEMPTS:
                raise
            progress(f"{node.name}: kubeadm upgrade apply failed before changing anything; trying again")
    health.wait_static_pods(kubeconfig, node.name, COMPONENTS, f":{version.tag}")


def _swap_kubelet(kubeconfig: Path, node: Node, version: KubeVersion) -> None:
    progress(f"{node.name}: kubelet {version.tag}")
    if node.role != "control-plane":
        # Rewrites the node's kubelet configuration from the cluster's (kubeadm's worker step).
        node.sh(f"{staged(version, 'kubeadm')} upgrade node --ignore-preflight-errors=all")
    node.sh(f"cp {staged(version, 'kubelet')} /usr/bin/kubelet.new && mv /usr/bin/kubelet.new /usr/bin/kubelet")
    node.restart_kubelet()
    health.wait_nodes_ready(kubeconfig, timeout=300)


def change_version(kubeconfig: Path, nodes: KindNodes, version: KubeVersion, images: BuiltImages) -> None:
    api = Api(kubeconfig)
    current = KubeVersion.of_server(api.server_version())
    if current == version:
        return
    stage(nodes, version, images)
    up = version > current
    progress(f"{nodes.cluster}: {'upgrading' if up else 'downgrading'} {current.tag} -> {version.tag}")
    kubelets = [*nodes.control_planes, *nodes.workers] if up else [*nodes.workers, *nodes.control_planes]
    if up:
        for node in nodes.control_planes:
            _apply_control_plane(kubeconfig, node, version, force=False)
    for node in kubelets:
        _swap_kubelet(kubeconfig, node, version)
    if not up:
        for node in nodes.control_planes:
            _apply_control_plane(kubeconfig, node, version, force=True)
    health.wait_nodes_ready(kubeconfig, kubelet_version=version.tag)
    progress(f"{nodes.cluster}: now at {api.server_version()}")
