"""Locally built images put into kind nodes from archives on the host that every node mounts.

`kind load docker-image` saves the image anew on every call and streams the archive into each
node through `docker exec`'s stdin, so dockerd and the container shim relay every byte: for the
346 MB driver image on 24 nodes that was the largest CPU cost of the full job's cluster creation
(docs/timings.md, "Where the full job's CPU goes"). Here each image is saved once per image id
into a directory that every node mounts read-only, each node's containerd imports the file
itself, and only the nodes that run pods (the workers: the control plane is tainted) get the
images.
"""

from __future__ import annotations

import fcntl
import json
import re
import shlex
import tomllib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from clusters.nodes import Node
from clusters.paths import cache_root
from clusters.shell import CommandError, progress, run
from kube.waits import WaitTimeout, wait_for

IN_NODE = "/kep5004/archives"
DEFAULT_SNAPSHOTTER = "overlayfs"
CRI_SEES_IMPORT = 60  # seconds; far above the lag measured (below)


def archives_dir() -> Path:
    return cache_root() / "images" / "archives"


def node_mount() -> dict[str, object]:
    """The kind config's extraMounts entry that shows the archives to a node."""
    return {"hostPath": str(archives_dir()), "containerPath": IN_NODE, "readOnly": True}


def image_id(tag: str) -> str:
    return run(["docker", "image", "inspect", "--format", "{{.Id}}", tag]).strip()


def _stem(tag: str) -> str:
    """'kep5004/fake-gpu-driver:abc' -> 'kep5004_fake-gpu-driver': the repository, as a file name."""
    last = tag.rsplit("/", 1)[-1]
    repository = tag.rsplit(":", 1)[0] if ":" in last else tag
    return re.sub(r"[^A-Za-z0-9.-]", "_", repository)


def _tag_part(tag: str) -> str:
    last = tag.rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9.-]", "_", last.rsplit(":", 1)[1]) if ":" in last else "latest"


def archive_name(tag: str, ident: str) -> str:
    """The tag is part of the name: `docker save` records only the tag it was given, so two
    tags of one image id need an archive each (a shared one never gave the node the second)."""
    return f"{_stem(tag)}--{_tag_part(tag)}--{ident.removeprefix('sha256:')[:16]}.tar"


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """One writer at a time: the versions of a full job run in processes of their own."""
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def ensure_archive(tag: str, ident: str) -> Path:
    """The image's archive, saved now unless it already is; archives of the repository's other
    images are removed (each is as large as its image)."""
    directory = archives_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / archive_name(tag, ident)
    with _locked(directory):
        if not path.exists():
            progress(f"saving {tag} to {path}")
            partial = path.with_suffix(".partial")
            run(["docker", "save", "--output", str(partial), tag], timeout=600)
            partial.replace(path)
            for old in directory.glob(f"{_stem(tag)}--*.tar"):
                if old != path:
                    old.unlink(missing_ok=True)
    return path


def snapshotter(config: str) -> str:
    """The snapshotter the CRI unpacks images into, from `containerd config dump` (config
    version 3 and later keep it with the image service, version 2 with the runtime)."""
    plugins = tomllib.loads(config).get("plugins", {})
    return (
        plugins.get("io.containerd.cri.v1.images", {}).get("snapshotter")
        or plugins.get("io.containerd.grpc.v1.cri", {}).get("containerd", {}).get("snapshotter")
        or DEFAULT_SNAPSHOTTER
    )


def node_has(node: Node, tag: str, ident: str) -> bool:
    found = node.sh(f"crictl inspecti --output json {shlex.quote(tag)} 2>/dev/null || true").strip()
    return bool(found) and json.loads(found).get("status", {}).get("id") == ident


def load(cluster: str, nodes: Iterable[Node], tags: Iterable[str]) -> None:
    """Each image on each node, imported from its archive where the node lacks it."""
    nodes = list(nodes)
    targets: dict[str, str] = {}  # node -> its snapshotter, read once per node
    for tag in tags:
        ident = image_id(tag)
        missing = [node for node in nodes if not node_has(node, tag, ident)]
        if not missing:
            continue
        path = ensure_archive(tag, ident)
        for node in missing:
            progress(f"{cluster}: importing {tag} on {node.name}")
            if node.name not in targets:
                targets[node.name] = snapshotter(node.sh("containerd config dump"))
            node.sh(
                f"ctr --namespace=k8s.io images import --all-platforms --digests "
                f"--snapshotter={targets[node.name]} {IN_NODE}/{path.name} >/dev/null"
            )
            # The CRI learns of an image `ctr` imported from containerd's event stream, after
            # the import returns: 0.25 s later on a worker of a busy host (2026-12-07), when an
            # immediate look had failed a cluster's creation.
            try:
                wait_for(
                    lambda: node_has(node, tag, ident),
                    timeout=CRI_SEES_IMPORT,
                    interval=0.5,
                    what=f"{node.name}: the CRI showing {tag} ({ident}) imported from {path.name}",
                )
            except WaitTimeout as err:
                raise CommandError(str(err)) from None
