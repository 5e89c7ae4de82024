"""`python -m conformance.rigs.upstream_e2e` (`make upstream-e2e`): Kubernetes' own DRA
extended-resource e2e specs beside our verdicts, on the same clusters.

Per pinned version, on a kind cluster of the suite's `dra` topology named for this rig: our suite's
main stages with the fake driver (existing-cluster mode, which removes the driver, its DeviceClasses
and device plugin again at the end); then the images the upstream specs deploy (built locally,
clusters/images/upstream-e2e.sh) go into the nodes and `e2e.test` of that version runs every spec
labelled [FeatureGate:DRAExtendedResource] (they bring their own DRA test driver and sample device
plugin). Then the same on a `mixed` cluster, with our mixed-node tests and the upstream specs that
deploy a device plugin. Each upstream spec's result is put beside our verdicts for the catalogue IDs
it shows (conformance/catalogue/upstream_e2e.yaml): reports/upstream-e2e/<cluster>/ holds both
runs' raw reports, and the table goes to docs/upstream-e2e.md. Exit 1 when a spec and our verdicts
disagree, or a run could not be made.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from clusters import capacity, lifecycle
from clusters.host import require_engine
from clusters.images import BuiltImages
from clusters.paths import REPO_ROOT, REPORTS_DIR, tools_dir
from clusters.topology import ClusterSpec
from clusters.versions import resolve, supported_versions
from conformance.catalogue.upstream_e2e import FEATURE_LABEL, UpstreamMapping, mapping
from conformance.lib import profile as profiles
from conformance.report import summary
from conformance.report import upstream_e2e as table
from conformance.runner import run as runner
from conformance.runner.errors import guarded
from conformance.runner.options import RunOptions
from conformance.runner.stopping import signals_interrupt
from kube.api import Api
from kube.versions import KubeVersion
from kube.waits import WaitTimeout, wait_for

PROG = "python -m conformance.rigs.upstream_e2e"  # its name in usage lines (a make target of a checkout)
PAGE = REPO_ROOT / "docs" / "upstream-e2e.md"
# Our tests that run on the mixed cluster: those of the mixed stage (their package is `mixed`; no
# main-stage test has the word in its name, so the main stage selects nothing there).
MIXED_TESTS = "mixed"
CONTROL_PLANE_TAINT = "node-role.kubernetes.io/control-plane"


def log(message: str) -> None:
    print(f"[upstream-e2e] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Lane:
    topology: str
    our_tests: str  # pytest -k for our run ("" = the main stages)
    device_plugin_only: bool  # run only the upstream specs that deploy a device plugin


LANES = (Lane("dra", "", False), Lane("mixed", MIXED_TESTS, True))


@dataclass(frozen=True)
class UpstreamImages:
    repo_list: Path
    tags: tuple[str, ...]


def start_building(version: KubeVersion) -> subprocess.Popen[str]:
    """e2e.test and the images its specs deploy (cached once built): long on a cold cache, so it
    runs while the cluster is made and our suite runs."""
    script = REPO_ROOT / "clusters/images/upstream-e2e.sh"
    return subprocess.Popen(
        ["bash", str(script), version.tag], stdout=subprocess.PIPE, text=True, start_new_session=True
    )


def built(building: subprocess.Popen[str]) -> UpstreamImages:
    stdout, _ = building.communicate()
    if building.returncode:
        raise subprocess.CalledProcessError(building.returncode, building.args)
    lines = stdout.split()
    return UpstreamImages(Path(lines[0]), tuple(lines[1:]))


def e2e_binary(version: KubeVersion) -> Path:
    return tools_dir() / f"upstream-e2e-{version.tag}" / "e2e.test"


def focus(specs: UpstreamMapping, device_plugin_only: bool) -> str:
    if not device_plugin_only:
        return re.escape(FEATURE_LABEL)
    return "|".join(re.escape(t) for s in specs.device_plugin_specs().specs for t in s.texts)


def worker_taints(api: Api) -> list[str]:
    """Every taint key a node carries: e2e.test waits for all nodes to be schedulable unless told
    which taints do not block, and our workers must not be excluded by one of ours."""
    keys = {CONTROL_PLANE_TAINT}
    for node in api.list("v1", "Node"):
        keys |= {t["key"] for t in node.get("spec", {}).get("taints") or []}
    return sorted(keys)


def leftovers(api: Api) -> list[str]:
    """What of our driver is still in the cluster: DeviceClasses or ResourceSlices would be picked
    up by the upstream specs' names or pools."""
    found = [f"DeviceClass {o['metadata']['name']}" for o in api.list("resource.k8s.io/v1", "DeviceClass")]
    found += [f"ResourceSlice {o['metadata']['name']}" for o in api.list("resource.k8s.io/v1", "ResourceSlice")]
    return found


def run_upstream(
    cluster: lifecycle.Cluster, version: KubeVersion, images: UpstreamImages, regex: str, out: Path
) -> None:
    """e2e.test against the cluster; its Ginkgo JSON report goes to out/upstream.json."""
    report = out / "upstream.json"
    cmd = [
        str(e2e_binary(version)),
        f"--kubeconfig={cluster.kubeconfig}",
        "--provider=local",
        f"--ginkgo.focus={regex}",
        "--ginkgo.v",
        "--ginkgo.no-color",
        "--ginkgo.timeout=2h",
        f"--ginkgo.json-report={report}",
        f"--ginkgo.junit-report={out / 'junit-upstream.xml'}",
        f"--non-blocking-taints={','.join(worker_taints(Api(cluster.kubeconfig)))}",
    ]
    log(" ".join(cmd))
    env = os.environ | {"KUBE_TEST_REPO_LIST": str(images.repo_list)}
    with (out / "e2e.log").open("w") as output:
        code = subprocess.run(cmd, env=env, stdout=output, stderr=subprocess.STDOUT).returncode
    log(f"e2e.test exited {code} (log: {out / 'e2e.log'})")


def one_cluster(version: KubeVersion, lane: Lane, specs: UpstreamMapping, args: argparse.Namespace) -> table.Comparison:
    spec = ClusterSpec(lane.topology, version, purpose="upstream")
    out = args.out / spec.name
    out.mkdir(parents=True, exist_ok=True)
    if not args.tables_only:
        building = start_building(version)
        try:
            on_cluster(spec, building, lane, specs, args, out)
        finally:
            if building.poll() is None:  # the compiler too, not only the script
                os.killpg(building.pid, signal.SIGTERM)
    comparison = compared(spec, lane, specs, out)
    (out / "comparison.json").write_text(json.dumps(table.to_json(comparison), indent=2) + "\n")
    return comparison


def compared(spec: ClusterSpec, lane: Lane, specs: UpstreamMapping, out: Path) -> table.Comparison:
    """Both runs' reports in `out` side by side."""
    report, ours = out / "upstream.json", out / "ours" / "existing"
    if not (ours / summary.FILE).exists():
        raise RuntimeError(f"{spec.name}: our run left no summary in {ours}")
    results = table.read_ginkgo(report) if report.exists() else []
    our_summary = summary.read(ours)
    asked = specs.device_plugin_specs().specs if lane.device_plugin_only else None
    started = our_summary["context"].get("started", "")[:10]  # each table may come from a run of its own day
    comparison = table.compare(
        f"{spec.version.tag}, cluster `{spec.topology}`" + (f" (run of {started})" if started else ""),
        results,
        summary.verdict_of_each(our_summary),
        specs,
        asked,
    )
    if not report.exists():
        comparison.notes.append(f"e2e.test left no report (see {out / 'e2e.log'})")
    failed = [p for p in our_summary["context"].get("preflight", []) if p["verdict"] == "failed"]
    if failed:  # every test of ours then fails with it: the rows say nothing about the cluster
        comparison.notes.append(
            "our preflight failed, so each of our tests failed with it: "
            + "; ".join(f"{p['name']}: {p['detail']}" for p in failed[:3])
            + (f" (and {len(failed) - 3} more)" if len(failed) > 3 else "")
        )
    return comparison


def on_cluster(
    spec: ClusterSpec,
    building: subprocess.Popen[str],
    lane: Lane,
    specs: UpstreamMapping,
    args: argparse.Namespace,
    out: Path,
) -> None:
    """Our run, then e2e.test, on the cluster of `spec`; their reports go to `out`."""
    version = spec.version
    with lifecycle.cluster(spec, BuiltImages.load(), keep=args.keep) as cluster:
        started = time.monotonic()
        ours = runner.run(
            RunOptions(
                kubeconfig=cluster.kubeconfig,
                profile=args.profile,
                install_fake_driver=True,
                disruptive=True,  # as on any kind cluster of the suite's (kind mode forces it)
                k=lane.our_tests,
                out=out / "ours",
                # as kind mode does: waits stretched by how loaded the host was when the cluster was made
                timeout_scale=capacity.wait_scale(cluster.created_s),
            )
        )
        log(f"{spec.name}: our run exited {ours.code} after {time.monotonic() - started:.0f} s")
        if ours.code in (runner.BAD_INPUT, runner.INTERRUPTED):
            raise SystemExit(ours.code)
        api = Api(cluster.kubeconfig)
        try:
            wait_for(lambda: not leftovers(api), timeout=120, what="our driver's DeviceClasses and ResourceSlices gone")
        except WaitTimeout:
            raise RuntimeError(f"{spec.name}: our driver left {', '.join(leftovers(api))}") from None
        images = built(building)
        cluster.load_images(*images.tags)
        run_upstream(cluster, version, images, focus(specs, lane.device_plugin_only), out)


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--k8s-versions", default="", help="pinned versions, separated by commas or spaces (default: all pinned)"
    )
    p.add_argument(
        "--topologies",
        default=",".join(lane.topology for lane in LANES),
        help="clusters to run on (default: %(default)s)",
    )
    p.add_argument("--profile", default="fake-gpu", help="the fake driver's profile for our run (default: %(default)s)")
    p.add_argument("--keep", action="store_true", help="keep the kind clusters")
    p.add_argument(
        "--tables-only",
        action="store_true",
        help="make no cluster: the table again from the reports an earlier run left in --out",
    )
    p.add_argument("--out", type=Path, default=REPORTS_DIR / "upstream-e2e")
    args = p.parse_args(argv)
    versions = [resolve(v) for v in re.split(r"[\s,]+", args.k8s_versions) if v] or supported_versions()
    lanes = [lane for lane in LANES if lane.topology in args.topologies.split(",")]
    if not lanes:
        p.error(f"--topologies names none of {', '.join(lane.topology for lane in LANES)}")
    profiles.load(args.profile)  # what the user typed first: a mistake stops us before anything is made
    if not args.tables_only:
        require_engine()
    specs = mapping()
    made: dict[tuple[str, str], table.Comparison] = {}
    failed_runs: list[str] = []
    with signals_interrupt():
        for version in versions:
            for lane in lanes:
                try:
                    made[version.tag, lane.topology] = one_cluster(version, lane, specs, args)
                except (RuntimeError, subprocess.CalledProcessError, OSError) as err:
                    failed_runs.append(f"{version.tag} {lane.topology}: {err}")
                    log(f"{version.tag} {lane.topology}: {err}")
    args.out.mkdir(parents=True, exist_ok=True)
    not_run = "".join(f"\nNot run: {f}\n" for f in failed_runs)
    generated = table.markdown(list(made.values()), specs) + not_run
    (args.out / "upstream-e2e.md").write_text(generated)
    print(generated)
    table.write_into(PAGE, table.markdown(every_comparison(args, specs, made), specs) + not_run)
    return 1 if failed_runs or any(c.disagreements for c in made.values()) else 0


def every_comparison(
    args: argparse.Namespace, specs: UpstreamMapping, made: dict[tuple[str, str], table.Comparison]
) -> list[table.Comparison]:
    """This run's comparisons and those of earlier runs whose reports are in --out, newest version
    first: the page keeps every cluster's table when a run covers only some of them."""
    every = []
    for version in sorted(supported_versions(), reverse=True):
        for lane in LANES:
            spec = ClusterSpec(lane.topology, version, purpose="upstream")
            out = args.out / spec.name
            if (version.tag, lane.topology) in made:
                every.append(made[version.tag, lane.topology])
            elif (out / "ours" / "existing" / summary.FILE).exists():
                every.append(compared(spec, lane, specs, out))
    return every


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], PROG))
