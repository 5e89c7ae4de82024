"""How many kind clusters this host carries at once, measured, never assumed.

Every kind node runs a kubelet and containerd, every control plane an etcd and an API server,
whether a test uses them or not; and a cluster being created is the busiest thing on a host
(kubeadm, image imports). A job tuned on one 2-core host started six clusters at once and nine
alive; on a fresh 2-core host the same job could not create its clusters (kubeadm init timed out
at a load average of 185, 2026-12 issue #31). So clusters are admitted, host-wide, by two limits
that every process of the project honours through lifecycle.ensure:

- `live`: kind clusters alive on the host at once, counted with `kind get clusters`, so that
  clusters of other runs, other checkouts or anyone's count too;
- `creating`: clusters being created at once, one exclusive flock per slot under the state
  directory (the kernel drops a dead process's lock).

Both come from the host's cores and available memory when first asked for, and can be set with
KEP5004_MAX_CLUSTERS / KEP5004_CREATE_AT_ONCE (the runner's --max-clusters / --create-at-once).
Waiting creations queue in order of priority, then of arrival: each holds a ticket file under
the state directory naming its process (tickets of dead processes are dropped), so that the
cluster the most work waits on (priority 0) is not overtaken by whoever polls first.
"""

from __future__ import annotations

import fcntl
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from clusters.paths import state_dir
from clusters.shell import progress

MAX_CLUSTERS_ENV = "KEP5004_MAX_CLUSTERS"
CREATE_AT_ONCE_ENV = "KEP5004_CREATE_AT_ONCE"
# Clusters alive per core. Measured on 2-core hosts (docs/timings.md): an idle cluster costs
# ~11 % of a core and a busy one most of one; nine alive on two cores made every step 1.5-5
# times slower and cluster creation fail, four leave each busy cluster about half a core.
CLUSTERS_PER_CORE = 2
# Cores per cluster creation at once: a creation keeps about one core busy for 40-90 s.
CORES_PER_CREATION = 4
# Memory a cluster of our topologies holds (nine used ~9 GiB, docs/timings.md), with headroom
# for the suite's pods and the page cache the image imports need.
GIB_PER_CLUSTER = 1.5
POLL_S = 3.0
# A three-node cluster of ours comes up in 27-40 s on a 2-core host with nothing else on it
# (27, 30, 33, 36 s measured on 2026-12-06); how much longer one took says how loaded the host is.
ALONE_CREATE_S = 40.0
MAX_WAIT_SCALE = 3.0
REPORT_EVERY_S = 60.0


@dataclass(frozen=True)
class HostLoad:
    cores: int
    mem_available_gib: float
    load1: float

    @classmethod
    def measure(cls, meminfo: Path = Path("/proc/meminfo")) -> "HostLoad":
        cores = len(os.sched_getaffinity(0))
        available_kib = next(
            (int(line.split()[1]) for line in meminfo.read_text().splitlines() if line.startswith("MemAvailable:")), 0
        )
        return cls(cores, available_kib / 2**20, os.getloadavg()[0])


@dataclass(frozen=True)
class Budget:
    live: int
    creating: int
    why: str

    @classmethod
    def for_host(cls, host: HostLoad, env: Mapping[str, str] | None = None) -> "Budget":
        env = os.environ if env is None else env
        by_cpu = CLUSTERS_PER_CORE * host.cores
        by_memory = max(1, math.floor(host.mem_available_gib / GIB_PER_CLUSTER))
        live = max(1, min(by_cpu, by_memory))
        creating = max(1, host.cores // CORES_PER_CREATION)
        why = (
            f"{host.cores} cores, {host.mem_available_gib:.1f} GiB available, load {host.load1:.1f}: "
            f"{live} clusters alive at once ({CLUSTERS_PER_CORE} per core, memory for {by_memory}), "
            f"{creating} created at a time"
        )
        overrides = []
        if env.get(MAX_CLUSTERS_ENV):
            live = _positive(env[MAX_CLUSTERS_ENV], MAX_CLUSTERS_ENV)
            overrides.append(f"{live} alive ({MAX_CLUSTERS_ENV})")
        if env.get(CREATE_AT_ONCE_ENV):
            creating = _positive(env[CREATE_AT_ONCE_ENV], CREATE_AT_ONCE_ENV)
            overrides.append(f"{creating} created at a time ({CREATE_AT_ONCE_ENV})")
        if overrides:
            why += "; set: " + ", ".join(overrides)
        return cls(live, creating, why)


def wait_scale(created_s: float | None) -> float:
    """How much longer than on a quiet host a wait on this cluster may take: its creation time
    against a quiet host's, between 1 and MAX_WAIT_SCALE (1 for a cluster reused, not timed)."""
    if created_s is None:
        return 1.0
    return round(min(MAX_WAIT_SCALE, max(1.0, created_s / ALONE_CREATE_S)), 2)


def _positive(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{name}={text!r}: a whole number of at least 1 is needed")
    return value


_budget: Budget | None = None


def budget() -> Budget:
    """This process's budget, measured once (later measurements would count our own clusters' load)."""
    global _budget
    if _budget is None:
        _budget = Budget.for_host(HostLoad.measure())
    return _budget


def _creation_slot(slots: int) -> int | None:
    """A held flock on one of `slots` creation slots, or None when all are taken."""
    directory = state_dir() / "slots"
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(slots):
        fd = os.open(directory / f"create-{i}", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            os.close(fd)
    return None


class _Ticket:
    """A place in the host-wide queue of waiting creations: the file <priority>-<arrival ns>-<pid>-<name>,
    flocked by its process for as long as it waits. The kernel drops a dead process's flock, so a
    ticket nobody holds is stale, whatever became of its pid."""

    def __init__(self, name: str, priority: int) -> None:
        self.directory = state_dir() / "slots" / "waiting"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / f"{priority}-{time.time_ns()}-{os.getpid()}-{name}"
        self.fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def ahead(self) -> int:
        """How many live waiters come before this one."""
        mine = _place(self.path.name)
        return sum(_place(t.name) < mine for t in self.directory.iterdir() if t != self.path and _held(t))

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _place(ticket: str) -> tuple[int, int, str]:
    priority, arrival, _ = ticket.split("-", 2)
    return int(priority), int(arrival), ticket


def _held(ticket: Path) -> bool:
    """Whether a waiting process holds the ticket; a stale one is removed."""
    try:
        fd = os.open(ticket, os.O_RDONLY)
    except FileNotFoundError:
        return False  # its holder was admitted (or gave up) meanwhile
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    ticket.unlink(missing_ok=True)
    return False


@contextmanager
def admitted(
    name: str,
    alive: Callable[[], list[str]],
    stop: Callable[[], None] = lambda: None,
    limits: Budget | None = None,
    sleep: Callable[[float], None] = time.sleep,
    priority: int = 1,
) -> Iterator[float]:
    """Hold a creation slot while the block creates `name`, entered once fewer than `live` other
    clusters exist on the host and no waiter of a better place in the queue could take the room
    (lower `priority` first, then earlier arrival). Yields the seconds waited. `stop` raises to
    give up waiting (an interrupted run); progress is reported every minute of waiting."""
    limits = limits or budget()
    start = last_report = time.monotonic()
    fd = None
    ticket = _Ticket(name, priority)
    try:
        while True:
            stop()
            others = [c for c in alive() if c != name]
            if len(others) + ticket.ahead() < limits.live:
                fd = _creation_slot(limits.creating)
                # Counted again with the slot held: another process may have created one meanwhile.
                if fd is not None and len([c for c in alive() if c != name]) < limits.live:
                    break
                if fd is not None:
                    os.close(fd)
                    fd = None
            if time.monotonic() - last_report >= REPORT_EVERY_S:
                last_report = time.monotonic()
                progress(
                    f"{name}: waiting {last_report - start:.0f} s for room on this host: "
                    f"{len(others)} of {limits.live} clusters alive ({', '.join(sorted(others))}), "
                    f"{ticket.ahead()} waiting ahead, {limits.creating} created at a time"
                )
            sleep(POLL_S)
        ticket.remove()
        yield time.monotonic() - start
    finally:
        ticket.remove()
        if fd is not None:
            os.close(fd)
