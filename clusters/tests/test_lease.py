"""One run at a time per kind cluster (no cluster: leases are files under the state directory)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clusters import lease


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KEP5004_CACHE", str(tmp_path))
    yield tmp_path
    for name in list(lease._held):
        lease.give_back(name)


def hold_in_another_process(name: str) -> subprocess.Popen:
    """A second run holding the lease until its stdin closes."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from clusters import lease; lease.take({name!r}); "
            "print('held', flush=True); import sys; sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


def test_the_same_process_may_take_its_lease_again() -> None:
    lease.take("kep5004-dra-137")
    lease.take("kep5004-dra-137")
    lease.give_back("kep5004-dra-137")
    lease.give_back("kep5004-dra-137")  # nothing held: nothing to do


def test_a_cluster_another_run_uses_is_refused_naming_that_run() -> None:
    holder = hold_in_another_process("kep5004-dra-135")
    try:
        with pytest.raises(lease.ClusterInUseError, match=rf"kep5004-dra-135 is in use by pid {holder.pid} "):
            lease.take("kep5004-dra-135")
        lease.take("kep5004-dra-136")  # other clusters are free
    finally:
        holder.communicate("")
    lease.take("kep5004-dra-135")  # the holder is gone, and its lease with it
