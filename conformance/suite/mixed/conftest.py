"""Fixtures of the mixed-node tests: the two workers of topology `mixed` and relabelling them.

These tests need a cluster with a node matching the profile's nodeSelector.dra and one matching
nodeSelector.devicePlugin (topology `mixed` of clusters/topology.py). On any other cluster (e.g.
topology `dra`) they fail, saying why; the runner only runs them on a mixed cluster.

`node_modes` (profiles with the nodeModes capability) changes a worker's mode label (the
driver's plugins follow it) and, when the test ends, even on failure, deletes the test's pods,
puts every label back to what the session started with and waits until the driver serves each
node as before (unless --keep).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from conformance.lib import diagnostics
from conformance.lib.profile import NAMES_REQUESTS, Profile
from conformance.suite.conftest import Target
from conformance.suite.mixed import helpers
from kube.api import Api
from kube.waits import wait_for


@dataclass(frozen=True)
class Workers:
    dra: str  # a worker served by the DRA plugin only
    device_plugin: str  # a worker served by the device plugin only
    original: dict[str, str]  # node -> mode at the start of the session (profiles with nodeModes)


def _matching(api: Api, selector: dict[str, str]) -> list[str]:
    if not selector:
        return []
    text = ",".join(f"{k}={v}" for k, v in selector.items())
    return sorted(n["metadata"]["name"] for n in api.list("v1", "Node", label_selector=text))


@pytest.fixture(scope="session")
def workers(target: Target) -> Workers:
    api, p = target.api, target.profile
    if p.explicit_name is None:
        # The implicit name lies in the kubernetes.io domain, which no device plugin may advertise.
        pytest.skip(
            f"not tested: profile {p.name}'s DeviceClass maps no explicit name, and a device plugin cannot "
            f"serve the implicit one ({p.implicit_resource_name}); nodes serving one name both ways need one"
        )
    if not p.probe.names_devices:
        # Double booking between the two paths can only be seen by which devices each pod got.
        pytest.skip(f"not tested: {NAMES_REQUESTS}")
    if not p.device_plugin_node_selector:
        pytest.fail(f"profile {p.name} declares no device-plugin nodes (nodeSelector.devicePlugin)", pytrace=False)
    original: dict[str, str] = {}
    if p.node_modes:
        modes = {n["metadata"]["name"]: helpers.mode_of(api, p, n["metadata"]["name"]) for n in api.list("v1", "Node")}
        original = {n: m for n, m in modes.items() if m is not None}
        if "both" in original.values():
            pytest.fail(
                f"a node is labelled {p.node_modes.label}={p.node_modes.values['both']} ({original}): left by "
                "an earlier run with --keep? Relabel it before running the mixed tests",
                pytrace=False,
            )
    dra, dp = _matching(api, p.dra_node_selector), _matching(api, p.device_plugin_node_selector)
    if not dra or not dp:
        pytest.fail(
            f"needs topology mixed (a DRA node {p.dra_node_selector} and a device-plugin node "
            f"{p.device_plugin_node_selector})",
            pytrace=False,
        )
    # The runner waits only for the DRA nodes; the device plugin must be registered too.
    for node, mode in original.items():
        helpers.wait_settled(api, p, node, mode)
    return Workers(dra=dra[0], device_plugin=dp[0], original=original)


@pytest.fixture(autouse=True)
def _mixed_topology(workers: Workers) -> None:
    """Skip every test of this directory (before its namespace is made) on a non-mixed cluster."""


class NodeModes:
    """Relabel workers; `restore` puts the session's labels back and waits for the driver."""

    def __init__(self, api: Api, profile: Profile, namespace: str, original: dict[str, str]) -> None:
        self.api, self.profile, self.namespace, self.original = api, profile, namespace, original

    def set(self, node: str, mode: str, timeout: float = 300, in_use: int = 0) -> None:
        """Label the node and wait until exactly the plugins of `mode` serve it (helpers.settled;
        in_use: devices device-plugin pods still hold, which a DRA driver may leave unpublished)."""
        helpers.set_mode_label(self.api, self.profile, node, mode)
        helpers.wait_settled(self.api, self.profile, node, mode, timeout=timeout, in_use=in_use)

    def restore(self) -> None:
        api = self.api
        changed = {n: m for n, m in self.original.items() if helpers.mode_of(api, self.profile, n) != m}
        if changed:
            # Pods holding devices of a plugin that is about to leave could not be unprepared
            # afterwards: delete them (and what would recreate them) first.
            for kind, version in (("Deployment", "apps/v1"), ("Job", "batch/v1")):
                for obj in api.list(version, kind, self.namespace):
                    api.delete(version, kind, obj["metadata"]["name"], self.namespace)
            for p in api.list("v1", "Pod", self.namespace):
                api.delete("v1", "Pod", p["metadata"]["name"], self.namespace)
            wait_for(
                lambda: not api.list("v1", "Pod", self.namespace),
                timeout=180,
                interval=2,
                what=f"the pods of {self.namespace} to be gone before the node labels are restored",
                describe=lambda: str([p["metadata"]["name"] for p in api.list("v1", "Pod", self.namespace)]),
            )
            for node, mode in changed.items():
                helpers.set_mode_label(api, self.profile, node, mode)
        for node, mode in self.original.items():
            helpers.wait_settled(api, self.profile, node, mode)


@pytest.fixture
def node_modes(request: pytest.FixtureRequest, target: Target, namespace: str, workers: Workers) -> Iterator[NodeModes]:
    """Set up after `namespace`, so it is torn down (labels restored) before the namespace goes."""
    if target.profile.node_modes is None:
        pytest.skip(
            f"not tested: moving a node between the device plugin and DRA needs the profile capability "
            f"nodeModes, which profile {target.profile.name} does not declare"
        )
    modes = NodeModes(target.api, target.profile, namespace, workers.original)
    yield modes
    call = getattr(request.node, "report_call", None)
    if call is not None and call.failed:
        # Restoring deletes the test's pods: keep what they looked like on the relabelled node first.
        dest = (
            request.config.getoption("--diagnostics-dir")
            / diagnostics.safe_name(request.node.nodeid)
            / "before-restore"
        )
        diagnostics.collect(
            target.api, namespace, target.profile.driver_namespace, target.profile.driver_selector, dest
        )
    if request.config.getoption("--keep"):
        current = {n: helpers.mode_of(target.api, target.profile, n) for n in workers.original}
        if current != workers.original:
            print(f"--keep: node labels left as {current} (session started with {workers.original})")
        return
    modes.restore()
