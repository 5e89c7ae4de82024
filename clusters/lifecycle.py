"""Create, reuse, load images into, export logs of and delete kind clusters.

The kind and kubectl binaries are the ones built by clusters/toolchain. kind is run directly
(not through pytest-kind's KindCluster, whose create cannot keep a failed cluster's nodes): a
failed creation is retried with the nodes kept, their logs exported, then the nodes deleted.
Creations are admitted by the host's cluster budget (clusters/capacity.py).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from clusters import capacity, health, image_archives, lease, network, probe_patches, upgrade
from clusters.host import HostFacts, require_engine
from clusters.images import BuiltImages
from clusters.nodes import KindNodes
from clusters.paths import state_dir
from clusters.shell import CommandError, progress, run
from clusters.topology import CHANGED_IN_PLACE, ClusterSpec, config_hash, render, to_yaml
from clusters.versions import default_version, kind_bin, kubernetes_bin
from kube.api import Api
from kube.versions import KubeVersion


def kubectl_cmd(kubeconfig: Path, version: KubeVersion | None = None) -> list[str]:
    """Our kubectl (of `version`, default the pinned default) against any kubeconfig: for applying
    manifests; reads and waits go through kube.api."""
    return [str(kubernetes_bin(version or default_version(), "kubectl")), f"--kubeconfig={kubeconfig}"]


def kubectl_runner(kubeconfig: Path) -> Callable[..., str]:
    """kubectl against any kubeconfig as a callable (args..., input=...), like Cluster.kubectl."""
    command = kubectl_cmd(kubeconfig)
    return lambda *args, input=None: run([*command, *args], input=input)


@dataclass
class Cluster:
    spec: ClusterSpec
    kubeconfig: Path
    created_s: float | None = None  # how long its creation took (None: reused)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def version(self) -> KubeVersion:
        return self.spec.version

    @property
    def kubectl_cmd(self) -> list[str]:
        return kubectl_cmd(self.kubeconfig, self.version)

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        return run([*self.kubectl_cmd, *args], input=input, check=check)

    def nodes(self) -> list[str]:
        return run([str(kind_bin()), "get", "nodes", "--name", self.name]).split()

    def load_images(self, *tags: str) -> None:
        """The images on every node that runs pods (clusters/image_archives.py)."""
        image_archives.load(self.name, KindNodes.of_cluster(self.name).workers, tags)

    def export_logs(self, dest: Path) -> Path:
        return export_logs(self.name, dest)

    def wait_nodes_ready(self, deadline_s: float = 300) -> None:
        health.wait_nodes_ready(self.kubeconfig, timeout=deadline_s)


def _all_running(cluster: Cluster) -> bool:
    """False when a node container stopped, e.g. after the Docker engine was restarted."""
    nodes = cluster.nodes()
    states = run(["docker", "inspect", "--format", "{{.State.Running}}", *nodes], check=False).split()
    return bool(nodes) and states == ["true"] * len(nodes)


def existing_clusters() -> list[str]:
    if not kind_bin().exists():
        return []
    return run([str(kind_bin()), "get", "clusters"]).split()


def _cluster_dir(name: str) -> Path:
    return state_dir() / name


@contextmanager
def cluster(
    spec: ClusterSpec,
    images: BuiltImages | None = None,
    keep: bool = False,
    failure_logs: Path | None = None,
    stop: Callable[[], None] = lambda: None,
    priority: int = 1,
) -> Iterator[Cluster]:
    """The cluster of `spec` for the block, made or reused as ensure() does, deleted when the
    block ends, however it ends, unless `keep`."""
    made = ensure(spec, images, failure_logs=failure_logs, stop=stop, priority=priority)
    try:
        yield made
    finally:
        if not keep:
            delete(made.name)


def ensure(
    spec: ClusterSpec,
    images: BuiltImages | None = None,
    host: HostFacts | None = None,
    failure_logs: Path | None = None,
    stop: Callable[[], None] = lambda: None,
    priority: int = 1,
) -> Cluster:
    """Reuse the cluster if it was made from the same rendered config (never one that tests change
    in place, see CHANGED_IN_PLACE), otherwise (re)create it.

    Either way the workload and driver images are loaded (nodes that have them are skipped). A
    cluster that fails to come up is deleted, after its node logs (kubelet, containerd, pods)
    were exported to `failure_logs` (default: <state>/failed/<name>-<time>), so the cause is kept.
    A new cluster waits for room on the host (clusters/capacity.py), ahead of waiters of a higher
    `priority` number; `stop` raises to give up that wait (an interrupted run).
    """
    require_engine()
    lease.take(spec.name)  # before anything is reused or replaced: it may be another run's
    images = images or BuiltImages.load()
    host = host or HostFacts.detect()
    for tool in (kind_bin(), kubernetes_bin(spec.version, "kubectl")):
        if not tool.exists():
            raise CommandError(f"{tool} is missing: build the toolchain first (make toolchain)")
    node_image, worker_image = images.node(spec.version), images.node(spec.worker_version)
    config = render(spec, host, node_image, worker_image)
    image_ids = " ".join(
        run(["docker", "image", "inspect", "--format", "{{.Id}}", image]).strip()
        for image in dict.fromkeys((node_image, worker_image))
    )
    wanted = config_hash(config, image_ids)
    cdir = _cluster_dir(spec.name)
    hash_file, kubeconfig = cdir / "config-hash", cdir / "kubeconfig"
    cluster = Cluster(spec, kubeconfig)

    if spec.name in existing_clusters():
        if (
            spec.topology not in CHANGED_IN_PLACE
            and hash_file.exists()
            and hash_file.read_text() == wanted
            and kubeconfig.exists()
            and _all_running(cluster)
        ):
            progress(f"{spec.name}: reusing (config {wanted} unchanged)")
            cluster.wait_nodes_ready(deadline_s=120)
            cluster.load_images(images.workload, images.driver)
            return cluster
        progress(f"{spec.name}: recreating (changed in place by tests, a new config, or nodes not running)")
        delete(spec.name)

    cdir.mkdir(parents=True, exist_ok=True)
    image_archives.archives_dir().mkdir(parents=True, exist_ok=True)  # the workers mount it
    probe_patches.ensure()  # the control plane mounts it
    config_path = cdir / "kind-config.yaml"
    config_path.write_text(to_yaml(config))
    hash_file.unlink(missing_ok=True)
    try:
        with capacity.admitted(spec.name, existing_clusters, stop, priority=priority) as waited:
            start = time.monotonic()
            progress(
                f"{spec.name}: creating ({spec.topology}, Kubernetes {spec.version.tag}, config {config_path}"
                + (f", after {waited:.0f} s waiting for room on the host" if waited >= 1 else "")
                + ")"
            )
            _create_with_retry(spec, kubeconfig, config_path)
            if spec.kubelet_version:
                _control_plane_images_on_older_workers(cluster, spec, images)
            progress(f"{spec.name}: installing pod network")
            network.install(Api(kubeconfig), cluster.nodes())
            cluster.wait_nodes_ready()
            cluster.load_images(images.workload, images.driver)
    except BaseException as err:
        # Ctrl-C or a failure: leave nothing half-created behind, but keep why it failed.
        if not isinstance(err, KeyboardInterrupt) and spec.name in existing_clusters():
            logs = export_logs(
                spec.name, failure_logs or state_dir() / "failed" / f"{spec.name}-{time.strftime('%H%M%S')}"
            )
            progress(f"{spec.name}: creation failed ({type(err).__name__}); node logs in {logs}")
        progress(f"{spec.name}: deleting the partial cluster")
        delete(spec.name)
        raise
    hash_file.write_text(wanted)
    cluster.created_s = time.monotonic() - start
    progress(f"{spec.name}: ready in {cluster.created_s:.0f} s")
    return cluster


def _control_plane_images_on_older_workers(cluster: Cluster, spec: ClusterSpec, images: BuiltImages) -> None:
    """kubeadm runs the control plane's kube-proxy on every node, and an older node image lacks
    it (seen: kube-proxy in ImagePullBackOff on 1.36 workers, so the workers' pods reached no
    Service). Its images imported, the waiting pods are made again at once instead of at the end
    of their pull back-off."""
    api = Api(cluster.kubeconfig)
    for node in KindNodes.of_cluster(spec.name).workers:
        upgrade.import_components(node, spec.version, images)
        for pod in api.list("v1", "Pod", "kube-system", field_selector=f"spec.nodeName={node.name}"):
            if (pod.get("status") or {}).get("phase") != "Running":
                api.delete("v1", "Pod", pod["metadata"]["name"], "kube-system")
    health.wait_daemonset_ready(cluster.kubeconfig, "kube-system", "kube-proxy")


def _create_with_retry(spec: ClusterSpec, kubeconfig: Path, config_path: Path, attempts: int = 2) -> None:
    """kind create, once more after a failure: on a loaded host kubeadm's wait for the API server
    can time out. The nodes of a failed attempt are kept (--retain) until their logs are exported
    under <state>/failed/, so the directory a message names holds the cause."""
    kubeconfig.touch(0o600, exist_ok=True)
    command = [
        str(kind_bin()),
        "create",
        "cluster",
        f"--name={spec.name}",
        f"--kubeconfig={kubeconfig}",
        # No --image: it would replace every node's image, and the config names each node's
        # (workers may run an older version's).
        f"--config={config_path}",
        "--retain",
    ]
    for attempt in range(1, attempts + 1):
        try:
            subprocess.run(command, check=True)
            return
        except subprocess.CalledProcessError as err:
            logs = export_logs(spec.name, state_dir() / "failed" / f"{spec.name}-attempt-{attempt}")
            progress(
                f"{spec.name}: kind create failed (attempt {attempt}/{attempts}, exit {err.returncode}); "
                f"node logs in {logs}"
            )
            run([str(kind_bin()), "delete", "cluster", "--name", spec.name], check=False)
            if attempt == attempts:
                raise CommandError(
                    f"kind could not create {spec.name} in {attempts} attempts; logs in {logs}"
                ) from None


# What a node forwards and remembers for Services, which kind's log export leaves out: a pod
# refused at a Service address (the driver at the API server's) is explained here or nowhere.
NODE_NETWORK = ("nft list ruleset", "conntrack -L", "ip route")


def export_logs(name: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    run([str(kind_bin()), "export", "logs", str(dest), "--name", name], check=False)
    try:
        nodes = KindNodes.of_cluster(name).nodes
    except CommandError:  # the cluster is gone: what kind exported is all there is
        return dest
    for node in nodes:
        (dest / node.name).mkdir(parents=True, exist_ok=True)
        (dest / node.name / "network.txt").write_text(
            "".join(f"$ {command}\n{node.sh(f'{command} 2>&1; true')}\n" for command in NODE_NETWORK)
        )
    return dest


def delete(name: str) -> None:
    """Delete the cluster, unless another process holds its lease (ClusterInUseError)."""
    lease.take(name)
    if kind_bin().exists():
        run([str(kind_bin()), "delete", "cluster", "--name", name], check=False)
    shutil.rmtree(_cluster_dir(name), ignore_errors=True)
    lease.give_back(name)
