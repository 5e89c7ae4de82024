"""Facts about the host that change how clusters must be configured (detected, never assumed)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from clusters.shell import CommandError, run

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


def require_engine() -> None:
    """Stop, in one line, before anything is created when no Docker engine answers: every kind
    cluster needs one, and a run that found out at its first cluster would leave empty reports."""
    try:
        run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=30)
    except CommandError as err:
        raise CommandError(f"no Docker engine answers, `make host` installs and starts one ({err})") from None
    except subprocess.TimeoutExpired:
        raise CommandError("the Docker engine did not answer `docker info` within 30 s") from None
