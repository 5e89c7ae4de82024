"""kubeadm patches that change how the kubelet probes the control plane: readiness every few
seconds instead of every second, startup every second instead of every ten.

kubeadm has the kubelet ask etcd, kube-apiserver and kube-scheduler whether they are ready every
second, the latter two over HTTPS with a new TLS handshake each time. On an idle three-node kind
cluster that was 1.2 % of a core of its 9.3 % (docs/timings.md, 2026-12-05), and the full job
keeps up to nine clusters alive at once on two cores. Readiness gates only traffic through
Services and the suite's own waits (which poll every few seconds themselves).

Its startup probes begin 10 s after a container starts and then ask every 10 s, and no
readiness is judged before one succeeds: every restart of a component (a scheduler
reconfigured, a gate switched, a version changed, a component killed on purpose) was reported
Ready 10-20 s after it was serving (2026-12-05: the scoring tests' two scheduler restarts took
25 s each). Startup probes end with their first success, so asking every second costs nothing
once a component runs; the time allowed to start (~240 s) stays kubeadm's. Liveness probes are
left as kubeadm makes them.

The patches are written into the cache, one directory per content, which the control-plane node
mounts; kubeadm applies them when it writes the static pod manifests, at `init` and at
`upgrade apply` (clusters/upgrade.py passes the same directory).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

from clusters.paths import cache_root

IN_NODE = "/kep5004/kubeadm-patches"
READINESS_PERIOD_S = 5
READINESS_PROBED = ("etcd", "kube-apiserver", "kube-scheduler")  # kube-controller-manager has no readiness probe
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
# kubeadm's startup probes: first after 10 s, then every 10 s, 24 failures allowed.
STARTUP_PERIOD_S = 1
STARTUP_ALLOWED_S = 10 + 24 * 10


def probes(component: str) -> dict[str, dict[str, int]]:
    changed = {
        "startupProbe": {
            "initialDelaySeconds": 0,
            "periodSeconds": STARTUP_PERIOD_S,
            "failureThreshold": STARTUP_ALLOWED_S // STARTUP_PERIOD_S,
        }
    }
    if component in READINESS_PROBED:
        changed["readinessProbe"] = {"periodSeconds": READINESS_PERIOD_S}
    return changed


def patches() -> dict[str, str]:
    """File name (kubeadm's `<component>+strategic.yaml`) -> strategic merge patch of its pod."""
    return {
        f"{c}+strategic.yaml": yaml.safe_dump({"spec": {"containers": [{"name": c, **probes(c)}]}}) for c in COMPONENTS
    }


def directory() -> Path:
    """Named after the content, so that a cluster made with other patches has another config."""
    digest = hashlib.sha256(repr(sorted(patches().items())).encode()).hexdigest()[:12]
    return cache_root() / "kubeadm-patches" / digest


def ensure() -> Path:
    """The patch files on the host, for the control plane to mount."""
    found = directory()
    found.mkdir(parents=True, exist_ok=True)
    for name, text in patches().items():
        path = found / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return found


def node_mount() -> dict[str, object]:
    """The kind config's extraMounts entry that shows the patches to a control-plane node."""
    return {"hostPath": str(directory()), "containerPath": IN_NODE, "readOnly": True}
