"""Set-up steps of the scenario modules (gate cycle, upgrade): tests in file order sharing pods.

The `check` fixture belongs to one test; a module fixture that starts the pods a whole scenario
needs (e.g. pods running before an upgrade) has no test to record to. Its oracles record to
`setup_checks(...)` instead: nothing is credited, and the first failed check raises, so the
fixture fails and every step needing it reports its IDs as `error` (not evaluated), naming the
check that failed.
"""

from __future__ import annotations

from conformance.lib.checks import FAILED, Check, Checks


def setup_checks(what: str) -> Checks:
    """A recorder for the set-up `what` (e.g. 'starting the pods before the upgrade')."""

    def sink(c: Check) -> None:
        if c.verdict == FAILED:
            raise AssertionError(f"{what} failed: {c.render()}")

    return Checks(set(), sink)
