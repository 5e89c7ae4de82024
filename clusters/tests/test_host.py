"""Host detection reads the kernel's own answers (fake /proc and /sys files here), and the
host preparation's disk check stops in one line before anything is installed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from clusters.host import CAP_SYS_RESOURCE, _bounding_set_has, _cgroup_v1
from clusters.paths import REPO_ROOT


def test_cgroup_version_from_the_mount(tmp_path: Path) -> None:
    assert _cgroup_v1(tmp_path) is True
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    assert _cgroup_v1(tmp_path) is False


def test_bounding_set_bits(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tx\nCapBnd:\t000001fffeffffff\n")  # our hosts: bit 24 cleared
    assert _bounding_set_has(CAP_SYS_RESOURCE, status) is False
    assert _bounding_set_has(CAP_SYS_RESOURCE - 1, status) is True
    status.write_text("CapBnd:\t000001ffffffffff\n")
    assert _bounding_set_has(CAP_SYS_RESOURCE, status) is True


def _disk_check(script: str) -> subprocess.CompletedProcess:
    lib = REPO_ROOT / "clusters" / "host" / "disk.sh"
    return subprocess.run(
        ["bash", "-c", f'set -e; die() {{ echo "ERROR: $*" >&2; exit 1; }}; source {lib}; {script}'],
        capture_output=True,
        text=True,
    )


def test_too_little_disk_stops_in_one_line_naming_the_filesystem(tmp_path: Path) -> None:
    run = _disk_check(f"need_disk {tmp_path}/not/yet/made 999999 'a cold build'")
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and f"free on the filesystem of {tmp_path}/not/yet/made" in run.stderr
    assert "a cold build needs about 999999 GB" in run.stderr


def test_enough_disk_passes(tmp_path: Path) -> None:
    assert _disk_check(f"need_disk {tmp_path} 0 anything").returncode == 0
