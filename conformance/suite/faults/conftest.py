"""Fixtures of the fault tests: the DRA worker of the `in-place` cluster as a node container the
tests can reach (clusters/faults.py injects the faults through it), and the driver's pods on it."""

from __future__ import annotations

import pytest

from clusters.nodes import KindNodes, Node
from conformance.lib.objects import pods
from conformance.suite.conftest import Target


@pytest.fixture(scope="module")
def worker(target: Target, kind_nodes: KindNodes) -> Node:
    """The worker whose devices the driver publishes; every pod of these tests is kept to it."""
    published = sorted(pods.dra_capacity(target.api, target.profile.driver))
    found = [n for n in kind_nodes.workers if n.name in published]
    if not found:
        pytest.fail(
            f"no worker of {kind_nodes.cluster} has devices of {target.profile.driver} (published: {published})",
            pytrace=False,
        )
    return found[0]
