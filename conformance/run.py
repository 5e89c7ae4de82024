"""`python -m conformance.run`: the whole conformance job.

kind mode (default): per Kubernetes version, build/reuse a kind cluster (topology `dra`),
deploy the fake driver, run the suite (a parallel stage, then a serial one), then the
mixed-node tests on a `mixed` cluster, the gate cycle on a `gate-cycle` cluster (versions
whose gate can be switched off) and the upgrade to the next pinned minor and back on an
`upgrade` cluster (from the oldest pinned version), and report per version.
Existing-cluster mode (--kubeconfig): the same against a cluster and driver you bring,
creating no kind cluster. Reports go to --out/<target>/: JUnit XML, Allure results,
summary.json/.md per requirement, and a results bundle (.tar.gz).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

from clusters import lifecycle
from clusters.images import BuiltImages, ImagesMissingError
from clusters.paths import REPO_ROOT
from clusters.shell import CommandError, run
from clusters.topology import ClusterSpec, TopologyError, parse_gates
from clusters.versions import KubeVersion, UnknownVersionError, gate_stage, resolve, supported_versions
from conformance.lib import driver_setup, profile as profiles
from conformance.lib.api import Api
from conformance.report import summary


Stage = Callable[[Path, argparse.Namespace, Path], list[int]]


def log(message: str) -> None:
    print(f"[conformance] {message}", file=sys.stderr, flush=True)


SUITE = REPO_ROOT / "conformance" / "suite"
# Suites that need a cluster of their own topology, run serially after the main stages.
MIXED_SUITE = SUITE / "mixed"            # nodes serving the name both ways
GATE_CYCLE_SUITE = SUITE / "gate_cycle"  # switches the gate off and on in place
UPGRADE_SUITE = SUITE / "upgrade"        # changes the Kubernetes version in place


def run_stage(name: str, paths: list[str], kubeconfig: Path, args: argparse.Namespace, out: Path,
              marker: str, workers: int) -> int:
    cmd = [sys.executable, "-m", "pytest", *paths, "-p", "no:cacheprovider", "-m", marker,
           f"--kubeconfig={kubeconfig}", f"--profile={args.profile}",
           f"--results-json={out / 'results.jsonl'}", f"--junitxml={out / f'junit-{name}.xml'}",
           f"--alluredir={out / 'allure'}", f"--diagnostics-dir={out / 'diagnostics'}", "-rfE",
           f"--timeout-scale={args.timeout_scale}",
           "-o", "junit_family=xunit1",  # keeps the observations tests record as JUnit properties
           # --keep keeps clusters; test namespaces hold devices, so they go unless asked for.
           *(["-k", args.k] if args.k else []), *(["--keep"] if args.keep_namespaces else [])]
    if workers > 1:
        cmd += ["-n", str(workers)]
    log(f"stage {name}: {' '.join(cmd[3:])}")
    start = time.monotonic()
    code = subprocess.call(cmd, cwd=REPO_ROOT)
    seconds = round(time.monotonic() - start)
    log(f"stage {name}: exit {code} after {seconds} s")
    with (out / "stages.jsonl").open("a") as f:
        f.write(json.dumps({"stage": name, "exit": code, "seconds": seconds}) + "\n")
    return 0 if code == 5 else code  # 5: the stage selected no test


def main_stages(kubeconfig: Path, args: argparse.Namespace, out: Path) -> list[int]:
    """The suite on a cluster whose nodes serve the name through DRA only."""
    paths = [str(SUITE), *(f"--ignore={d}" for d in (MIXED_SUITE, GATE_CYCLE_SUITE, UPGRADE_SUITE))]
    codes = [run_stage("parallel", paths, kubeconfig, args, out, "not serial", args.parallel)]
    if not args.no_serial:
        codes.append(run_stage("serial", paths, kubeconfig, args, out, "serial", 1))
    return codes


def mixed_stage(kubeconfig: Path, args: argparse.Namespace, out: Path) -> list[int]:
    paths = [str(MIXED_SUITE)]
    if profiles.load(args.profile).deploy != "fake-driver":
        # Migrations relabel nodes so the fake driver's DaemonSets move; a vendor's cannot.
        paths.append(f"--ignore={MIXED_SUITE / 'test_migration.py'}")
    return [run_stage("mixed", paths, kubeconfig, args, out, "serial", 1)]


def serial_suite_stage(name: str, suite: Path) -> Stage:
    """A stage running one suite directory's tests alone (they change the cluster in place)."""
    def stage(kubeconfig: Path, args: argparse.Namespace, out: Path) -> list[int]:
        return [run_stage(name, [str(suite)], kubeconfig, args, out, "serial", 1)]
    return stage


def kind_plan(version: KubeVersion, args: argparse.Namespace, gates: dict[str, bool]) -> list[tuple[str, Stage]]:
    """(topology, stage) pairs to run for one version, each on its own cluster."""
    plan: list[tuple[str, Stage]] = [("dra", main_stages)]
    if not args.no_mixed:
        plan.append(("mixed", mixed_stage))
    if gates:
        log(f"{version.tag}: no gate-cycle or upgrade stage with --feature-gates (they start from the defaults)")
        return plan
    if not args.no_gate_cycle and not gate_stage(version).gate_locked:
        plan.append(("gate-cycle", serial_suite_stage("gate-cycle", GATE_CYCLE_SUITE)))
    pinned = sorted(supported_versions())
    if not args.no_upgrade and version == pinned[0] and len(pinned) > 1:
        plan.append(("upgrade", serial_suite_stage("upgrade", UPGRADE_SUITE)))
    return plan


def finish(out: Path, context: dict, started: float) -> dict[str, int]:
    context["wall_clock_s"] = round(time.monotonic() - started)
    stages = out / "stages.jsonl"
    context["stages"] = [json.loads(line) for line in stages.read_text().splitlines()] if stages.exists() else []
    counts = summary.write(summary.read_records(out / "results.jsonl"), out, context)
    (out / "context.json").write_text(json.dumps(context, indent=2))
    bundle = out.with_suffix(".tar.gz")
    with tarfile.open(bundle, "w:gz") as tar:
        tar.add(out, arcname=out.name)
    log(f"{context['target']}: {counts} in {context['wall_clock_s']} s; summary {out / 'summary.md'}; bundle {bundle}")
    return counts


def fresh(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("results.jsonl", "stages.jsonl"):
        (out / stale).unlink(missing_ok=True)
    return out


def describe(api: Api, profile: profiles.Profile, target: str) -> dict:
    nodes = api.list("v1", "Node")
    return {"target": target, "server": api.server_version(), "profile": profile.name, "driver": profile.driver,
            "kubelets": sorted({n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes}),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def kind_cluster_with_driver(spec: ClusterSpec, images: BuiltImages, profile: profiles.Profile) -> lifecycle.Cluster:
    cluster = lifecycle.ensure(spec, images)
    if profile.deploy == "fake-driver":
        log(f"{cluster.name}: deploying the fake driver ({images.driver})")
        driver_setup.deploy_fake_driver(cluster.kubectl, profile, images.driver)
    driver_setup.wait_published(Api(cluster.kubeconfig), profile)
    return cluster


def on_kind(args: argparse.Namespace, profile: profiles.Profile) -> int:
    images = BuiltImages.load()
    gates = parse_gates(args.feature_gates)
    codes: list[int] = []
    for version in [resolve(v) for v in args.k8s_versions.split(",")] if args.k8s_versions else supported_versions():
        started = time.monotonic()
        out = fresh(args.out / ClusterSpec("dra", version, gates=gates).name)
        context: dict = {}
        for topology, stages in kind_plan(version, args, gates):
            cluster = kind_cluster_with_driver(ClusterSpec(topology, version, gates=gates), images, profile)
            try:
                context = context or describe(Api(cluster.kubeconfig), profile, out.name)
                codes += stages(cluster.kubeconfig, args, out)
            finally:
                if not args.keep:
                    lifecycle.delete(cluster.name)
        finish(out, context, started)
    return max(codes)


def on_existing(args: argparse.Namespace, profile: profiles.Profile) -> int:
    api = Api(args.kubeconfig)
    try:
        server = api.server_version()
    except Exception as err:
        raise CommandError(f"the cluster in {args.kubeconfig} is unreachable: {err}") from None
    log(f"existing cluster {args.kubeconfig}: server {server}")
    if profile.deploy == "fake-driver":
        kubectl = lifecycle.kubectl_cmd(args.kubeconfig)
        driver_setup.deploy_fake_driver(lambda *a, input=None: run([*kubectl, *a], input=input),
                                        profile, BuiltImages.load().driver)
    driver_setup.wait_published(api, profile)
    started, out = time.monotonic(), fresh(args.out / "existing")
    context = describe(api, profile, "existing")
    codes = main_stages(args.kubeconfig, args, out)
    # The mixed tests need nodes that serve the name through a device plugin.
    selector = ",".join(f"{k}={v}" for k, v in profile.device_plugin_node_selector.items())
    if selector and api.list("v1", "Node", label_selector=selector) and not args.no_mixed:
        codes += mixed_stage(args.kubeconfig, args, out)
    finish(out, context, started)
    return max(codes)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", default="fake-gpu", help="driver profile name (fixtures/profiles) or path")
    p.add_argument("--kubeconfig", type=Path, help="run against this existing cluster; no kind cluster is made")
    p.add_argument("--k8s-versions", default="", help="kind mode: comma-separated versions (default: all pinned)")
    p.add_argument("--feature-gates", default="", help="kind mode: gate overrides, e.g. DRAExtendedResource=false")
    p.add_argument("--parallel", type=int, default=2, help="xdist workers for the parallel stage (1 = none)")
    p.add_argument("--no-serial", action="store_true", help="skip the serial stage")
    p.add_argument("--no-mixed", action="store_true", help="skip the mixed device-plugin/DRA stage")
    p.add_argument("--no-gate-cycle", action="store_true", help="skip the feature gate ON->OFF->ON stage")
    p.add_argument("--no-upgrade", action="store_true", help="skip the Kubernetes upgrade/downgrade stage")
    p.add_argument("--timeout-scale", type=float, default=1.0,
                   help="multiply every wait deadline: 2 for a slow cluster, 0.25 to fail fast on a broken one")
    p.add_argument("-k", default="", help="pytest -k expression to select tests")
    p.add_argument("--keep", action="store_true", help="keep the kind clusters for debugging or reuse")
    p.add_argument("--keep-namespaces", action="store_true",
                   help="keep each test's namespace (its pods keep their devices: later tests may starve)")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "reports", help="report directory")
    args = p.parse_args(argv)
    try:
        profile = profiles.load(args.profile)  # a bad profile stops us before anything is created
        return on_existing(args, profile) if args.kubeconfig else on_kind(args, profile)
    except (profiles.ProfileError, TopologyError, UnknownVersionError, ImagesMissingError, CommandError, TimeoutError, RuntimeError) as err:
        log(f"error: {err}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
