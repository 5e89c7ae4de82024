"""wait_for and holds_for: deadlines, the timeout scale, transient errors and what a timeout says."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kube import waits
from kube.waits import WaitTimeout, holds_for, set_timeout_scale, wait_for


class Clock:
    """Stands in for time.monotonic and time.sleep, so that waits take no real time."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    fake = Clock()
    monkeypatch.setattr(waits.time, "monotonic", fake.monotonic)
    monkeypatch.setattr(waits.time, "sleep", fake.sleep)
    yield fake
    set_timeout_scale(1.0)


def returning(*values: object) -> Callable[[], object]:
    """A probe giving `values` in turn (raising those that are exceptions), then the last one forever."""
    queue = list(values)

    def probe() -> object:
        value = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(value, BaseException):
            raise value
        return value

    return probe


def test_returns_the_first_truthy_value(clock: Clock) -> None:
    assert wait_for(returning(None, 0, {"ready": True}), timeout=10, what="x", interval=2) == {"ready": True}
    assert clock.now == 4


def test_timeout_says_what_was_awaited_and_last_seen(clock: Clock) -> None:
    with pytest.raises(WaitTimeout, match=r"timed out after 5 s waiting for the pod to run; last seen: phase Pending$"):
        wait_for(returning(None), timeout=5, what="the pod to run", describe=lambda: "phase Pending")
    assert 5 < clock.now <= 6


def test_without_describe_the_last_value_is_shown() -> None:
    with pytest.raises(WaitTimeout, match=r"last seen: \[\]$"):
        wait_for(returning([]), timeout=3, what="x")


@pytest.mark.parametrize("scale", [0.25, 2.0])
def test_timeout_is_scaled(clock: Clock, scale: float) -> None:
    set_timeout_scale(scale)
    with pytest.raises(WaitTimeout, match=f"timed out after {100 * scale:.0f} s"):
        wait_for(returning(False), timeout=100, what="x")
    assert 100 * scale < clock.now <= 100 * scale + 1


@pytest.mark.parametrize("scale", [0, -1])
def test_scale_must_be_positive(scale: float) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        set_timeout_scale(scale)


def test_transient_errors_count_as_not_yet() -> None:
    probe = returning(ConnectionRefusedError("refused"), None, ConnectionResetError("reset"), "up")
    assert wait_for(probe, timeout=10, what="x", transient=(ConnectionError,)) == "up"


def test_other_errors_propagate_at_once(clock: Clock) -> None:
    with pytest.raises(KeyError):
        wait_for(returning(None, KeyError("status")), timeout=10, what="x", transient=(ConnectionError,))
    assert clock.now == 1


def test_timeout_names_the_last_transient_error() -> None:
    probe = returning(ConnectionRefusedError("first"), None, ConnectionRefusedError("dial tcp:\n  refused"), None)
    with pytest.raises(WaitTimeout, match=r"last seen: None; last error: ConnectionRefusedError: dial tcp: refused$"):
        wait_for(probe, timeout=5, what="x", transient=(ConnectionError,))


def test_describe_failing_transiently_still_times_out_with_the_error() -> None:
    def describe() -> str:
        raise ConnectionRefusedError("down")

    expected = r"last seen: \(could not be read\); last error: ConnectionRefusedError: down$"
    with pytest.raises(WaitTimeout, match=expected):
        wait_for(returning(None), timeout=2, what="x", describe=describe, transient=(ConnectionError,))


def test_wait_timeout_is_an_assertion_and_a_timeout() -> None:
    # Tests fail (not error) on it; runners and command lines that catch TimeoutError catch it too.
    for caught in (AssertionError, TimeoutError):
        with pytest.raises(caught):
            wait_for(returning(None), timeout=1, what="x")


def test_holds_for_passes_while_the_probe_holds(clock: Clock) -> None:
    holds_for(returning(True), duration=10, what="the pod to stay Pending")
    assert clock.now >= 10


def test_holds_for_fails_when_the_probe_stops_holding() -> None:
    with pytest.raises(
        AssertionError, match="expected the pod to stay Pending for 10 s, but it stopped holding; seen: Running"
    ):
        holds_for(returning(True, True, False), duration=10, what="the pod to stay Pending", describe=lambda: "Running")
