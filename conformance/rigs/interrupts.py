"""`python -m conformance.rigs.interrupts` (`make interrupts`): does an interrupted run clean up?

Starts the conformance job (default version, first profile, main stages) again and again and
stops it at a different point each time: while its kind cluster is being created, while the
driver is deployed, and while tests run; once with SIGINT to its whole process group (Ctrl-C in a
terminal) and once with SIGTERM to the runner alone (`kill`, a cancelled CI job); then in a test
again with the mixed cluster's lane at work alongside (a thread: the signal reaches only the
main one), and with two versions at once. Each trial
passes only if the run exits non-zero, leaves no new kind node container (hence no cluster,
namespace or DeviceClass of it) behind, and writes a summary whose stage list says where it
was interrupted.

The build comes before any report: `make images` in a copy of the checkout whose driver differs
by a comment (so its image is really rebuilt) is stopped while the image is built, by SIGINT
and by SIGTERM to its process group (a terminal, a CI runner cancelling the job). It passes if
make exits non-zero, no container or build directory is left, and the next build succeeds.
The table is printed and written to <out>/interrupts.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clusters import lifecycle
from clusters.images import BuiltImages, ImagesMissingError
from clusters.nodes import KIND_CLUSTER_LABEL
from clusters.paths import REPO_ROOT, REPORTS_DIR, cache_root
from clusters.shell import run
from clusters.topology import ClusterSpec
from clusters.versions import default_version, resolve, supported_versions
from conformance.report import summary
from conformance.runner.errors import guarded
from conformance.runner.options import RunOptions

PROG = "python -m conformance.rigs.interrupts"  # its name in usage lines (a make target of a checkout)

# point -> (a line of the runner's log that shows the point was reached, seconds to wait after it)
POINTS: dict[str, tuple[str, float]] = {
    "creating a cluster": ("creating (dra", 20),
    "deploying the driver": ("deploying the fake driver", 2),
    "in a test": ("stage parallel", 30),
}
# make conformance runs versions at once (--jobs): each child must clean up when its parent is stopped.
AT_ONCE = "in a test, two versions at once"
# and a version's clusters at once, in lanes (threads, which signals never reach): the mixed lane too.
LANES = "in a test, the mixed lane alongside"
# signal -> who gets it: a terminal's Ctrl-C reaches the whole foreground process group, `kill` one process
SIGNALS = {"SIGINT to the group": (signal.SIGINT, True), "SIGTERM to the runner": (signal.SIGTERM, False)}
BUILD_POINT = "building an image"
BUILD_SIGNALS = {"SIGINT to the group": signal.SIGINT, "SIGTERM to the group": signal.SIGTERM}


@dataclass(frozen=True)
class Trial:
    point: str
    how: str
    exit: int | None
    leftovers: list[str]
    interrupted_stage: str | None  # what the summary marks; for the build, whether the next build passed
    seconds: float

    @property
    def passed(self) -> bool:
        return self.exit not in (None, 0) and not self.leftovers and self.interrupted_stage is not None

    def row(self) -> str:
        return (
            f"| {self.point} | {self.how} | {self.exit} | {', '.join(self.leftovers) or 'none'} | "
            f"{self.interrupted_stage or '-'} | {'passed' if self.passed else 'FAILED'} | {self.seconds:.0f} s |"
        )


def kind_containers() -> list[str]:
    return run(["docker", "ps", "-a", "--filter", f"label={KIND_CLUSTER_LABEL}", "--format", "{{.Names}}"]).split()


def all_containers() -> set[str]:
    return set(run(["docker", "ps", "-a", "--format", "{{.ID}} {{.Image}}"]).splitlines())


def build_dirs() -> set[Path]:
    """The image builders' temporary build contexts."""
    work = cache_root() / "work"
    return set(work.iterdir()) if work.is_dir() else set()


def interrupted_stage(out: Path, lanes: int = 1) -> str | None:
    """The stages each summary of the run marks as interrupted; None when there is no summary or
    one of them marks fewer than `lanes` (a run stopped with several lanes at work must mark the
    stage of each)."""
    marks = []
    for report in sorted(p.parent for p in out.glob(f"*/{summary.FILE}")):
        stages = summary.read(report)["context"].get("stages", [])
        cut = [s["stage"] for s in stages if s.get("error") == "interrupted" or (s.get("exit") or 0) < 0]
        if len(cut) < lanes:
            return None
        marks.append(f"{report.name}: {', '.join(cut)}")
    return "; ".join(marks) or None


def trial(point: str, how: str, out: Path, versions: list[str], lanes: bool = False) -> Trial:
    marker, delay = POINTS[point]
    sig, group = SIGNALS[how]
    out.mkdir(parents=True, exist_ok=True)
    log = (out / "run.log").open("w")
    options = RunOptions(
        k8s_versions=tuple(versions),
        jobs=len(versions),
        profile="fake-gpu",
        no_mixed=not lanes,
        no_faults=True,
        no_gate_cycle=True,
        no_upgrade=True,
        out=out,
    )
    # A process of its own: the signal goes to it (or its group) as a terminal or CI runner sends it.
    cmd = [sys.executable, "-u", "-m", "conformance.runner", *options.to_argv()]
    start, before = time.monotonic(), set(kind_containers())  # a soak may run next to us
    runner = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    reached = _wait_for_line(out / "run.log", marker, runner, timeout=900)
    if reached:
        time.sleep(delay)
        (os.killpg if group else os.kill)(runner.pid, sig)
    try:
        code = runner.wait(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(runner.pid, signal.SIGKILL)
        code = None
    print(f"[interrupts] {point}, {how}: exit {code} after {time.monotonic() - start:.0f} s", file=sys.stderr)
    return Trial(
        LANES if lanes else point if len(versions) == 1 else AT_ONCE,
        how,
        code if reached else None,
        sorted(set(kind_containers()) - before),
        interrupted_stage(out, lanes=2 if lanes else 1),
        time.monotonic() - start,
    )


def build_trial(how: str, out: Path, version: str) -> Trial:
    sig = BUILD_SIGNALS[how]
    checkout = out / "checkout"
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(checkout, ignore_errors=True)
    shutil.copytree(REPO_ROOT, checkout, ignore=shutil.ignore_patterns(".git", "reports", "__pycache__"))
    with (checkout / "fake_driver" / "__init__.py").open("a") as f:
        f.write(f"# interrupt trial {time.time()}: a different driver image\n")
    containers, dirs = all_containers(), build_dirs()
    cmd = ["make", "--no-print-directory", "images", f"VERSIONS={version}"]
    start = time.monotonic()
    with (out / "build.log").open("w") as log:
        # SIGINT as a terminal gives it (we may run from a background shell, which ignores it).
        make = subprocess.Popen(
            cmd,
            cwd=checkout,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(checkout)},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    # The driver's build context appears once its image is being assembled.
    reached = _wait_for(lambda: any(d.name.startswith("driver.") for d in build_dirs() - dirs), make, timeout=600)
    if reached:
        time.sleep(1)
        os.killpg(make.pid, sig)
    try:
        code = make.wait(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(make.pid, signal.SIGKILL)
        code = None
    time.sleep(2)  # what the signal stopped has gone by now, or it was left behind
    leftovers = [f"container {c}" for c in sorted(all_containers() - containers)] + [
        f"build dir {d.name}" for d in sorted(build_dirs() - dirs)
    ]
    print(
        f"[interrupts] {BUILD_POINT}, {how}: exit {code} after {time.monotonic() - start:.0f} s; building again",
        file=sys.stderr,
    )
    with (out / "rebuild.log").open("w") as log:
        rebuilt = (
            subprocess.run(
                cmd, cwd=checkout, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(checkout)}
            ).returncode
            == 0
        )
    shutil.rmtree(checkout, ignore_errors=True)
    return Trial(
        BUILD_POINT,
        how,
        code if reached else None,
        leftovers,
        "next build passed" if rebuilt else None,
        time.monotonic() - start,
    )


def second_built_version(version: str) -> str | None:
    """Another pinned version whose node image is built, for the versions-at-once trials."""
    images = BuiltImages.load()
    for other in supported_versions():
        if other.tag != version:
            try:
                images.node(other)
                return other.tag
            except ImagesMissingError:
                continue
    return None


def _wait_for_line(path: Path, marker: str, process: subprocess.Popen, timeout: float) -> bool:
    return _wait_for(lambda: marker in path.read_text(errors="replace"), process, timeout)


def _wait_for(reached: Callable[[], bool], process: subprocess.Popen, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if reached():
            return True
        time.sleep(0.2)
    return False


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    p = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--k8s-version", default=default_version().tag)
    p.add_argument("--out", type=Path, default=REPORTS_DIR / "interrupts")
    args = p.parse_args(argv)
    second = second_built_version(args.k8s_version)
    # The runs would reuse and then delete a cluster of the names they use: refuse to touch those.
    ours = [ClusterSpec("dra", resolve(v)).name for v in (args.k8s_version, second) if v]
    clash = sorted(set(lifecycle.existing_clusters()) & set(ours))
    if clash:
        print(
            f"{prog}: error: the trials make and delete cluster(s) {', '.join(clash)}, "
            "which exist already: delete them first (python -m clusters down NAME)",
            file=sys.stderr,
        )
        return 2
    trials = [build_trial(how, args.out / f"build-{i}", args.k8s_version) for i, how in enumerate(BUILD_SIGNALS)]
    trials += [
        trial(point, how, args.out / f"{i}", [args.k8s_version])
        for i, (point, how) in enumerate((pt, h) for pt in POINTS for h in SIGNALS)
    ]
    trials += [
        trial("in a test", how, args.out / f"lanes-{i}", [args.k8s_version], lanes=True)
        for i, how in enumerate(SIGNALS)
    ]
    if second:
        trials += [
            trial("in a test", how, args.out / f"at-once-{i}", [args.k8s_version, second])
            for i, how in enumerate(SIGNALS)
        ]
    else:
        print(f"[interrupts] {AT_ONCE}: not run, no second pinned version is built (make images)", file=sys.stderr)
    table = "\n".join(
        [
            "| stopped while | how | exit | left behind | summary marks (build: next build) | result | time |",
            "|---|---|---|---|---|---|---|",
            *(t.row() for t in trials),
        ]
    )
    (args.out / "interrupts.md").write_text(table + "\n")
    print(table)
    return 0 if all(t.passed for t in trials) else 1


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], PROG))
