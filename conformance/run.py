"""`python -m conformance.run`: the whole conformance job.

kind mode (default): per Kubernetes version, build/reuse a kind cluster (topology `dra`),
deploy the fake driver as each profile describes it (one after the other on the same cluster),
run the suite (a parallel stage, then a serial one); alongside (unless --one-cluster-at-a-time)
the mixed-node tests on a `mixed` cluster the same way, then with the first profile the gate
cycle on a `gate-cycle` cluster (where the gate is locked on, with the control plane emulating
the previous minor), and, with the first profile too, on an `in-place` cluster (made once the main
one is up) the faults and then the upgrade to the neighbouring pinned minor and back; a report
per version and profile.
Existing-cluster mode (--kubeconfig): the same against a cluster and driver you bring,
creating no kind cluster. Reports go to --out/<target>/: JUnit XML, Allure results,
summary.json/.md per requirement, and a results bundle (.tar.gz).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from clusters import capacity, lifecycle
from clusters.host import require_engine
from clusters.images import BuiltImages, ImagesMissingError
from clusters.paths import IN_CHECKOUT, REPO_ROOT, REPORTS_DIR
from clusters.shell import CommandError
from clusters.topology import ClusterSpec, TopologyError, feature_gates, parse_gates
from clusters.versions import KubeVersion, UnknownVersionError, resolve, supported_versions, upgrade_partner
from conformance.cli import guarded
from conformance.fanout import Fanout
from conformance.invocation import prog
from conformance.lib import cleanup, driver_setup, permissions, preflight
from conformance.lib import profile as profiles
from conformance.report import coverage, junit, summary
from kube.api import Api
from kube.features import VERSIONS, DRAExtendedResource
from kube.waits import WaitTimeout, set_timeout_scale


@dataclass
class Report:
    """One report directory: a profile's verdicts on one cluster version (or existing cluster)."""

    profile: profiles.Profile
    profile_arg: str  # as given (name or absolute path), passed on to the suite's pytest
    out: Path
    context: dict
    started: float
    preflight_file: Path | None = None  # the latest preflight, given to the suite
    wait_scale: float = 1.0  # how loaded the host was when this report's cluster was made (capacity.wait_scale)


Stage = Callable[[Path, argparse.Namespace, Report], list[int]]


def log(message: str) -> None:
    print(f"[conformance] {message}", file=sys.stderr, flush=True)


SUITE = REPO_ROOT / "conformance" / "suite"
# Suites that need a cluster of their own topology, run serially after the main stages.
MIXED_SUITE = SUITE / "mixed"  # nodes serving the name both ways
GATE_CYCLE_SUITE = SUITE / "gate_cycle"  # switches the gate off and on in place
FAULTS_SUITE = SUITE / "faults"  # kills and restarts components and nodes in place
UPGRADE_SUITE = SUITE / "upgrade"  # changes the Kubernetes version in place
# Set on an interrupt: signals reach only the main thread, so a lane running in another thread learns
# of it here (before its next stage) and its running stage is stopped through STAGE_PROCESSES.
STOPPING = threading.Event()
STAGE_PROCESSES: set[subprocess.Popen] = set()
# The suite's pytest settings: the checkout's pyproject.toml and conftest.py (found by pytest in
# REPO_ROOT), or, installed, the copy of them shipped with the suite.
PYTEST_CONFIG = [] if IN_CHECKOUT else ["-c", str(SUITE / "pytest-installed.ini"), f"--rootdir={REPO_ROOT}"]


class StageLog:
    """stages.jsonl of one report directory: each stage's exit code, time, or why it never ran."""

    def __init__(self, out: Path) -> None:
        self.path = out / "stages.jsonl"

    def add(self, stage: str, seconds: float, exit: int | None = None, error: str | None = None) -> None:
        entry = {"stage": stage, "seconds": round(seconds)}
        entry.update({"exit": exit} if error is None else {"error": error})
        with self.path.open("a") as f:
            f.write(json.dumps(entry) + "\n")

    @contextmanager
    def step(self, stage: str, out: Path) -> Iterator[None]:
        """A step before the tests (cluster, driver): a failure or an interrupt is recorded as the
        stage's error, with a JUnit error case so that CI dashboards show it, and re-raised."""
        start = time.monotonic()
        try:
            yield
        except BaseException as err:
            reason = "interrupted" if isinstance(err, KeyboardInterrupt) else f"{type(err).__name__}: {err}"
            self.add(stage, time.monotonic() - start, error=reason)
            junit.write_error(junit.stage_file(out, stage), stage, reason)
            raise


def run_stage(
    name: str, paths: list[str], kubeconfig: Path, args: argparse.Namespace, report: Report, marker: str, workers: int
) -> int:
    out = report.out
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *PYTEST_CONFIG,
        *paths,
        "-p",
        "no:cacheprovider",
        "-m",
        marker,
        f"--kubeconfig={kubeconfig}",
        f"--profile={report.profile_arg}",
        f"--results-json={out / 'results.jsonl'}",
        f"--junitxml={junit.stage_file(out, name)}",
        f"--alluredir={out / 'allure'}",
        f"--diagnostics-dir={out / 'diagnostics'}",
        "-rfE",
        f"--timeout-scale={round(args.timeout_scale * report.wait_scale, 2)}",
        *([f"--preflight={report.preflight_file}"] if report.preflight_file else []),
        "-o",
        "junit_family=xunit1",  # keeps the checks tests record as JUnit properties
        # --keep keeps clusters; test namespaces hold devices, so they go unless asked for.
        *(["-k", args.k] if args.k else []),
        *(["--keep"] if args.keep_namespaces else []),
        *(["--disruptive"] if args.disruptive else []),
    ]
    if workers > 1:
        cmd += ["-n", str(workers)]
    stop_if_stopping()
    log(f"stage {name} ({report.profile.name}): {' '.join(cmd[3:])}")
    start = time.monotonic()
    # Its own process group, so that an interrupt reaches pytest AND its xdist workers (which
    # would otherwise go on creating namespaces after the sweep), and only through us.
    stage_pytest = subprocess.Popen(cmd, cwd=REPO_ROOT, start_new_session=True)
    STAGE_PROCESSES.add(stage_pytest)
    try:
        code = stage_pytest.wait()
        stop_if_stopping()  # stopped by the main thread for an interrupt: not a verdict
    except KeyboardInterrupt:
        stop_process_group(stage_pytest)
        StageLog(out).add(name, time.monotonic() - start, error="interrupted")
        raise
    finally:
        STAGE_PROCESSES.discard(stage_pytest)
    log(f"stage {name}: exit {code} after {time.monotonic() - start:.0f} s")
    StageLog(out).add(name, time.monotonic() - start, exit=code)
    return 0 if code == 5 else code  # 5: the stage selected no test; a signal gives a negative code


def stop_process_group(process: subprocess.Popen, grace: float = 60) -> None:
    """SIGINT to the whole group (pytest tears its fixtures down: pods and namespaces go), then
    SIGKILL to whatever is left after `grace` seconds."""
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def stop_if_stopping() -> None:
    if STOPPING.is_set():
        raise KeyboardInterrupt("another lane was interrupted")


def wait_or_stop(event: threading.Event) -> None:
    """Until `event` is set; an interrupt meanwhile stops the waiting lane."""
    while not event.wait(1):
        stop_if_stopping()
    stop_if_stopping()


def stop_every_stage() -> None:
    """After an interrupt: every lane stops before its next step, and running stages now."""
    STOPPING.set()
    for process in list(STAGE_PROCESSES):
        stop_process_group(process)


def main_stages(kubeconfig: Path, args: argparse.Namespace, report: Report) -> list[int]:
    """The suite on a cluster whose nodes serve the name through DRA only."""
    paths = [str(SUITE), *(f"--ignore={d}" for d in (MIXED_SUITE, FAULTS_SUITE, GATE_CYCLE_SUITE, UPGRADE_SUITE))]
    codes = [run_stage("parallel", paths, kubeconfig, args, report, "not serial", args.parallel)]
    if not args.no_serial:
        codes.append(run_stage("serial", paths, kubeconfig, args, report, "serial", 1))
    return codes


def mixed_stage(kubeconfig: Path, args: argparse.Namespace, report: Report) -> list[int]:
    # Tests needing a profile capability (nodeModes) report "not tested" without it.
    return [run_stage("mixed", [str(MIXED_SUITE)], kubeconfig, args, report, "serial", 1)]


def serial_suites_stage(suites: list[tuple[str, Path]]) -> Stage:
    """Stages running suite directories one after the other, each alone: they change the cluster
    in place (gate, version) and leave it as they found it."""

    def stage(kubeconfig: Path, args: argparse.Namespace, report: Report) -> list[int]:
        return [run_stage(name, [str(suite)], kubeconfig, args, report, "serial", 1) for name, suite in suites]

    return stage


@dataclass(frozen=True)
class Step:
    topology: str
    stage: Stage
    every_profile: bool  # False: the first profile only (stages about Kubernetes changing in place)
    lane: str = "main"  # steps of one lane run in order, on a cluster each; the lanes run at once
    # Its cluster is made once the first lane's is up: clusters made at once slow each other down,
    # and the first lane, the longest, should not wait for one that has time to spare.
    after_first_cluster: bool = False


def lanes(plan: list[Step], one_cluster_at_a_time: bool) -> list[list[Step]]:
    """The plan as lanes that run at once, each its steps in order, in the order the plan names
    them. A second cluster at work gains more than it costs while the host has cores to spare
    (docs/timings.md: three lanes cut the full job from 48 to 27 min on two cores)."""
    if one_cluster_at_a_time:
        return [plan]
    names = list(dict.fromkeys(step.lane for step in plan))
    return [[step for step in plan if step.lane == name] for name in names]


def run_lanes(plan: list[list[Step]], run_step: Callable[[Step], bool]) -> bool:
    """The first lane in this thread, the others in threads of their own; every step runs even
    after another failed. An interrupt (only ever raised here) stops the other lanes' stages, and
    returns once those lanes have cleaned up (their clusters deleted)."""

    def lane(steps: list[Step]) -> bool:
        return all([run_step(step) for step in steps])

    with futures.ThreadPoolExecutor(max(1, len(plan) - 1)) as pool:
        others = [pool.submit(lane, steps) for steps in plan[1:]]
        try:
            passed = lane(plan[0]) if plan else True
            return all([other.result() for other in others]) and passed
        except BaseException:
            stop_every_stage()
            futures.wait(others)
            raise


def kind_plan(version: KubeVersion, args: argparse.Namespace, gates: dict[str, bool]) -> list[Step]:
    """The stages to run for one version, each on a cluster of its own topology."""
    plan = [Step("dra", main_stages, True)]
    if not args.no_mixed:
        plan.append(Step("mixed", mixed_stage, True, lane="mixed"))
    if gates:
        log(f"{version.tag}: no gate-cycle or upgrade stage with --feature-gates (they start from the defaults)")
        return plan
    # Killing components, switching the gate and the version test Kubernetes with a running
    # driver; doing it again for every profile would double the job for little: the first
    # profile runs them. The faults and the upgrade to the neighbouring pinned minor and back
    # share one cluster (each leaves it as it found it; faults first, on the cluster as made),
    # the longest chain of the job; the gate cycle follows the mixed stage, the shortest, on a
    # cluster of its own, so that no lane waits long for another (docs/timings.md, 2026-12-05).
    if not args.no_gate_cycle:
        plan.append(Step("gate-cycle", serial_suites_stage([("gate-cycle", GATE_CYCLE_SUITE)]), False, lane="mixed"))
    in_place = []
    if not args.no_faults:
        in_place.append(("faults", FAULTS_SUITE))
    if not args.no_upgrade and upgrade_partner(version):
        in_place.append(("upgrade", UPGRADE_SUITE))
    if in_place:
        # The lane with the most time to spare (docs/timings.md, 2026-12-05) makes its cluster last.
        plan.append(Step("in-place", serial_suites_stage(in_place), False, lane="in-place", after_first_cluster=True))
    return plan


def finish(report: Report) -> dict[str, int]:
    """Summary, context and bundle of one report, from whatever ran (also after an error or interrupt)."""
    out, context = report.out, report.context
    context["wall_clock_s"] = round(time.monotonic() - report.started)
    stages = out / "stages.jsonl"
    context["stages"] = [json.loads(line) for line in stages.read_text().splitlines()] if stages.exists() else []
    counts = summary.write(summary.read_records(out / "results.jsonl"), out, context)
    junit.merge(out, out / "junit.xml")  # the whole run in one file
    (out / "context.json").write_text(json.dumps(context, indent=2))
    bundle = out.with_suffix(".tar.gz")
    with tarfile.open(bundle, "w:gz") as tar:
        tar.add(out, arcname=out.name)
    log(f"{context['target']}: {counts} in {context['wall_clock_s']} s; summary {out / 'summary.md'}; bundle {bundle}")
    return counts


def fresh(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for stale in (
        "results.jsonl",
        "stages.jsonl",
        "junit.xml",
        *(p.name for p in out.glob(f"{junit.PREFIX}*.xml")),
        *(p.name for p in out.glob("preflight-*.json")),
    ):
        (out / stale).unlink(missing_ok=True)
    return out


def base_context(target: str, profile: profiles.Profile, server: str, gate_enabled: bool | None) -> dict:
    """What the report says even when no cluster ever answered."""
    return {
        "target": target,
        "server": server,
        "profile": profile.name,
        "driver": profile.driver,
        "explicit_name": profile.explicit_name is not None,
        "gate_enabled": gate_enabled,
        "preflight": [],
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def describe(api: Api, context: dict) -> None:
    nodes = api.list("v1", "Node")
    context.update(
        server=api.server_version(), kubelets=sorted({n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes})
    )


def run_preflight(api: Api, report: Report, stage: str) -> bool:
    """Preflight of one cluster: each item becomes a verdict in the summary; the suite's tests get
    the file and fail with a failed item as their cause. True when nothing failed."""
    context = report.context
    server = KubeVersion.of_server(context["server"])
    expected = VERSIONS.gate_on((server.major, server.minor), context.get("gate_enabled"))
    items = preflight.run(api, report.profile, (server.major, server.minor), expected)
    report.preflight_file = report.out / f"preflight-{stage}.json"
    preflight.save(items, report.preflight_file)
    context["preflight"] += [{**vars(i), "name": f"{stage}: {i.name}"} for i in items]
    if preflight.failed(items):
        log(f"preflight failed on {stage}: {preflight.one_line(items)}")
        return False
    log(f"preflight on {stage}: {len(items)} items passed or not visible")
    return True


def install_and_check_driver(
    api: Api,
    kubectl: Callable[..., str],
    report: Report,
    images: BuiltImages | None,
    args: argparse.Namespace,
    stage: str,
) -> bool:
    profile = report.profile
    if profile.deploy == "fake-driver" and (images or args.install_fake_driver):
        log(f"{stage}: deploying the fake driver as profile {profile.name}")
        driver_setup.deploy_fake_driver(kubectl, profile, (images or BuiltImages.load()).driver)
    describe(api, report.context)
    try:
        driver_setup.wait_publishing(api, profile)
    except WaitTimeout as err:  # preflight names what is missing
        log(f"{stage}: {err}")
    return run_preflight(api, report, stage)


def on_kind_cluster(
    spec: ClusterSpec,
    stage: Stage,
    images: BuiltImages,
    reports: list[Report],
    args: argparse.Namespace,
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
    cluster = None
    passed = True
    try:
        with StageLog(out).step(f"{spec.topology} cluster", out):
            try:
                cluster = lifecycle.ensure(
                    spec,
                    images,
                    failure_logs=out / "diagnostics" / f"cluster-{spec.name}",
                    stop=stop_if_stopping,
                    priority=0 if first else 1,
                )
            finally:
                made()
        # Waits on a cluster that was slow to come up get the time the host's load costs them.
        scale = capacity.wait_scale(cluster.created_s)
        if scale > 1:
            log(
                f"{spec.name} took {cluster.created_s:.0f} s to come up ({capacity.ALONE_CREATE_S:.0f} s on a quiet "
                f"host): its stages wait {scale}x as long"
            )
        for report in reports:
            report.wait_scale = scale
        previous: Report | None = None
        for report in reports:
            try:
                with StageLog(report.out).step(f"{spec.topology} driver", report.out):
                    stop_if_stopping()  # an interrupt came while this lane's cluster was being made
                    api = Api(cluster.kubeconfig)
                    if previous is not None:
                        log(f"{spec.topology}: removing the fake driver of profile {previous.profile.name}")
                        swept = driver_setup.remove_fake_driver(api, cluster.kubectl, previous.profile, images.driver)
                        if swept:
                            log(f"{spec.topology}: {len(swept)} object(s) of its tests went first")
                    previous = report
                    ready = install_and_check_driver(api, cluster.kubectl, report, images, args, spec.topology)
                    stop_if_stopping()
                codes = stage(cluster.kubeconfig, args, report)
                passed &= ready and all(code == 0 for code in codes)
            except Exception as err:  # recorded by the step; the next profile or topology may still give verdicts
                passed = False
                log(f"{spec.topology} on {spec.version.tag} ({report.profile.name}): {type(err).__name__}: {err}")
    except Exception as err:  # the cluster: recorded by its step
        passed = False
        log(f"{spec.topology} on {spec.version.tag}: {type(err).__name__}: {err}")
    finally:
        if cluster is not None:
            if not passed:
                cluster.export_logs(out / "diagnostics" / f"cluster-{spec.name}")
            if not args.keep:
                lifecycle.delete(cluster.name)
    return passed


def report_name(spec: ClusterSpec, profile: profiles.Profile, first: bool) -> str:
    """The first profile's report keeps the cluster's name; the others add their profile's."""
    return spec.name if first else f"{spec.name}-{profile.name}"


def report_dirs(
    args: argparse.Namespace, version: KubeVersion, gates: dict[str, bool], chosen: list[tuple[str, profiles.Profile]]
) -> list[Path]:
    """The report directories of one version, one per profile."""
    main = ClusterSpec("dra", version, gates=gates)
    return [args.out / report_name(main, profile, i == 0) for i, (_, profile) in enumerate(chosen)]


def write_coverage(args: argparse.Namespace, outs: list[Path]) -> None:
    """coverage.md: every requirement's verdict side by side for these report directories."""
    summaries = [summary.read(o) for o in outs if (o / summary.FILE).exists()]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "coverage.md").write_text(coverage.table(summaries))


def on_kind(args: argparse.Namespace, chosen: list[tuple[str, profiles.Profile]]) -> int:
    # What the user typed is judged first, then what the host lacks, all before a report exists.
    gates = parse_gates(args.feature_gates)
    versions = [resolve(v) for v in args.k8s_versions.split(",")] if args.k8s_versions else supported_versions()
    require_engine()
    images = BuiltImages.load()
    share_cluster_budget(args)
    if args.jobs > 1 and len(versions) > 1:
        return versions_at_once(args, versions, gates, chosen)
    passed = True
    outs: list[Path] = []
    for version in versions:
        main = ClusterSpec("dra", version, gates=gates)
        reports = []
        for (arg, profile), out in zip(chosen, report_dirs(args, version, gates, chosen)):
            out = fresh(out)
            # The gate as the kind config sets it: switched on where the version's default is off.
            gate = feature_gates(main).get(DRAExtendedResource)
            reports.append(
                Report(profile, arg, out, base_context(out.name, profile, version.tag, gate), time.monotonic())
            )
        outs += [r.out for r in reports]
        plan = lanes(kind_plan(version, args, gates), args.one_cluster_at_a_time)
        first_cluster = threading.Event()

        def run_step(step: Step) -> bool:
            if step.after_first_cluster:
                wait_or_stop(first_cluster)
            if not step.every_profile:  # the other reports say where those requirements were checked
                for report in reports[1:]:
                    report.context["first_profile_only"] = reports[0].profile.name
            first = step is plan[0][0]
            return on_kind_cluster(
                ClusterSpec(step.topology, version, gates=gates),
                step.stage,
                images,
                reports if step.every_profile else reports[:1],
                args,
                made=first_cluster.set if first else lambda: None,
                first=first,
            )

        try:
            passed &= run_lanes(plan, run_step)
        finally:  # after an interrupt too: the partial summary shows the interrupted stage
            for report in reports:
                finish(report)
            write_coverage(args, outs)
    return 0 if passed else 1


def share_cluster_budget(args: argparse.Namespace) -> None:
    """Measure the host once and say what it allows; the budget goes to every process of the run
    (versions at once, the suite's pytest) through the environment, so that all of them count
    against the same figures instead of each measuring a host its siblings already load."""
    for value, name in (
        (args.max_clusters, capacity.MAX_CLUSTERS_ENV),
        (args.create_at_once, capacity.CREATE_AT_ONCE_ENV),
    ):
        if value is not None:
            os.environ[name] = str(value)
    budget = capacity.budget()
    os.environ[capacity.MAX_CLUSTERS_ENV] = str(budget.live)
    os.environ[capacity.CREATE_AT_ONCE_ENV] = str(budget.creating)
    log(f"host: {budget.why} (--max-clusters, --create-at-once to choose)")


def versions_at_once(
    args: argparse.Namespace,
    versions: list[KubeVersion],
    gates: dict[str, bool],
    chosen: list[tuple[str, profiles.Profile]],
) -> int:
    """--jobs N: each version's run (all its stages, one after the other, as without --jobs) in a
    child process, N at a time. Versions have clusters of their own names, so they never meet;
    what they share is the host's cores, hence the waits' deadlines are what keeps them honest."""
    log(f"running {len(versions)} versions, {args.jobs} at a time; each line names its version")
    # The later --k8s-versions and --jobs win over what the user gave.
    commands = {
        v.tag: [
            sys.executable,
            "-u",
            "-m",
            "conformance.run",
            *args.argv,
            "--k8s-versions",
            v.tag,
            "--jobs",
            "1",
            "--out",
            str(args.out),
        ]
        for v in versions
    }
    try:
        # Our working directory, so that relative paths in the arguments (a profile file) still hold.
        codes = Fanout(args.jobs, Path.cwd(), log).run(commands)
    finally:  # also after an interrupt: what finished or was cut short is in the table
        write_coverage(args, [o for v in versions for o in report_dirs(args, v, gates, chosen)])
    log("exit codes: " + ", ".join(f"{v} {c}" for v, c in codes.items()))
    return 0 if all(c == 0 for c in codes.values()) else 1


def on_existing(args: argparse.Namespace, arg: str, profile: profiles.Profile) -> int:
    api = Api(args.kubeconfig)
    try:
        server = api.server_version()
    except Exception as err:
        raise CommandError(f"the cluster in {args.kubeconfig} is unreachable: {' '.join(str(err).split())}") from None
    log(f"existing cluster {args.kubeconfig}: server {server}")
    lacking = permissions.missing(api, permissions.required(profile, args.disruptive))
    if lacking:
        raise CommandError(
            f"the credentials in {args.kubeconfig} lack {len(lacking)} permission(s) the suite needs: "
            + ", ".join(f"{p}" + (f" ({p.why})" if p.why else "") for p in lacking)
        )
    out = fresh(args.out / "existing")
    report = Report(profile, arg, out, base_context("existing", profile, server, None), time.monotonic())
    passed = False
    kubectl = lifecycle.kubectl_runner(args.kubeconfig)
    try:
        with StageLog(out).step("driver", out):
            ready = install_and_check_driver(api, kubectl, report, None, args, "existing")
        codes = main_stages(args.kubeconfig, args, report)
        # The mixed tests need nodes that serve the name through a device plugin.
        selector = ",".join(f"{k}={v}" for k, v in profile.device_plugin_node_selector.items())
        if selector and api.list("v1", "Node", label_selector=selector) and not args.no_mixed:
            codes += mixed_stage(args.kubeconfig, args, report)
        passed = ready and all(code == 0 for code in codes)
    except Exception as err:  # recorded by the step
        log(f"existing cluster: {type(err).__name__}: {err}")
    finally:
        finish(report)
        # What the tests left (also when interrupted before their teardown) goes unless asked to
        # stay; what the suite installed, it removes.
        sweep = not args.keep_namespaces
        if args.install_fake_driver and not args.keep:
            log("removing the fake driver the suite installed")
            swept = driver_setup.remove_fake_driver(api, kubectl, profile, BuiltImages.load().driver, sweep=sweep)
        else:
            swept = cleanup.sweep(api) if sweep else []
        if sweep:
            log(
                f"removed {len(swept)} object(s) the suite had left: {', '.join(swept)}"
                if swept
                else "nothing the suite created is left in the cluster"
            )
    return 0 if passed else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog=prog("conformance.run"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--profile",
        help="driver profile name (fixtures/profiles) or path; required with --kubeconfig. "
        "kind mode: comma-separated profiles of the fake driver, run one after the "
        "other on each cluster (default: fake-gpu)",
    )
    p.add_argument(
        "--install-fake-driver",
        action="store_true",
        help="with --kubeconfig: install the project's fake driver (a deploy: fake-driver profile) into "
        "that cluster to try the suite out; removed again at the end unless --keep",
    )
    p.add_argument("--kubeconfig", type=Path, help="run against this existing cluster; no kind cluster is made")
    p.add_argument("--k8s-versions", default="", help="kind mode: comma-separated versions (default: all pinned)")
    p.add_argument("--feature-gates", default="", help="kind mode: gate overrides, e.g. DRAExtendedResource=false")
    p.add_argument("--parallel", type=int, default=2, help="xdist workers for the parallel stage (1 = none)")
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="kind mode: run this many versions at once, each in its own process and clusters",
    )
    p.add_argument(
        "--max-clusters",
        type=int,
        default=None,
        help="kind mode: kind clusters alive on this host at once, counting anyone's (default: measured "
        "from the host's cores and memory, printed at the start)",
    )
    p.add_argument(
        "--create-at-once",
        type=int,
        default=None,
        help="kind mode: clusters created at the same time (default: one per four cores)",
    )
    p.add_argument(
        "--one-cluster-at-a-time",
        action="store_true",
        help="kind mode: a version's clusters one after the other, not the in-place stages' cluster "
        "alongside the others (less memory and CPU at once, a longer run)",
    )
    p.add_argument("--no-serial", action="store_true", help="skip the serial stage")
    # Also --disruptive=true: hydrophone hands its --extra-args on only in --key=value form.
    p.add_argument(
        "--disruptive",
        nargs="?",
        const=True,
        default=False,
        type=_boolean,
        metavar="true|false",
        help="with --kubeconfig: also run the disruptive tests in the serial stage (the driver's pod on a "
        "node deleted while preparing, a node drained of the suite's pods and uncordoned); always "
        "on kind",
    )
    p.add_argument("--no-mixed", action="store_true", help="skip the mixed device-plugin/DRA stage")
    p.add_argument(
        "--no-faults",
        action="store_true",
        help="skip the fault stage (components and nodes killed and restarted under load)",
    )
    p.add_argument("--no-gate-cycle", action="store_true", help="skip the feature gate ON->OFF->ON stage")
    p.add_argument("--no-upgrade", action="store_true", help="skip the Kubernetes upgrade/downgrade stage")
    p.add_argument(
        "--timeout-scale",
        type=float,
        default=1.0,
        help="multiply every wait deadline: 2 for a slow cluster, 0.25 to fail fast on a broken one",
    )
    p.add_argument("-k", default="", help="pytest -k expression to select tests")
    p.add_argument("--keep", action="store_true", help="keep the kind clusters for debugging or reuse")
    p.add_argument(
        "--keep-namespaces",
        action="store_true",
        help="keep each test's namespace (its pods keep their devices: later tests may starve)",
    )
    p.add_argument("--out", type=Path, default=REPORTS_DIR, help="report directory")
    args = p.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # --jobs hands it on to each version's run
    for name in ("jobs", "max_clusters", "create_at_once"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    # The suite's pytest runs in REPO_ROOT: paths given relative to here must not move with it.
    args.out = args.out.absolute()
    args.disruptive = args.disruptive or not args.kubeconfig  # kind clusters are the suite's own
    args.kubeconfig = args.kubeconfig and args.kubeconfig.absolute()
    # SIGTERM (a CI job cancelled, `kill`) is handled like Ctrl-C: partial summary, clusters deleted.
    # SIGINT too, explicitly: a shell starting us in the background (nohup, `&` in a script) sets it
    # to "ignore", and a `kill -INT` from whoever started us must still stop the run.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _interrupt)
    try:
        set_timeout_scale(args.timeout_scale)
        if args.kubeconfig and not args.profile:
            raise CommandError("--kubeconfig needs --profile: the suite must be told which driver it certifies")
        chosen = load_profiles(args.profile or "fake-gpu")  # a bad profile stops us before anything is created
        if args.kubeconfig:
            if len(chosen) > 1:
                raise CommandError("--kubeconfig takes one profile: the driver installed in that cluster")
            arg, profile = chosen[0]
            if profile.deploy == "fake-driver" and not args.install_fake_driver:
                log(
                    f"profile {profile.name} describes the project's fake driver: judging it as installed by hand "
                    "(nothing is installed unless --install-fake-driver is given)"
                )
            return on_existing(args, arg, profile)
        not_fake = [p.name for _, p in chosen if p.deploy != "fake-driver"]
        if not_fake:
            raise CommandError(
                f"kind mode deploys the project's fake driver, but profile(s) {', '.join(not_fake)} "
                "describe a preinstalled driver: run them with --kubeconfig against your cluster"
            )
        return on_kind(args, chosen)
    except (
        profiles.ProfileError,
        TopologyError,
        UnknownVersionError,
        ImagesMissingError,
        CommandError,
        ValueError,
    ) as err:
        log(f"error: {err}")
        return 2
    except KeyboardInterrupt:
        log("interrupted: partial summaries written, clusters deleted (unless --keep)")
        return 130


def _boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text.lower() == "true"


def load_profiles(text: str) -> list[tuple[str, profiles.Profile]]:
    """Comma-separated profile names or paths -> (what the suite's pytest gets, profile), each
    loaded (every problem of each named at once); paths are made absolute, as pytest runs elsewhere."""
    args = [str(Path(a).absolute()) if Path(a).suffix else a for a in (t.strip() for t in text.split(",")) if a]
    if not args:
        raise CommandError("--profile names no profile")
    problems, chosen = [], []
    for arg in args:
        try:
            profile = profiles.load(arg)
        except profiles.ProfileError as err:
            problems.append(str(err))
            continue
        problems += [f"{profile.source}: {p}" for p in driver_setup.fake_driver_problems(profile)]
        chosen.append((arg, profile))
    if problems:
        raise profiles.ProfileError("\n".join(problems))
    names = [p.name for _, p in chosen]
    if len(set(names)) != len(names):
        raise CommandError(f"--profile names a profile twice: {', '.join(names)}")
    return chosen


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], prog("conformance.run")))
