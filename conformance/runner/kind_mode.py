"""kind mode: per Kubernetes version, clusters of the plan's topologies made (or reused) for the
run, the fake driver deployed as each profile describes it, the stages run, a report per
version and profile; several versions at once in child processes (--jobs)."""

from __future__ import annotations

import copy
import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from clusters import capacity, lifecycle
from clusters.host import require_engine
from clusters.images import BuiltImages
from clusters.topology import ClusterSpec, feature_gates, parse_gates
from clusters.versions import resolve, supported_versions
from conformance.lib import profile as profiles
from conformance.lib.setup import driver_setup
from conformance.runner import driver
from conformance.runner.fanout import Fanout
from conformance.runner.options import RunOptions
from conformance.runner.plan import Step, kind_plan, lanes, run_lanes
from conformance.runner.reports import Report, StageLog, base_context, finish, fresh, log, report_dirs, write_combined
from conformance.runner.stages import Stage, Stages
from conformance.runner.stopping import Interrupts
from kube.api import Api
from kube.features import DRAExtendedResource
from kube.versions import KubeVersion


def on_kind_cluster(
    spec: ClusterSpec,
    stage: Stage,
    images: BuiltImages,
    reports: list[Report],
    stages: Stages,
    made: Callable[[], None] = lambda: None,
    first: bool = False,
) -> bool:
    """One stage on a cluster made for it, once per report's profile (the fake driver of one
    profile is removed before the next one's is deployed); the cluster goes afterwards (unless
    --keep), whatever happened. `made` is called once the cluster is up or failed to come up.
    `first`: the first lane's cluster, the longest chain of work, is made before other waiting
    ones on the host. True when every profile's stage passed."""
    # Copies: each cluster has its own preflight file, and two lanes may share a report.
    reports = [copy.copy(r) for r in reports]
    out = reports[0].out
    passed = False
    try:
        with ExitStack() as cluster_for_the_block:
            with StageLog(out).step(f"{spec.label} cluster", out):
                try:
                    cluster = cluster_for_the_block.enter_context(
                        lifecycle.cluster(
                            spec,
                            images,
                            keep=stages.options.keep,
                            failure_logs=out / "diagnostics" / f"cluster-{spec.name}",
                            stop=stages.interrupts.check,
                            priority=0 if first else 1,
                        )
                    )
                finally:
                    made()
            passed = _profiles_in_turn(cluster, spec, stage, images, reports, stages)
            if not passed:
                cluster.export_logs(out / "diagnostics" / f"cluster-{spec.name}")
    except Exception as err:  # the cluster: recorded by its step
        log(f"{spec.label} on {spec.version.tag}: {type(err).__name__}: {err}")
    return passed


def _profiles_in_turn(
    cluster: lifecycle.Cluster,
    spec: ClusterSpec,
    stage: Stage,
    images: BuiltImages,
    reports: list[Report],
    stages: Stages,
) -> bool:
    """The stage once per report's profile on `cluster`, the fake driver of the one before removed first."""
    # Waits on a cluster that was slow to come up get the time the host's load costs them.
    scale = capacity.wait_scale(cluster.created_s)
    if scale > 1:
        log(
            f"{spec.name} took {cluster.created_s:.0f} s to come up ({capacity.ALONE_CREATE_S:.0f} s on a quiet "
            f"host): its stages wait {scale}x as long"
        )
    passed = True
    previous: Report | None = None
    for report in reports:
        report.wait_scale = scale
        try:
            with StageLog(report.out).step(f"{spec.label} driver", report.out):
                stages.interrupts.check()  # an interrupt came while this lane's cluster was being made
                api = Api(cluster.kubeconfig)
                if previous is not None:
                    log(f"{spec.label}: removing the fake driver of profile {previous.profile.name}")
                    swept = driver_setup.remove_fake_driver(api, cluster.kubectl, previous.profile, images.driver)
                    if swept:
                        log(f"{spec.label}: {len(swept)} object(s) of its tests went first")
                previous = report
                ready = driver.install_and_check(api, cluster.kubectl, report, images.driver, spec.label)
                stages.interrupts.check()
            codes = stage(stages, cluster.kubeconfig, report)
            passed &= ready and all(code == 0 for code in codes)
        except Exception as err:  # recorded by the step; the next profile or topology may still give verdicts
            passed = False
            log(f"{spec.label} on {spec.version.tag} ({report.profile.name}): {type(err).__name__}: {err}")
    return passed


def on_kind(
    options: RunOptions, chosen: list[tuple[str, profiles.Profile]], interrupts: Interrupts
) -> tuple[bool, list[Path]]:
    """Every version's plan; whether every stage passed, and the report directories."""
    # What the user typed is judged first, then what the host lacks, all before a report exists.
    gates = parse_gates(options.feature_gates)
    versions = [resolve(v) for v in options.k8s_versions] if options.k8s_versions else supported_versions()
    require_engine()
    images = BuiltImages.load()
    share_cluster_budget(options)
    if options.jobs > 1 and len(versions) > 1:
        return versions_at_once(options, versions, gates, chosen)
    stages = Stages(options, interrupts)
    passed = True
    outs: list[Path] = []
    try:
        for version in versions:
            reports = _reports(options, version, gates, chosen)
            outs += [r.out for r in reports]
            try:
                passed &= _version(version, gates, reports, images, stages)
            finally:  # after an interrupt too: the partial summary shows the interrupted stage
                for report in reports:
                    finish(report)
    finally:
        write_combined(options.out, outs)
    return passed, outs


def _reports(
    options: RunOptions, version: KubeVersion, gates: dict[str, bool], chosen: list[tuple[str, profiles.Profile]]
) -> list[Report]:
    main = ClusterSpec("dra", version, gates=gates)
    # The gate as the kind config sets it: switched on where the version's default is off.
    gate = feature_gates(main).get(DRAExtendedResource)
    return [
        Report(profile, arg, out, base_context(out.name, profile, version.tag, gate), time.monotonic())
        for (arg, profile), out in zip(chosen, map(fresh, report_dirs(options.out, version, gates, chosen)))
    ]


def _version(
    version: KubeVersion, gates: dict[str, bool], reports: list[Report], images: BuiltImages, stages: Stages
) -> bool:
    """One version's plan, its lanes at once."""
    plan = lanes(kind_plan(version, stages.options, gates), stages.options.one_cluster_at_a_time)
    first_cluster = threading.Event()

    def run_step(step: Step) -> bool:
        if step.after_first_cluster:
            stages.interrupts.wait(first_cluster)
        if not step.every_profile:  # the other reports say where those requirements were checked
            for report in reports[1:]:
                report.context["first_profile_only"] = reports[0].profile.name
        first = step is plan[0][0]
        return on_kind_cluster(
            ClusterSpec(step.topology, version, gates=gates, kubelet_version=step.kubelets),
            step.stage,
            images,
            reports if step.every_profile else reports[:1],
            stages,
            made=first_cluster.set if first else lambda: None,
            first=first,
        )

    return run_lanes(plan, run_step, stages.interrupts)


def share_cluster_budget(options: RunOptions) -> None:
    """Measure the host once and say what it allows; the budget goes to every process of the run
    (versions at once, the suite's pytest) through the environment, so that all of them count
    against the same figures instead of each measuring a host its siblings already load."""
    for value, name in (
        (options.max_clusters, capacity.MAX_CLUSTERS_ENV),
        (options.create_at_once, capacity.CREATE_AT_ONCE_ENV),
    ):
        if value is not None:
            os.environ[name] = str(value)
    budget = capacity.budget()
    os.environ[capacity.MAX_CLUSTERS_ENV] = str(budget.live)
    os.environ[capacity.CREATE_AT_ONCE_ENV] = str(budget.creating)
    log(f"host: {budget.why} (--max-clusters, --create-at-once to choose)")


def versions_at_once(
    options: RunOptions,
    versions: list[KubeVersion],
    gates: dict[str, bool],
    chosen: list[tuple[str, profiles.Profile]],
) -> tuple[bool, list[Path]]:
    """--jobs N: each version's run (all its stages, one after the other, as without --jobs) in a
    child process, N at a time. Versions have clusters of their own names, so they never meet;
    what they share is the host's cores, hence the waits' deadlines are what keeps them honest."""
    log(f"running {len(versions)} versions, {options.jobs} at a time; each line names its version")
    commands = {
        v.tag: [
            sys.executable,
            "-u",
            "-m",
            "conformance.runner",
            *options.but(k8s_versions=(v.tag,), jobs=1).to_argv(),
        ]
        for v in versions
    }
    outs = [o for v in versions for o in report_dirs(options.out, v, gates, chosen)]
    try:
        # Our working directory, so that relative paths in the arguments (a profile file) still hold.
        codes = Fanout(options.jobs, Path.cwd(), log).run(commands)
    finally:  # also after an interrupt: what finished or was cut short is in the table
        write_combined(options.out, outs)
    log("exit codes: " + ", ".join(f"{v} {c}" for v, c in codes.items()))
    return all(c == 0 for c in codes.values()), outs
