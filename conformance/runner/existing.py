"""Existing-cluster mode (--kubeconfig): the suite against a cluster and driver someone brings;
no kind cluster is made, and nothing the suite did not create is removed."""

from __future__ import annotations

import time
from pathlib import Path

from clusters import lifecycle
from clusters.images import BuiltImages
from clusters.shell import CommandError
from conformance.lib import profile as profiles
from conformance.lib.objects import cleanup
from conformance.lib.setup import driver_setup, permissions
from conformance.runner import driver
from conformance.runner.options import RunOptions
from conformance.runner.reports import Report, StageLog, base_context, finish, fresh, log
from conformance.runner.stages import Stages
from conformance.runner.stopping import Interrupts
from kube.api import Api


def on_existing(
    options: RunOptions, arg: str, profile: profiles.Profile, interrupts: Interrupts
) -> tuple[bool, list[Path]]:
    """Whether every stage passed, and the report directory."""
    assert options.kubeconfig is not None
    api = Api(options.kubeconfig)
    try:
        server = api.server_version()
    except Exception as err:
        raise CommandError(
            f"the cluster in {options.kubeconfig} is unreachable: {' '.join(str(err).split())}"
        ) from None
    log(f"existing cluster {options.kubeconfig}: server {server}")
    lacking = permissions.missing(api, permissions.required(profile, options.disruptive))
    if lacking:
        raise CommandError(
            f"the credentials in {options.kubeconfig} lack {len(lacking)} permission(s) the suite needs: "
            + ", ".join(f"{p}" + (f" ({p.why})" if p.why else "") for p in lacking)
        )
    out = fresh(options.out / "existing")
    # The feature is what is certified: preflight expects the gate on, whatever the version's
    # default (on 1.35 it is off by default, and every 1.35 cluster serving the feature failed
    # preflight when the default was expected).
    report = Report(profile, arg, out, base_context("existing", profile, server, True), time.monotonic())
    stages = Stages(options, interrupts)
    passed = False
    kubectl = lifecycle.kubectl_runner(options.kubeconfig)
    image = BuiltImages.load().driver if options.install_fake_driver and profile.deploy == "fake-driver" else None
    try:
        with StageLog(out).step("driver", out):
            ready = driver.install_and_check(api, kubectl, report, image, "existing")
        codes = stages.main(options.kubeconfig, report)
        # The mixed tests need nodes that serve the name through a device plugin.
        selector = ",".join(f"{k}={v}" for k, v in profile.device_plugin_node_selector.items())
        if selector and api.list("v1", "Node", label_selector=selector) and not options.no_mixed:
            codes += stages.mixed(options.kubeconfig, report)
        passed = ready and all(code == 0 for code in codes)
    except Exception as err:  # recorded by the step
        log(f"existing cluster: {type(err).__name__}: {err}")
    finally:
        finish(report)
        # What the tests left (also when interrupted before their teardown) goes unless asked to
        # stay; what the suite installed, it removes.
        sweep = not options.keep_namespaces
        if image and not options.keep:
            log("removing the fake driver the suite installed")
            swept = driver_setup.remove_fake_driver(api, kubectl, profile, image, sweep=sweep)
        else:
            swept = cleanup.sweep(api) if sweep else []
        if sweep:
            log(
                f"removed {len(swept)} object(s) the suite had left: {', '.join(swept)}"
                if swept
                else "nothing the suite created is left in the cluster"
            )
    return passed, [out]
