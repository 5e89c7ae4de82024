"""The conformance suite's fixtures: the cluster under test, the driver profile, isolation,
version applicability and diagnostics on failure.

The suite always targets an existing cluster (--kubeconfig or KUBECONFIG); `python -m
conformance.runner` makes kind clusters and deploys the fake driver before calling it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clusters.nodes import KindNodes
from clusters.shell import CommandError
from conformance.catalogue import catalogue, requirement
from conformance.lib import diagnostics
from conformance.lib import profile as profiles
from conformance.lib.checks import Checks
from conformance.lib.objects import cleanup, pods
from conformance.lib.oracles import devices, driver_state
from conformance.lib.profile import Profile
from conformance.lib.setup import preflight
from conformance.lib.setup.driver_setup import dra_nodes
from conformance.report.markers import requirement_ids
from kube.api import Api
from kube.versions import KubeVersion, Minor
from kube.waits import set_timeout_scale

pytest_plugins = ["conformance.report.plugin"]


def pytest_addoption(parser: pytest.Parser) -> None:
    # --kubeconfig (the cluster under test) is pytest-kind's option; ours falls back to $KUBECONFIG.
    group = parser.getgroup("kep5004")
    group.addoption("--profile", default="fake-gpu", help="driver profile name or path")
    group.addoption(
        "--timeout-scale", type=float, default=1.0, help="multiply every wait deadline (e.g. 2 for a slow cluster)"
    )
    group.addoption(
        "--diagnostics-dir",
        type=Path,
        default=Path("reports/diagnostics"),
        help="where failing tests leave events, objects and driver logs",
    )
    group.addoption(
        "--disruptive",
        action="store_true",
        help="run the disruptive tests (the driver's pod deleted, a node drained of the suite's pods)",
    )
    group.addoption(
        "--preflight",
        type=Path,
        default=None,
        help="preflight results of the runner (JSON): tests fail with a failed item as their cause",
    )


def pytest_configure(config: pytest.Config) -> None:
    set_timeout_scale(config.getoption("--timeout-scale"))


@dataclass(frozen=True)
class Target:
    api: Api
    version: KubeVersion
    profile: Profile

    @property
    def minor(self) -> Minor:
        return self.version.as_minor


@pytest.fixture(scope="session")
def target(pytestconfig: pytest.Config) -> Target:
    kubeconfig = pytestconfig.getoption("--kubeconfig") or os.environ.get("KUBECONFIG")
    if not kubeconfig:
        pytest.fail("no cluster under test: pass --kubeconfig or set KUBECONFIG", pytrace=False)
    try:
        profile = profiles.load(pytestconfig.getoption("--profile"))
    except profiles.ProfileError as err:
        pytest.fail(str(err), pytrace=False)
    api = Api(Path(kubeconfig))
    try:
        version = api.server_version()
    except Exception as err:  # unreachable server, bad credentials: say which cluster
        pytest.fail(f"cluster in {kubeconfig} is unreachable: {err}", pytrace=False)
    return Target(api, KubeVersion.of_server(version), profile)


@pytest.fixture(autouse=True)
def _applicable(request: pytest.FixtureRequest, target: Target) -> None:
    """Skip, saying why, a test none of whose requirements apply to this server version."""
    ids = requirement_ids(request.node)
    verdicts = [requirement(rid).applies_to(target.minor, gate_enabled=True) for rid in ids]
    if verdicts and not any(ok for ok, _ in verdicts):
        pytest.skip("not applicable: " + "; ".join(reason for _, reason in verdicts))


# Requirements the catalogue says need the explicit name of the profile's DeviceClass: a driver whose
# class maps none (installed with the implicit name only) cannot show them, whatever passes in the
# tests citing them.
EXPLICIT_NAME_IDS = tuple(r.id for r in catalogue().requirements.values() if r.needs_explicit_name)


def no_explicit_name(profile: Profile) -> str:
    return (
        f"no explicit name installed: profile {profile.name}'s DeviceClass {profile.device_class} maps no "
        f"extendedResourceName, pods ask for {profile.implicit_resource_name}"
    )


def needs_explicit_name(profile: Profile) -> None:
    """Skip (not tested) a test that needs the explicit and the implicit name of the profile's class."""
    if profile.explicit_name is None:
        pytest.skip(f"not tested: {no_explicit_name(profile)}")


@dataclass(frozen=True)
class LoneDevice:
    device: tuple[str, str]  # (pool, name)
    resource: str  # the explicit name of a DeviceClass that selects this device alone
    device_class: str
    selects: str  # the class's CEL selector


def lone_device(target: Target, request: pytest.FixtureRequest, prefix: str) -> LoneDevice:
    """A new DeviceClass (deleted after the test) selecting one device of the driver's, under an
    explicit name of its own: a test holding that name holds the only device the scheduler may
    give for it. Skips (not tested) where no attribute tells one device apart. Tests using it are
    serial: tests running alongside could hold the device."""
    p = target.profile
    found = devices.one_device(target.api, p.driver)
    if found is None:
        pytest.skip(f"not tested: driver {p.driver} publishes no attribute whose value tells one device apart")
    device, selects = found
    name = f"example.com/{prefix}-{uuid.uuid4().hex[:8]}"
    cls = pods.create_device_class(target.api, request, p.driver, name, prefix=prefix, selects=selects)
    return LoneDevice(device, name, cls["metadata"]["name"], selects)


@pytest.fixture(autouse=True)
def _explicit_name_held(_applicable: None, check: Checks, target: Target) -> None:
    """Without an explicit name, the explicit-name requirements a test cites are not tested there."""
    if target.profile.explicit_name is None:
        for rid in sorted(set(EXPLICIT_NAME_IDS) & check.allowed):
            check.not_tested(rid, no_explicit_name(target.profile))


@pytest.fixture(scope="session")
def preflight_failures(pytestconfig: pytest.Config) -> list[preflight.Item]:
    path = pytestconfig.getoption("--preflight")
    return preflight.failed(preflight.load(path)) if path else []


@pytest.fixture(autouse=True)
def _preflight_held(_applicable: None, preflight_failures: list[preflight.Item], check: Checks, target: Target) -> None:
    """A test on a cluster that failed preflight fails every applicable ID it cites with that cause, at once."""
    if preflight_failures:
        cause = f"preflight failed: {preflight.one_line(preflight_failures)}"
        for rid in sorted(check.allowed):
            if requirement(rid).applies_to(target.minor, gate_enabled=True)[0]:
                check.that(rid, False, cause)
        pytest.fail(cause, pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


def _test_namespace(request: pytest.FixtureRequest, target: Target, failed: Callable[[], bool]) -> Iterator[str]:
    if request.node.get_closest_marker("serial"):
        # A serial test sizes its pods by the devices nodes publish, so it needs them free: the
        # namespaces the tests before it deleted (e.g. the whole parallel stage's) may still
        # hold some. The scoring tests' seed once got 7 of 8 devices while the eighth was still
        # held, leaving no room for the pod it was meant to attract.
        cleanup.wait_devices_released(target.api, target.profile.driver)
    name = f"kep5004-{uuid.uuid4().hex[:10]}"
    cleanup.new_namespace(target.api, name, target.profile.workload_pull_secret)
    yield name
    if failed():
        dest = request.config.getoption("--diagnostics-dir") / diagnostics.safe_name(request.node.nodeid)
        p = target.profile
        diagnostics.collect(target.api, name, p.driver_namespace, p.driver_selector, dest)
    if not request.config.getoption("--keep"):
        target.api.delete("v1", "Namespace", name)


@pytest.fixture
def namespace(request: pytest.FixtureRequest, target: Target) -> Iterator[str]:
    """A fresh namespace per test; on failure its objects and the driver's logs are saved."""
    yield from _test_namespace(
        request, target, lambda: getattr(getattr(request.node, "report_call", None), "failed", False)
    )


@pytest.fixture(scope="module")
def module_namespace(request: pytest.FixtureRequest, target: Target) -> Iterator[str]:
    """One namespace for a module whose tests are steps of one scenario (pods outlive a step)."""
    session = request.session
    failures_before = session.testsfailed
    yield from _test_namespace(request, target, lambda: session.testsfailed > failures_before)


@pytest.fixture
def held_at_start(target: Target) -> dict[str, frozenset[str]]:
    """Claims the driver holds prepared on each DRA node as the test begins (its profile's
    nodeState): what earlier tests or workloads left is not the test's to judge."""
    return driver_state.held_on_nodes(target.api, target.profile, dra_nodes(target.api, target.profile))


@pytest.fixture(scope="session")
def kind_nodes(target: Target) -> KindNodes:
    """The node containers of the kind cluster under test, for tests that change the cluster in place."""
    try:
        return KindNodes.of_node(target.api.list("v1", "Node")[0]["metadata"]["name"])
    except CommandError as err:
        pytest.fail(
            f"these tests change Kubernetes versions or gates on the nodes, which needs a kind cluster "
            f"on this host: {err}",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def kubeconfig(target: Target) -> Path:
    path = target.api.kubeconfig or os.environ.get("KUBECONFIG")
    assert path, "no kubeconfig"
    return Path(path)
