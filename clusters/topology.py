"""Kind cluster configs, rendered per topology, Kubernetes version and host."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from clusters import image_archives, probe_patches
from clusters.host import HostFacts
from clusters.versions import FEATURE_GATE, gate_stage
from kube.versions import KubeVersion

MODE_LABEL = "fake-gpu.kep5004.io/mode"
POD_SUBNET = "10.244.0.0/16"
SERVICE_SUBNET = "10.96.0.0/16"

# Worker roles per topology: the value of MODE_LABEL on each worker.
TOPOLOGIES: dict[str, tuple[str, ...]] = {
    "dra": ("dra", "dra"),
    "mixed": ("dra", "device-plugin"),
    # Clusters that tests change in place (faults, then upgrade and back; the gate switched off
    # and on): one DRA worker keeps the restarts of every component affordable on two cores.
    "in-place": ("dra",),
    "gate-cycle": ("dra",),
}
# Topologies whose clusters tests change in place: never reused, always made afresh.
CHANGED_IN_PLACE = frozenset({"in-place", "gate-cycle"})


MAX_KUBELET_SKEW = 3


class TopologyError(ValueError):
    pass


@dataclass(frozen=True)
class ClusterSpec:
    topology: str
    version: KubeVersion
    gates: dict[str, bool] = field(default_factory=dict)
    # What the cluster is for, when not the conformance job's own (soak): a name of its own, so
    # that it can exist next to the job's cluster of the same topology and version.
    purpose: str = ""
    # Version skew: the workers' Kubernetes (kubelet) when older than the control plane's.
    kubelet_version: KubeVersion | None = None

    def __post_init__(self) -> None:
        if self.purpose and not re.fullmatch(r"[a-z][a-z0-9]{0,15}", self.purpose):
            raise TopologyError(
                f"cluster purpose {self.purpose!r}: one lower-case word of at most 16 letters and digits "
                "(it becomes part of Docker container and host names)"
            )
        older = self.kubelet_version
        # Kubernetes supports kubelets up to three minors older than the API server, never newer.
        if older is not None and not (
            older.major == self.version.major and 1 <= self.version.minor - older.minor <= MAX_KUBELET_SKEW
        ):
            raise TopologyError(
                f"kubelets at {older.tag} under a {self.version.tag} control plane: a kubelet may be 1 to "
                f"{MAX_KUBELET_SKEW} minors older than the control plane, never newer or as new"
            )

    @property
    def worker_version(self) -> KubeVersion:
        return self.kubelet_version or self.version

    @property
    def label(self) -> str:
        """What tells this cluster apart among a run's: its topology, and its kubelets' minor where older."""
        k = self.kubelet_version
        return f"{self.topology}-kubelets-{k.major}{k.minor}" if k else self.topology

    @property
    def name(self) -> str:
        # Gate overrides make a different cluster, so they get a different name.
        gates = ",".join(f"{k}={v}" for k, v in sorted(self.gates.items()))
        tag = f"-g{hashlib.sha256(gates.encode()).hexdigest()[:6]}" if gates else ""
        purpose = f"{self.purpose}-" if self.purpose else ""
        skew = f"-k{self.kubelet_version.major}{self.kubelet_version.minor}" if self.kubelet_version else ""
        return f"kep5004-{purpose}{self.topology}-{self.version.major}{self.version.minor}{skew}{tag}"


def parse_gates(text: str) -> dict[str, bool]:
    """'A=false,B=true' -> {'A': False, 'B': True}; anything else is an error."""
    gates = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = item.partition("=")
        if value.lower() not in ("true", "false") or not name:
            raise TopologyError(f"feature gate {item!r} is not NAME=true|false")
        gates[name] = value.lower() == "true"
    return gates


def feature_gates(spec: ClusterSpec) -> dict[str, bool]:
    """Gates to set: DRAExtendedResource where it is not already on (in the control plane or, with
    older kubelets, in them: one setting reaches both), plus overrides."""
    stage = gate_stage(spec.version)
    on_everywhere = stage.gate_default and gate_stage(spec.worker_version).gate_default
    gates: dict[str, bool] = {} if on_everywhere else {FEATURE_GATE: True}
    for name, value in spec.gates.items():
        if name == FEATURE_GATE and stage.gate_locked and value != stage.gate_default:
            raise TopologyError(
                f"{FEATURE_GATE} is {stage.gate_stage} and locked to {stage.gate_default} in {spec.version.short}; "
                f"it cannot be set to {value}"
            )
        gates[name] = value
    return gates


def render(spec: ClusterSpec, host: HostFacts, node_image: str, worker_image: str | None = None) -> dict[str, Any]:
    """The kind configuration of `spec`: the control plane from `node_image`, the workers from
    `worker_image` (their older version's node image, with kubelet skew) or the same."""
    if spec.topology not in TOPOLOGIES:
        raise TopologyError(f"unknown topology {spec.topology!r} (known: {', '.join(TOPOLOGIES)})")
    kubeadm_patches: list[dict[str, Any]] = [
        # No CoreDNS: nothing here resolves names, and its default forwards to outside resolvers.
        {
            "kind": "InitConfiguration",
            "skipPhases": ["preflight", "addon/coredns"],
            # Readiness probed every few seconds instead of every second (clusters/probe_patches.py).
            "patches": {"directory": probe_patches.IN_NODE},
        },
    ]
    cri = '[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n'
    if not host.has_cap_sys_resource:
        # Sandboxes ask for a lower oom_score_adj than containerd's, which needs CAP_SYS_RESOURCE.
        cri += "  restrict_oom_score_adj = true\n"
    if host.cgroup_v1:
        # Kubelet and runc on the cgroupfs driver, as kind sets up Kubernetes before 1.24: on cgroup
        # v1, runc's systemd driver freezes each new container's cgroup while it applies the unit's
        # properties, and under load the freeze does not take ("unable to freeze": the pod fails
        # with StartError). The cgroupfs driver writes the cgroup files without freezing.
        kubeadm_patches.append({"kind": "KubeletConfiguration", "failCgroupV1": False, "cgroupDriver": "cgroupfs"})
        cri += '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = false\n'
    nodes: list[dict[str, Any]] = [
        {"role": "control-plane", "image": node_image, "extraMounts": [probe_patches.node_mount()]}
    ]
    # Workers import the locally built images from archives they see (clusters/image_archives.py).
    nodes += [
        {
            "role": "worker",
            "image": worker_image or node_image,
            "labels": {MODE_LABEL: mode},
            "extraMounts": [image_archives.node_mount()],
        }
        for mode in TOPOLOGIES[spec.topology]
    ]
    config: dict[str, Any] = {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "name": spec.name,
        "networking": {
            # Our own CNI setup (clusters/network.py) replaces kindnetd, which cannot be built offline.
            "disableDefaultCNI": True,
            "kubeProxyMode": "nftables",
            "podSubnet": POD_SUBNET,
            "serviceSubnet": SERVICE_SUBNET,
        },
        "containerdConfigPatches": [cri],
        "kubeadmConfigPatches": [yaml.safe_dump(p, sort_keys=False) for p in kubeadm_patches],
        "nodes": nodes,
    }
    gates = feature_gates(spec)
    if gates:
        config["featureGates"] = gates
    return config


def to_yaml(config: dict[str, Any]) -> str:
    return yaml.safe_dump(config, sort_keys=False)


def config_hash(config: dict[str, Any], node_image_id: str) -> str:
    return hashlib.sha256((to_yaml(config) + node_image_id).encode()).hexdigest()[:16]
