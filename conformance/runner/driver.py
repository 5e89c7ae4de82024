"""The driver under test on a cluster: deployed (the fake driver, where the run installs it),
seen publishing, and judged by preflight before any test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.lib.setup import driver_setup, preflight
from conformance.runner.reports import Report, log
from kube.api import Api
from kube.features import VERSIONS
from kube.versions import KubeVersion
from kube.waits import WaitTimeout


def describe(api: Api, context: dict[str, Any]) -> None:
    """The server's version, and every kubelet version seen on the report's clusters (one has
    older kubelets: the skew stage)."""
    seen = {n["status"]["nodeInfo"]["kubeletVersion"] for n in api.list("v1", "Node")}
    context.update(server=api.server_version(), kubelets=sorted(seen | set(context.get("kubelets", []))))


def run_preflight(api: Api, report: Report, stage: str) -> bool:
    """Preflight of one cluster: each item becomes a verdict in the summary; the suite's tests get
    the file and fail with a failed item as their cause. True when nothing failed."""
    context = report.context
    server = KubeVersion.of_server(context["server"])
    expected = VERSIONS.gate_on(server.as_minor, context.get("gate_enabled"))
    items = preflight.run(api, report.profile, server.as_minor, expected)
    report.preflight_file = report.out / f"preflight-{stage}.json"
    preflight.save(items, report.preflight_file)
    context["preflight"] += [{**vars(i), "name": f"{stage}: {i.name}"} for i in items]
    if preflight.failed(items):
        log(f"preflight failed on {stage}: {preflight.one_line(items)}")
        return False
    log(f"preflight on {stage}: {len(items)} items passed or not visible")
    return True


def install_and_check(
    api: Api, kubectl: Callable[..., str], report: Report, driver_image: str | None, stage: str
) -> bool:
    """The profile's fake driver deployed first when `driver_image` is given; True when preflight passed."""
    profile = report.profile
    if profile.deploy == "fake-driver" and driver_image:
        log(f"{stage}: deploying the fake driver as profile {profile.name}")
        driver_setup.deploy_fake_driver(kubectl, profile, driver_image)
    describe(api, report.context)
    try:
        driver_setup.wait_publishing(api, profile)
    except WaitTimeout as err:  # preflight names what is missing
        log(f"{stage}: {err}")
    return run_preflight(api, report, stage)
