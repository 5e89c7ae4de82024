"""Pytest fixtures that hand tests a real kind cluster by topology and Kubernetes version.

A cluster fixture never skips: if the cluster cannot be made, the test errors with the reason.
Clusters are deleted after the run unless --keep is given (then a later run reuses them).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from clusters import lifecycle
from clusters.lifecycle import Cluster
from clusters.topology import ClusterSpec
from clusters.versions import resolve, supported_versions
from kube.versions import KubeVersion


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kep5004")
    group.addoption(
        "--keep", action="store_true", help="keep clusters, namespaces and test objects after the run, for debugging"
    )
    group.addoption(
        "--k8s-versions",
        default="",
        help="comma-separated Kubernetes versions to run against (default: every pinned version)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cluster: needs a real kind cluster (fails, never skips, when none can be made)")
    config.addinivalue_line("markers", "serial: changes nodes, drivers, gates or versions; never run in parallel")


def selected_versions(config: pytest.Config) -> list[KubeVersion]:
    wanted = config.getoption("--k8s-versions")
    return [resolve(v) for v in wanted.split(",")] if wanted else supported_versions()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "k8s_version" in metafunc.fixturenames:
        versions = selected_versions(metafunc.config)
        metafunc.parametrize("k8s_version", versions, ids=[v.tag for v in versions], scope="session")


def _cluster(request: pytest.FixtureRequest, topology: str, version: KubeVersion) -> Iterator[Cluster]:
    with lifecycle.cluster(ClusterSpec(topology, version), keep=request.config.getoption("--keep")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def dra_cluster(request: pytest.FixtureRequest, k8s_version: KubeVersion) -> Iterator[Cluster]:
    """1 control plane + 2 workers labelled for the DRA driver."""
    yield from _cluster(request, "dra", k8s_version)


@pytest.fixture(scope="session")
def mixed_cluster(request: pytest.FixtureRequest, k8s_version: KubeVersion) -> Iterator[Cluster]:
    """1 control plane + a DRA worker + a device-plugin worker."""
    yield from _cluster(request, "mixed", k8s_version)
