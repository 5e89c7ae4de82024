"""Host detection reads the kernel's own answers (fake /proc and /sys files here)."""
from __future__ import annotations

from pathlib import Path

from clusters.host import CAP_SYS_RESOURCE, _bounding_set_has, _cgroup_v1


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
