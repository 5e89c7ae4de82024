"""Fixtures of the gate-cycle scenario: a `gate-cycle` cluster (clusters/topology.py) whose four
components get DRAExtendedResource switched off and back on by clusters/gates.py.

Where the gate is locked on (1.37+), the control plane is switched while emulating the newest
minor in which the gate could still be switched off, as upstream keeps testing the off state
after GA; kubelets cannot emulate and keep it on.

The scenario's tests run in file order as its steps; the gate is put back on when the module
ends, even after a failure or Ctrl-C (unless --keep).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clusters import gates, health
from clusters.nodes import KindNodes
from clusters.versions import FEATURE_GATE
from conformance.catalogue import requirement
from conformance.lib.setup import driver_setup
from conformance.report.markers import requirement_ids
from conformance.suite.conftest import Target
from kube.features import VERSIONS
from kube.versions import Minor, format_minor


def off_as(target: Target) -> Minor:
    """The minor the control plane runs as while the gate is off (emulated where it is locked)."""
    minor = VERSIONS.switchable_as(target.minor)
    if minor is None:
        pytest.fail(f"{FEATURE_GATE} cannot be switched off in {format_minor(target.minor)}", pytrace=False)
    return minor


@pytest.fixture(autouse=True)
def _applicable(request: pytest.FixtureRequest, target: Target) -> None:
    """These tests set the gate themselves: only the server version decides whether they apply,
    with the gate on as it is and off as the control plane then runs."""
    verdicts = [
        requirement(rid).applies_to(minor, gate_enabled=state)
        for rid in requirement_ids(request.node)
        for minor, state in ((target.minor, True), (off_as(target), False))
    ]
    if verdicts and not any(ok for ok, _ in verdicts):
        pytest.skip("not applicable: " + "; ".join(sorted({reason for _, reason in verdicts})))


class Gate:
    """Switches the gate on every component and remembers the state it left."""

    def __init__(self, target: Target, kubeconfig: Path, nodes: KindNodes) -> None:
        self.target, self.kubeconfig, self.nodes = target, kubeconfig, nodes
        as_minor = off_as(target)
        # Emulation, and kubelets left alone, only where the gate is locked in this version.
        self.emulated = format_minor(as_minor) if as_minor != target.minor else None

    def enabled(self) -> bool | None:
        return health.feature_enabled(self.kubeconfig, FEATURE_GATE)

    def set(self, value: bool) -> None:
        gates.set_gate(
            self.kubeconfig,
            self.nodes,
            FEATURE_GATE,
            value,
            emulated=None if value else self.emulated,
            kubelets=self.emulated is None,
        )
        # Restarted kubelets drop the driver's ResourceSlices until it registers again; device
        # names map to what containers see only through them.
        driver_setup.wait_published(self.target.api, self.target.profile)


@pytest.fixture(scope="module")
def gate(request: pytest.FixtureRequest, target: Target, kubeconfig: Path, kind_nodes: KindNodes) -> Iterator[Gate]:
    g = Gate(target, kubeconfig, kind_nodes)
    if g.enabled() is not True:
        pytest.fail(
            f"{FEATURE_GATE} must be on when the gate cycle starts (kube-apiserver reports {g.enabled()})",
            pytrace=False,
        )
    yield g
    if not request.config.getoption("--keep") and g.enabled() is not True:
        g.set(True)
