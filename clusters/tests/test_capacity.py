"""Clusters are admitted by the host's budget (no cluster: the host and the cluster list are given)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusters import capacity
from clusters.capacity import Budget, HostLoad


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KEP5004_CACHE", str(tmp_path))
    return tmp_path


def test_a_two_core_host_keeps_four_clusters_alive_and_creates_one_at_a_time() -> None:
    budget = Budget.for_host(HostLoad(cores=2, mem_available_gib=22.0, load1=0.1), env={})
    assert (budget.live, budget.creating) == (4, 1)
    assert "2 cores, 22.0 GiB available" in budget.why


def test_memory_bounds_the_clusters_alive_on_a_host_with_many_cores() -> None:
    budget = Budget.for_host(HostLoad(cores=16, mem_available_gib=7.0, load1=0.0), env={})
    assert (budget.live, budget.creating) == (4, 4)
    assert Budget.for_host(HostLoad(cores=1, mem_available_gib=0.5, load1=0.0), env={}).live == 1


def test_the_environment_overrides_what_was_measured_and_says_so() -> None:
    env = {capacity.MAX_CLUSTERS_ENV: "9", capacity.CREATE_AT_ONCE_ENV: "2"}
    budget = Budget.for_host(HostLoad(cores=2, mem_available_gib=22.0, load1=0.0), env=env)
    assert (budget.live, budget.creating) == (9, 2)
    assert capacity.MAX_CLUSTERS_ENV in budget.why
    with pytest.raises(ValueError, match=capacity.MAX_CLUSTERS_ENV):
        Budget.for_host(HostLoad(cores=2, mem_available_gib=22.0, load1=0.0), env={capacity.MAX_CLUSTERS_ENV: "0"})


def test_a_creation_waits_until_fewer_clusters_than_the_budget_are_alive() -> None:
    alive = ["a", "b"]
    slept = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:
            alive.remove("b")  # another run deletes its cluster

    with capacity.admitted("c", lambda: list(alive), limits=Budget(2, 1, ""), sleep=sleep):
        assert alive == ["a"]
    assert len(slept) == 3


def test_the_cluster_being_made_is_not_counted_against_itself() -> None:
    with capacity.admitted("c", lambda: ["c"], limits=Budget(1, 1, ""), sleep=pytest.fail):
        pass


def test_a_stopped_run_gives_up_waiting() -> None:
    def stop() -> None:
        raise KeyboardInterrupt("stopping")

    with pytest.raises(KeyboardInterrupt):
        with capacity.admitted("c", lambda: ["a"], stop=stop, limits=Budget(1, 1, "")):
            pytest.fail("admitted while stopping")


def waits_while_another_process_holds(held: str, name: str, limits: Budget) -> int:
    """How many times admitting `name` waited while another process held what `held` (Python run
    there) takes, until that process ended (after the second wait) and the kernel dropped it."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from clusters import capacity; held = {held}; print('held', flush=True); import sys; sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        waits = []

        def sleep(seconds: float) -> None:
            waits.append(seconds)
            if len(waits) == 2:
                holder.communicate("")  # it ends without giving anything back: its flock goes with it

        with capacity.admitted(name, lambda: [], limits=limits, sleep=sleep):
            pass
        return len(waits)
    finally:
        if holder.poll() is None:
            holder.communicate("")


def test_a_creation_slot_held_by_another_process_makes_the_next_creation_wait() -> None:
    assert waits_while_another_process_holds("capacity._creation_slot(1)", "c", Budget(4, 1, "")) == 2


def test_a_waiter_of_a_better_priority_goes_first_though_it_came_later(tmp_path: Path) -> None:
    """One cluster of room, two waiting: the main lane's cluster (priority 0) is made first."""
    later = capacity._Ticket("kep5004-mixed-136", priority=1)
    try:
        with capacity.admitted(
            "kep5004-dra-136", lambda: ["a"], limits=Budget(2, 1, ""), priority=0, sleep=pytest.fail
        ):
            pass
        slept = []

        def sleep(seconds: float) -> None:
            slept.append(seconds)
            if len(slept) == 2:
                later.remove()  # the other waiter was admitted (or gave up)

        with capacity.admitted("kep5004-dra-137", lambda: ["a"], limits=Budget(2, 1, ""), priority=1, sleep=sleep):
            pass
        assert len(slept) == 2  # it waited while the earlier waiter of its priority stood ahead
    finally:
        later.remove()


def test_the_ticket_of_a_process_that_died_does_not_hold_the_queue(tmp_path: Path) -> None:
    """Whatever became of its pid: no process holds its flock any more."""
    stale = capacity.state_dir() / "slots" / "waiting" / f"0-1-{os.getpid()}-kep5004-dra-135"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.touch()  # left by a process that died (its flock went with it); the pid is even alive
    with capacity.admitted("kep5004-dra-137", lambda: [], limits=Budget(1, 1, ""), sleep=pytest.fail):
        pass
    assert not stale.exists()


def test_a_ticket_held_by_a_live_process_keeps_its_place(tmp_path: Path) -> None:
    assert (
        waits_while_another_process_holds("capacity._Ticket('kep5004-dra-135', 0)", "kep5004-dra-137", Budget(1, 1, ""))
        == 2
    )
