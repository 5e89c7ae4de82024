"""Commands and files on the nodes of a kind cluster: each node is a Docker container named
like its Kubernetes Node, labelled with the cluster it belongs to.

The in-place changes of clusters/upgrade.py and clusters/gates.py work through this, the way an
operator would ssh into a machine: copy binaries, edit static pod manifests and kubelet
configuration, restart the kubelet.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from clusters.shell import CommandError, run

KIND_CLUSTER_LABEL = "io.x-k8s.kind.cluster"
KIND_ROLE_LABEL = "io.x-k8s.kind.role"


@dataclass(frozen=True)
class Node:
    name: str
    role: str  # control-plane | worker

    def sh(self, script: str, input: str | None = None, timeout: float = 600) -> str:
        return run(
            ["docker", "exec", *(["-i"] if input is not None else []), self.name, "sh", "-c", script],
            input=input,
            timeout=timeout,
        )

    def read(self, path: str) -> str:
        return self.sh(f"cat {shlex.quote(path)}")

    def write(self, path: str, text: str) -> None:
        """Replace the file atomically through a hidden sibling: the kubelet ignores dot-files
        in its static pod directory, so it never sees a half-written manifest."""
        directory, _, base = path.rpartition("/")
        tmp = shlex.quote(f"{directory}/.{base}.kep5004-tmp")
        self.sh(f"cat > {tmp} && chmod 600 {tmp} && mv {tmp} {shlex.quote(path)}", input=text)

    def copy_in(self, source: Path, dest: str) -> None:
        run(["docker", "cp", str(source), f"{self.name}:{dest}"])

    def restart_kubelet(self) -> None:
        self.sh("systemctl restart kubelet")


@dataclass(frozen=True)
class KindNodes:
    cluster: str
    nodes: tuple[Node, ...]

    @classmethod
    def of_cluster(cls, cluster: str) -> "KindNodes":
        out = run(
            [
                "docker",
                "ps",
                "--filter",
                f"label={KIND_CLUSTER_LABEL}={cluster}",
                "--format",
                f'{{{{.Names}}}} {{{{.Label "{KIND_ROLE_LABEL}"}}}}',
            ]
        )
        nodes = tuple(
            sorted(
                (Node(*line.split()) for line in out.splitlines() if line.strip()),
                key=lambda n: (n.role != "control-plane", n.name),
            )
        )
        if not nodes:
            raise CommandError(f"no running node containers of kind cluster {cluster!r}")
        return cls(cluster, nodes)

    @classmethod
    def of_node(cls, node_name: str) -> "KindNodes":
        """The cluster a Kubernetes Node belongs to, if it is a node container of kind."""
        label = run(
            ["docker", "inspect", "--format", f'{{{{index .Config.Labels "{KIND_CLUSTER_LABEL}"}}}}', node_name],
            check=False,
        ).strip()
        if not label or label == "<no value>":
            raise CommandError(f"node {node_name} is not a container of a kind cluster on this host's Docker")
        return cls.of_cluster(label)

    @property
    def control_planes(self) -> list[Node]:
        return [n for n in self.nodes if n.role == "control-plane"]

    @property
    def workers(self) -> list[Node]:
        return [n for n in self.nodes if n.role != "control-plane"]
