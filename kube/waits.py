"""Polling with a deadline and a message: the only way the suite and the cluster tooling wait."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal, TypeVar

T = TypeVar("T")

# Multiplies every wait_for deadline: >1 for slow clusters, <1 to fail fast when many
# waits are expected to expire (e.g. a cluster with the feature gate off).
_timeout_scale = 1.0


def set_timeout_scale(factor: float) -> None:
    global _timeout_scale
    if factor <= 0:
        raise ValueError(f"timeout scale must be positive, not {factor}")
    _timeout_scale = factor


class WaitTimeout(AssertionError, TimeoutError):
    """A condition did not hold in time; the message says what was expected and last seen.

    An AssertionError so that a timed-out wait fails a test rather than erroring it, and a
    TimeoutError for the runners and command lines that catch that."""


def _brief(err: BaseException) -> str:
    # ApiException's text spans many lines (headers, body); one line is enough to tell why.
    return f"{type(err).__name__}: {' '.join(str(err).split())[:300]}"


def wait_for(
    # False besides None: a probe is often a chain `a and b and value`.
    probe: Callable[[], T | Literal[False] | None],
    *,
    timeout: float,
    what: str,
    interval: float = 1.0,
    describe: Callable[[], str] | None = None,
    transient: tuple[type[BaseException], ...] = (),
) -> T:
    """Call probe until it returns something truthy; fail with `what` and the last state.

    Exceptions of a `transient` type raised by probe (or describe) count as "not yet": the
    components we talk to restart under us. The last one is part of the timeout message."""
    timeout *= _timeout_scale
    end = time.monotonic() + timeout
    value: T | Literal[False] | None = None
    last_error: BaseException | None = None
    while True:
        try:
            value = probe()
        except transient as err:
            last_error = err
        else:
            if value:
                return value
        if time.monotonic() > end:
            break
        time.sleep(interval)
    try:
        seen = describe() if describe else repr(value)
    except transient as err:
        seen, last_error = "(could not be read)", err
    error = f"; last error: {_brief(last_error)}" if last_error else ""
    raise WaitTimeout(f"timed out after {timeout:.0f} s waiting for {what}; last seen: {seen}{error}")


def holds_for(
    probe: Callable[[], bool],
    *,
    duration: float,
    what: str,
    interval: float = 1.0,
    describe: Callable[[], str] | None = None,
) -> None:
    """Assert that probe stays true for the whole duration (e.g. a pod stays Pending).

    Not scaled: the duration is what the check claims, not a deadline for something to happen."""
    end = time.monotonic() + duration
    while time.monotonic() < end:
        if not probe():
            seen = describe() if describe else ""
            raise AssertionError(f"expected {what} for {duration:.0f} s, but it stopped holding; seen: {seen}")
        time.sleep(interval)
