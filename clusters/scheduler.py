"""kube-scheduler of a running kind cluster reconfigured, for the benchmarks.

A KubeSchedulerConfiguration keeps `default-scheduler` as kubeadm made it and adds the given
profiles and client QPS. The file goes to the control-plane node under a name holding its hash,
so that a different configuration is a different static pod manifest and the kubelet restarts
the scheduler (kubeadm's manifest is kept aside on the node). `paused` stops the
scheduler for a while, so that a benchmark can create its pods first and then time their
scheduling alone; each resume is a static pod of its own.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from clusters import health
from clusters.nodes import KindNodes, Node
from clusters.shell import progress
from kube.api import TRANSIENT_ERRORS, Api
from kube.waits import WaitTimeout, wait_for

MANIFEST = "/etc/kubernetes/manifests/kube-scheduler.yaml"
ORIGINAL = "/etc/kubernetes/kep5004-kube-scheduler.yaml.orig"  # outside the manifest directory
PAUSED = "/etc/kubernetes/kep5004-kube-scheduler.yaml.paused"  # likewise: the kubelet stops what leaves it
CONFIG_DIR = "/etc/kubernetes/kep5004-scheduler"
KUBECONFIG = "/etc/kubernetes/scheduler.conf"
VOLUME = "kep5004-scheduler-config"
GENERATION = "kep5004.io/configured-at"
COMPONENT = ("kube-scheduler",)


def configuration(profiles: list[dict[str, Any]], client_qps: int | None = None) -> str:
    connection: dict[str, str | int] = {"kubeconfig": KUBECONFIG}  # what kubeadm's --kubeconfig said
    if client_qps:  # burst as high: a benchmark must not measure the client's rate limiter
        connection.update(qps=client_qps, burst=client_qps)
    return yaml.safe_dump(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": connection,
            "profiles": [{"schedulerName": "default-scheduler"}, *profiles],
        },
        sort_keys=False,
    )


def with_config(manifest: str, path: str, generation: str) -> str:
    """kubeadm's manifest, its scheduler reading `path` (mounted read-only from the node).

    `generation` goes into an annotation, so that each configuring makes a pod of its own: the
    kubelet names a static pod after its manifest's content, and a scheduler that crashed under
    the same manifest before would otherwise start in that pod's crash back-off (minutes)."""
    pod = yaml.safe_load(with_generation(manifest, generation))
    container = pod["spec"]["containers"][0]
    container["command"] = [*container["command"], f"--config={path}"]
    container.setdefault("volumeMounts", []).append({"name": VOLUME, "mountPath": path, "readOnly": True})
    pod["spec"].setdefault("volumes", []).append({"name": VOLUME, "hostPath": {"path": path, "type": "File"}})
    return yaml.safe_dump(pod, sort_keys=False)


def with_generation(manifest: str, generation: str) -> str:
    """The manifest with `generation` in an annotation: a static pod of its own (see with_config)."""
    pod = yaml.safe_load(manifest)
    pod.setdefault("metadata", {}).setdefault("annotations", {})[GENERATION] = generation
    return yaml.safe_dump(pod, sort_keys=False)


def _control_plane(nodes: KindNodes) -> Node:
    return nodes.control_planes[0]


def _original(node: Node) -> str:
    """kubeadm's manifest, saved on the node the first time it is replaced."""
    node.sh(f"test -f {ORIGINAL} || cp {MANIFEST} {ORIGINAL}")
    return node.read(ORIGINAL)


def set_profiles(
    kubeconfig: Path, nodes: KindNodes, profiles: list[dict[str, Any]], client_qps: int | None = None
) -> None:
    """Run the scheduler with these profiles besides the default one (and this client QPS, if
    given); returns once it runs them."""
    node, text = _control_plane(nodes), configuration(profiles, client_qps)
    path = f"{CONFIG_DIR}/{hashlib.sha256(text.encode()).hexdigest()[:12]}.yaml"
    qps = f", client QPS {client_qps}" if client_qps else ""
    progress(
        f"{nodes.cluster}: kube-scheduler with profiles "
        f"{', '.join(['default-scheduler', *(p['schedulerName'] for p in profiles)])}{qps}"
    )
    node.sh(f"mkdir -p {CONFIG_DIR}")
    node.write(path, text)
    node.write(MANIFEST, with_config(_original(node), path, str(time.time_ns())))
    health.wait_static_pods(kubeconfig, node.name, COMPONENT, f"--config={path}")


@contextmanager
def paused(kubeconfig: Path, nodes: KindNodes) -> Iterator[None]:
    """No kube-scheduler inside the block: pods created there wait unbound. It runs again (as it
    was configured) when the block ends, also on error; returns once it is Ready."""
    node, api = _control_plane(nodes), Api(kubeconfig)
    running = f"crictl ps --state running -q --name '^{COMPONENT[0]}$'"
    progress(f"{nodes.cluster}: kube-scheduler paused")
    node.sh(f"mv {MANIFEST} {PAUSED}")
    try:
        wait_for(
            lambda: health.static_pod(api, COMPONENT[0], node.name) is None and not node.sh(running).strip(),
            timeout=120,
            interval=1,
            what=f"{COMPONENT[0]} on {node.name} to stop",
            transient=TRANSIENT_ERRORS,
        )
        yield
    finally:
        # A new generation, not the same manifest moved back: the kubelet keeps a static pod's UID
        # (made from the manifest's content) for a while after the pod is finished, and a pod of that
        # UID created again in that time is never started (pkg/kubelet/pod_workers.go, v1.37.2).
        node.write(MANIFEST, with_generation(node.read(PAUSED), str(time.time_ns())))
        node.sh(f"rm -f {PAUSED}")
        progress(f"{nodes.cluster}: kube-scheduler running again")
        try:
            health.wait_static_pods(kubeconfig, node.name, COMPONENT, COMPONENT[0])
        except WaitTimeout as err:
            raise WaitTimeout(f"{err}\n{_why_not_running(node)}") from None


def _why_not_running(node: Node) -> str:
    """What the node says of its scheduler: the containers it made and its kubelet's last words on them."""
    containers = node.sh(f"crictl ps -a --name '^{COMPONENT[0]}$' 2>&1 || true")
    kubelet = node.sh(
        f"journalctl -u kubelet --since '-10min' --no-pager 2>&1 | grep -F {COMPONENT[0]} | tail -n 30 || true"
    )
    return f"containers on {node.name}:\n{containers}\nits kubelet on {COMPONENT[0]}:\n{kubelet}"
