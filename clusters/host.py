"""Facts about the host that change how clusters must be configured (detected, never assumed)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CAP_SYS_RESOURCE = 24


@dataclass(frozen=True)
class HostFacts:
    cgroup_v1: bool
    has_cap_sys_resource: bool

    @classmethod
    def detect(cls) -> "HostFacts":
        return cls(cgroup_v1=_cgroup_v1(), has_cap_sys_resource=_bounding_set_has(CAP_SYS_RESOURCE))


def _cgroup_v1(root: Path = Path("/sys/fs/cgroup")) -> bool:
    # A unified (v2) hierarchy mounts cgroup2 itself at the root; v1 and hybrid use a tmpfs.
    return not (root / "cgroup.controllers").exists()


def _bounding_set_has(cap: int, status: Path = Path("/proc/self/status")) -> bool:
    for line in status.read_text().splitlines():
        if line.startswith("CapBnd:"):
            return bool(int(line.split()[1], 16) >> cap & 1)
    return os.geteuid() != 0  # no status line: nothing to work around
