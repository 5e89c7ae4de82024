"""`python -m conformance.run`: the whole conformance job.

kind mode (default): per Kubernetes version, build/reuse a kind cluster, load the images,
deploy the fake driver, run the suite (a parallel stage, then a serial one) and report.
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
from pathlib import Path

from clusters import lifecycle
from clusters.images import BuiltImages, ImagesMissingError
from clusters.paths import REPO_ROOT
from clusters.shell import CommandError, run
from clusters.topology import ClusterSpec, TopologyError, parse_gates
from clusters.versions import UnknownVersionError, resolve, supported_versions
from conformance.lib import driver_setup, profile as profiles
from conformance.lib.api import Api
from conformance.report import summary


def log(message: str) -> None:
    print(f"[conformance] {message}", file=sys.stderr, flush=True)


def run_stage(name: str, kubeconfig: Path, profile: str, out: Path, marker: str, workers: int,
              extra: list[str]) -> int:
    args = [sys.executable, "-m", "pytest", str(REPO_ROOT / "conformance" / "suite"), "-p", "no:cacheprovider",
            "-m", marker, f"--kubeconfig={kubeconfig}", f"--profile={profile}",
            f"--results-json={out / 'results.jsonl'}", f"--junitxml={out / f'junit-{name}.xml'}",
            f"--alluredir={out / 'allure'}", f"--diagnostics-dir={out / 'diagnostics'}", "-rfE", *extra]
    if workers > 1:
        args += ["-n", str(workers)]
    log(f"stage {name}: {' '.join(args[3:])}")
    start = time.monotonic()
    code = subprocess.call(args, cwd=REPO_ROOT)
    log(f"stage {name}: exit {code} after {time.monotonic() - start:.0f} s")
    return 0 if code == 5 else code  # 5: the stage selected no test


def run_suite(kubeconfig: Path, profile_arg: str, out: Path, args: argparse.Namespace, context: dict) -> int:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.jsonl").unlink(missing_ok=True)
    # --keep keeps clusters; test namespaces hold devices, so they go unless asked for.
    extra = [*(["-k", args.k] if args.k else []), *(["--keep"] if args.keep_namespaces else [])]
    start = time.monotonic()
    codes = [run_stage("parallel", kubeconfig, profile_arg, out, "not serial", args.parallel, extra)]
    if not args.no_serial:
        codes.append(run_stage("serial", kubeconfig, profile_arg, out, "serial", 1, extra))
    context["wall_clock_s"] = round(time.monotonic() - start)
    counts = summary.write(summary.read_records(out / "results.jsonl"), out, context)
    (out / "context.json").write_text(json.dumps(context, indent=2))
    bundle = out.with_suffix(".tar.gz")
    with tarfile.open(bundle, "w:gz") as tar:
        tar.add(out, arcname=out.name)
    log(f"{context['target']}: {counts} in {context['wall_clock_s']} s; summary {out / 'summary.md'}; bundle {bundle}")
    return max(codes)


def describe(api: Api, profile: profiles.Profile, target: str) -> dict:
    nodes = api.list("v1", "Node")
    return {"target": target, "server": api.server_version(), "profile": profile.name, "driver": profile.driver,
            "kubelets": sorted({n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes}),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def on_kind(args: argparse.Namespace, profile: profiles.Profile) -> int:
    images = BuiltImages.load()
    worst = 0
    for version in [resolve(v) for v in args.k8s_versions.split(",")] if args.k8s_versions else supported_versions():
        cluster = lifecycle.ensure(ClusterSpec(args.topology, version, gates=parse_gates(args.feature_gates)), images)
        try:
            if profile.deploy == "fake-driver":
                log(f"{cluster.name}: deploying the fake driver ({images.driver})")
                driver_setup.deploy_fake_driver(cluster.kubectl, profile, images.driver)
            api = Api(cluster.kubeconfig)
            driver_setup.wait_published(api, profile)
            out = args.out / f"{cluster.name}"
            worst = max(worst, run_suite(cluster.kubeconfig, args.profile, out, args, describe(api, profile, cluster.name)))
        finally:
            if not args.keep:
                lifecycle.delete(cluster.name)
    return worst


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
    return run_suite(args.kubeconfig, args.profile, args.out / "existing", args, describe(api, profile, "existing"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.run", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", default="fake-gpu", help="driver profile name (fixtures/profiles) or path")
    p.add_argument("--kubeconfig", type=Path, help="run against this existing cluster; no kind cluster is made")
    p.add_argument("--k8s-versions", default="", help="kind mode: comma-separated versions (default: all pinned)")
    p.add_argument("--topology", default="dra", help="kind mode: cluster topology (default: dra)")
    p.add_argument("--feature-gates", default="", help="kind mode: gate overrides, e.g. DRAExtendedResource=false")
    p.add_argument("--parallel", type=int, default=2, help="xdist workers for the parallel stage (1 = none)")
    p.add_argument("--no-serial", action="store_true", help="skip the serial stage")
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
