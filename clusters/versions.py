"""Pinned versions (clusters/versions.env) and how each Kubernetes minor treats KEP-5004's gate."""

from __future__ import annotations

import shlex
from functools import cache
from pathlib import Path

from clusters.paths import CLUSTERS_DIR, tools_dir
from kube.features import VERSIONS, DRAExtendedResource, VersionInfo
from kube.versions import KubeVersion, UnknownVersionError

FEATURE_GATE = DRAExtendedResource  # the name topology and the suite import


@cache
def pinned() -> dict[str, str]:
    """The KEY=value pairs of clusters/versions.env, shell quoting honoured."""
    values: dict[str, str] = {}
    for line in (CLUSTERS_DIR / "versions.env").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = " ".join(shlex.split(value))
    return values


def supported_versions() -> list[KubeVersion]:
    return [KubeVersion.parse(v) for v in pinned()["KUBERNETES_VERSIONS"].split()]


def upgrade_partner(version: KubeVersion) -> KubeVersion | None:
    """The pinned version an upgrade scenario starting at `version` moves to and back from: the
    next minor (upgrade, then rollback), or for the newest the previous one (rollback, then
    upgrade again), so that every pinned version gets its own upgrade verdict. None when no
    pinned version is one minor away."""
    pinned = sorted(supported_versions())

    def at(minor: int) -> KubeVersion | None:
        return next((v for v in pinned if (v.major, v.minor) == (version.major, minor)), None)

    return at(version.minor + 1) or at(version.minor - 1)


def older_kubelet(version: KubeVersion) -> KubeVersion | None:
    """The pinned version one minor older than `version`, for kubelets under its control plane
    (version skew); None when none is pinned."""
    return next(
        (v for v in supported_versions() if (v.major, v.minor) == (version.major, version.minor - 1)),
        None,
    )


def default_version() -> KubeVersion:
    return KubeVersion.parse(pinned()["KUBERNETES_DEFAULT"])


def resolve(text: str | None) -> KubeVersion:
    """Map user input ('1.36', 'v1.37.2', None for the default) to a pinned version."""
    if not text:
        return default_version()
    wanted = text.strip().lstrip("v")
    for v in supported_versions():
        if wanted in (v.short, v.tag.lstrip("v")):
            return v
    known = ", ".join(v.tag for v in supported_versions())
    raise UnknownVersionError(f"Kubernetes version {text!r} is not pinned in clusters/versions.env (known: {known})")


def gate_stage(version: KubeVersion) -> VersionInfo:
    """How DRAExtendedResource behaves in this minor, from the table in kube/features.py."""
    row = VERSIONS.row_for(version.as_minor)
    if row is None:
        raise UnknownVersionError(f"kube/features.py records no {FEATURE_GATE} stage for {version.short}")
    return row


def kubernetes_bin(version: KubeVersion, name: str) -> Path:
    return tools_dir() / f"kubernetes-{version.tag}" / name


def kind_bin() -> Path:
    return tools_dir() / f"kind-{pinned()['KIND_VERSION']}" / "kind"
