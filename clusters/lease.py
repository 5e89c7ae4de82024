"""One run at a time per kind cluster on a host.

Cluster names (kep5004-<topology>-<version>) are the same in every checkout, because they name
Docker containers; so a `make test` started while `make conformance` runs from another checkout
would reuse, recreate or delete the other run's clusters under it. Whoever ensures or deletes a
cluster first takes its lease: an exclusive flock on <state>/leases/<name>, held until this
process deletes the cluster or exits. The kernel drops a dead process's flock, so a lease never
outlives its holder, whatever killed it.
"""

from __future__ import annotations

import fcntl
import os
import sys

from clusters.paths import state_dir
from clusters.shell import CommandError

_held: dict[str, int] = {}  # cluster name -> open descriptor holding its flock


class ClusterInUseError(CommandError):
    pass


def take(name: str) -> None:
    """This process holds the cluster's lease from now on (again, if it already does)."""
    if name in _held:
        return
    path = state_dir() / "leases" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 4096).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise ClusterInUseError(
            f"kind cluster {name} is in use by {holder}; wait for that run to end "
            "(cluster names are shared by every checkout on this host)"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} ({' '.join(sys.argv)[:300]})".encode(), 0)
    _held[name] = fd


def give_back(name: str) -> None:
    fd = _held.pop(name, None)
    if fd is not None:
        os.close(fd)
