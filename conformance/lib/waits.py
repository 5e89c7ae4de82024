"""Polling with a deadline and a message: the only way the suite waits."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


# Multiplies every wait_for deadline: >1 for slow clusters, <1 to fail fast when many
# waits are expected to expire (e.g. a cluster with the feature gate off).
_timeout_scale = 1.0


def set_timeout_scale(factor: float) -> None:
    global _timeout_scale
    if factor <= 0:
        raise ValueError(f"timeout scale must be positive, not {factor}")
    _timeout_scale = factor


class WaitTimeout(AssertionError):
    """A condition did not hold in time; the message says what was expected and last seen."""


def wait_for(probe: Callable[[], T | None], *, timeout: float, what: str,
             interval: float = 1.0, describe: Callable[[], str] | None = None) -> T:
    """Call probe until it returns something truthy; fail with `what` and the last state."""
    timeout *= _timeout_scale
    end = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > end:
            seen = describe() if describe else repr(value)
            raise WaitTimeout(f"timed out after {timeout:.0f} s waiting for {what}; last seen: {seen}")
        time.sleep(interval)


def holds_for(probe: Callable[[], bool], *, duration: float, what: str, interval: float = 1.0,
              describe: Callable[[], str] | None = None) -> None:
    """Assert that probe stays true for the whole duration (e.g. a pod stays Pending)."""
    end = time.monotonic() + duration
    while time.monotonic() < end:
        if not probe():
            seen = describe() if describe else ""
            raise AssertionError(f"expected {what} for {duration:.0f} s, but it stopped holding; seen: {seen}")
        time.sleep(interval)
