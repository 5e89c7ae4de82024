"""`python -m conformance.rigs.selfcheck` (`make selfcheck`): does the suite catch a broken driver, by name?

For each defect mode of the fake driver (fake_driver/defects.py) the driver is deployed with
that defect alone on a kind cluster of the default version, the part of the suite that can
see it runs (existing-cluster mode), and the defect counts as killed only when exactly the
expected requirement IDs are `failed` (or, for setup defects, the expected preflight item)
and nothing is `error` but the IDs that share a test with a failed one (which that failure
keeps from being credited). A run without any defect comes first: it must fail nothing, or every
kill would be meaningless. The kill-rate table is printed and written to
<out>/selfcheck.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from clusters import lifecycle
from clusters.images import BuiltImages
from clusters.paths import REPORTS_DIR
from clusters.topology import ClusterSpec
from clusters.versions import resolve
from conformance.lib import profile as profiles
from conformance.lib.setup import driver_setup
from conformance.report import summary
from conformance.runner import run as runner
from conformance.runner.errors import guarded
from conformance.runner.options import RunOptions
from conformance.runner.stopping import signals_interrupt
from fake_driver.defects import DEFECTS
from kube.api import Api

PROG = "python -m conformance.rigs.selfcheck"  # its name in usage lines (a make target of a checkout)

# The tests each defect is run against: enough to see it, few enough to keep the check short.
HEADLINE = "test_pod_asking_for_two_devices_runs_with_them"
SERVED = f"{HEADLINE} or test_each_container_sees_exactly_its_devices"
UNPREPARE = "test_deleting_the_pod_deletes_its_claim"
DRIVER_UPDATE = "test_rolling_driver_update_keeps_pods_served"
MIXED = "test_deployment_spread_over_a_device_plugin_node_and_a_dra_node"
DOUBLE_BOOKING = "test_pods_on_the_device_plugin_node_at_once_see_devices_of_their_own"


@dataclass(frozen=True)
class Expectation:
    failed: frozenset[str] = frozenset()  # requirement IDs that must be `failed`, and no others
    preflight: str = ""  # or: a preflight item (name prefix) that must fail
    tests: str = SERVED  # pytest -k selection
    topology: str = "dra"


EXPECTED: dict[str, Expectation] = {
    "env-names-other-gpu": Expectation(frozenset({"CTR-1"})),
    # The extra device is also one device too many for its container: KUBELET-2 (counts) sees it too.
    "extra-device": Expectation(frozenset({"CTR-1", "KUBELET-2"})),
    # Only the environment names the extra GPU: the profile's second channel must disagree (CTR-1).
    "env-extra-gpu": Expectation(frozenset({"CTR-1"})),
    "prepare-next-device": Expectation(frozenset({"CTR-1"})),
    "slice-wrong-id": Expectation(frozenset({"CTR-1"})),
    "slice-missing-device": Expectation(preflight="devices"),
    "no-unprepare": Expectation(frozenset({"KUBELET-1"}), tests=UNPREPARE),
    # Only a claim prepared before the driver's pod was replaced shows it.
    "forgets-prepared-on-restart": Expectation(frozenset({"KUBELET-1"}), tests=DRIVER_UPDATE),
    # The kubelet's prepare fails again and again: the driver's (KUBELET-1), not NAME-1's wait.
    "fail-multi-device-prepare": Expectation(frozenset({"KUBELET-1"}), tests=HEADLINE),
    # Each pod alone sees one device: only two at once on the node show the double booking.
    "device-plugin-first-device": Expectation(frozenset({"MIXED-1"}), tests=DOUBLE_BOOKING, topology="mixed"),
    # The runtime cannot resolve what prepare named: the driver's prepare (KUBELET-1), not a timeout.
    "cdi-unknown-id": Expectation(frozenset({"KUBELET-1"}), tests=HEADLINE),
    "device-plugin-extra-device": Expectation(frozenset({"MIXED-1"}), tests=MIXED, topology="mixed"),
    "deviceclass-without-name": Expectation(preflight="deviceclass"),
    # Every pod would wait out its timeout as NAME-1/NAME-2: preflight names the class instead.
    "deviceclass-selects-nothing": Expectation(preflight="deviceclass selects"),
}


BASELINE = "(no defect)"


@dataclass(frozen=True)
class Outcome:
    defect: str
    killed: bool
    failed: list[str]
    errors: list[str]
    preflight_failed: list[str]
    seconds: float

    @property
    def result(self) -> str:
        if self.defect == BASELINE:
            return "clean" if self.killed else "NOT CLEAN"
        return "killed" if self.killed else "SURVIVED"

    def row(self, expected: Expectation) -> str:
        want = ", ".join(sorted(expected.failed)) or (
            f"preflight {expected.preflight}" if expected.preflight else "nothing"
        )
        area, effect = DEFECTS.get(self.defect, ("-", "no defect"))
        return (
            f"| {self.defect} | {area} | {effect} | {want} | {', '.join(self.failed) or '-'} | "
            f"{', '.join(self.preflight_failed) or '-'} | {', '.join(self.errors) or '-'} | "
            f"{self.result} | {self.seconds:.0f} s |"
        )


def defect_profile(base: profiles.Profile, defect: str | None, dest: Path) -> Path:
    """The base profile's file with `fakeDriver.defects` set."""
    raw = yaml.safe_load(base.source.read_text())
    raw.setdefault("fakeDriver", {})["defects"] = [defect] if defect else []
    raw["name"] = f"{base.name}+{defect or 'no-defect'}"
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "profile.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def judge(defect: str | None, expected: Expectation, out: Path, code: int, seconds: float) -> Outcome:
    """Killed: the run failed (exit 1, not a usage error or an interrupt) with exactly the expected
    IDs failed, no error of its own (an error caused by those failures is theirs); the baseline
    (no defect) must pass cleanly."""
    report = summary.read(out / "existing")
    failed = sorted(r["id"] for r in report["requirements"] if r["verdict"] == "failed")
    errors = sorted(
        r["id"]
        for r in report["requirements"]
        if r["verdict"] == "error" and not (r.get("caused_by") and set(r["caused_by"]) <= set(failed))
    )
    preflight_failed = [p["name"] for p in report["context"].get("preflight", []) if p["verdict"] == "failed"]
    if defect is None:
        killed = code == 0 and not failed and not errors and not preflight_failed  # the baseline must be clean
    elif expected.preflight:
        killed = code == 1 and any(expected.preflight in name for name in preflight_failed) and not errors
    else:
        killed = code == 1 and set(failed) == expected.failed and not errors and not preflight_failed
    return Outcome(defect or BASELINE, killed, failed, errors, preflight_failed, seconds)


def run_one(
    kubeconfig: Path,
    base: profiles.Profile,
    defect: str | None,
    expected: Expectation,
    out: Path,
    args: argparse.Namespace,
) -> Outcome:
    profile_path = defect_profile(base, defect, out)
    # A clean slate: the previous defect's DaemonSets, DeviceClasses and ResourceSlices go first.
    driver_setup.remove_fake_driver(
        Api(kubeconfig), lifecycle.kubectl_runner(kubeconfig), base, BuiltImages.load().driver, sweep=False
    )
    started = time.monotonic()
    code = runner.run(
        RunOptions(
            kubeconfig=kubeconfig,
            profile=str(profile_path),
            install_fake_driver=True,
            k=expected.tests,
            out=out,
            timeout_scale=args.timeout_scale,
        )
    ).code
    outcome = judge(defect, expected, out, code, time.monotonic() - started)
    print(
        f"[selfcheck] {outcome.defect}: {outcome.result} (exit {code}, failed {outcome.failed}, "
        f"errors {outcome.errors}, preflight {outcome.preflight_failed})",
        flush=True,
    )
    return outcome


def write_table(outcomes: list[tuple[Expectation, Outcome]], path: Path, version: str) -> str:
    killed = sum(o.killed for e, o in outcomes if o.defect != BASELINE)
    total = sum(1 for _, o in outcomes if o.defect != BASELINE)
    lines = [
        f"# Self-check on Kubernetes {version}: {killed}/{total} defects killed by name",
        "",
        "| defect | area | what breaks | must fail | failed | preflight failed | errors | result | time |",
        "|---|---|---|---|---|---|---|---|---|",
        *(o.row(e) for e, o in outcomes),
    ]
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    return text


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    p = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--profile", default="fake-gpu", help="a deploy: fake-driver profile to break")
    p.add_argument("--k8s-version", default="", help="pinned version (default: the default one)")
    p.add_argument("--defects", default=",".join(EXPECTED), help="comma-separated defects to try")
    p.add_argument("--timeout-scale", type=float, default=1.0)
    p.add_argument("--keep", action="store_true", help="keep the kind clusters")
    p.add_argument("--out", type=Path, default=REPORTS_DIR / "selfcheck")
    args = p.parse_args(argv)
    base = profiles.load(args.profile)
    wanted = [d for d in args.defects.split(",") if d]
    unknown = [d for d in wanted if d not in EXPECTED]
    if base.deploy != "fake-driver" or unknown:
        print(
            f"selfcheck: error: {'unknown defects ' + ', '.join(unknown) if unknown else 'the profile must deploy the fake driver'}",
            file=sys.stderr,
        )
        return 2
    version = resolve(args.k8s_version or None)
    outcomes: list[tuple[Expectation, Outcome]] = []
    for topology in ("dra", "mixed"):
        defects = [d for d in wanted if EXPECTED[d].topology == topology]
        if not defects:
            continue
        # Clusters of its own names: a conformance run may use the same versions beside it.
        spec = ClusterSpec(topology, version, purpose="selfcheck")
        with signals_interrupt(), lifecycle.cluster(spec, keep=args.keep) as cluster:
            try:
                baseline = Expectation(
                    tests=" or ".join(sorted({EXPECTED[d].tests for d in defects})), topology=topology
                )
                outcomes.append(
                    (
                        baseline,
                        run_one(cluster.kubeconfig, base, None, baseline, args.out / f"{topology}-no-defect", args),
                    )
                )
                for defect in defects:
                    outcomes.append(
                        (
                            EXPECTED[defect],
                            run_one(cluster.kubeconfig, base, defect, EXPECTED[defect], args.out / defect, args),
                        )
                    )
            finally:  # a kept cluster is left without a broken driver
                driver_setup.uninstall_fake_driver(
                    lifecycle.kubectl_runner(cluster.kubeconfig), base, BuiltImages.load().driver
                )
    print(write_table(outcomes, args.out / "selfcheck.md", version.tag))
    return 0 if all(o.killed for _, o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], PROG))
