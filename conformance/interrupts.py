"""`python -m conformance.interrupts` (`make interrupts`): does an interrupted run clean up?

Starts the conformance job (default version, first profile, main stages) again and again and
stops it at a different point each time: while its kind cluster is being created, while the
driver is deployed, and while tests run; once with SIGINT to its whole process group (Ctrl-C in a
terminal) and once with SIGTERM to the runner alone (`kill`, a cancelled CI job). Each trial
passes only if the run exits non-zero, leaves no kind node container (hence no cluster,
namespace or DeviceClass of it) behind, and writes a summary whose stage list says where it
was interrupted. The table is printed and written to <out>/interrupts.md.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from clusters.nodes import KIND_CLUSTER_LABEL
from clusters.paths import REPORTS_DIR, REPO_ROOT
from clusters.shell import run
from clusters.versions import default_version
from conformance.cli import guarded
from conformance.invocation import prog

# point -> (a line of the runner's log that shows the point was reached, seconds to wait after it)
POINTS: dict[str, tuple[str, float]] = {
    "creating a cluster": ("creating (dra", 20),
    "deploying the driver": ("deploying the fake driver", 2),
    "in a test": ("stage parallel", 30),
}
# signal -> who gets it: a terminal's Ctrl-C reaches the whole foreground process group, `kill` one process
SIGNALS = {"SIGINT to the group": (signal.SIGINT, True), "SIGTERM to the runner": (signal.SIGTERM, False)}


@dataclass(frozen=True)
class Trial:
    point: str
    how: str
    exit: int | None
    leftovers: list[str]
    interrupted_stage: str | None
    seconds: float

    @property
    def passed(self) -> bool:
        return self.exit not in (None, 0) and not self.leftovers and self.interrupted_stage is not None

    def row(self) -> str:
        return (f"| {self.point} | {self.how} | {self.exit} | {', '.join(self.leftovers) or 'none'} | "
                f"{self.interrupted_stage or '-'} | {'passed' if self.passed else 'FAILED'} | {self.seconds:.0f} s |")


def kind_containers() -> list[str]:
    return run(["docker", "ps", "-a", "--filter", f"label={KIND_CLUSTER_LABEL}", "--format", "{{.Names}}"]).split()


def interrupted_stage(out: Path) -> str | None:
    """The stage the summary marks as interrupted (any report directory of the run)."""
    for summary in out.glob("*/summary.json"):
        for stage in json.loads(summary.read_text())["context"].get("stages", []):
            if stage.get("error") == "interrupted" or (stage.get("exit") or 0) < 0:
                return stage["stage"]
    return None


def trial(point: str, how: str, out: Path, version: str) -> Trial:
    marker, delay = POINTS[point]
    sig, group = SIGNALS[how]
    out.mkdir(parents=True, exist_ok=True)
    log = (out / "run.log").open("w")
    cmd = [sys.executable, "-u", "-m", "conformance.run", "--k8s-versions", version, "--profile", "fake-gpu",
           "--no-mixed", "--no-faults", "--no-gate-cycle", "--no-upgrade", "--out", str(out)]
    start = time.monotonic()
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
    return Trial(point, how, code if reached else None, kind_containers(), interrupted_stage(out),
                 time.monotonic() - start)


def _wait_for_line(path: Path, marker: str, process: subprocess.Popen, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if marker in path.read_text(errors="replace"):
            return True
        time.sleep(0.5)
    return False


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog("conformance.interrupts"), description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--k8s-version", default=default_version().tag)
    p.add_argument("--out", type=Path, default=REPORTS_DIR / "interrupts")
    args = p.parse_args(argv)
    if kind_containers():
        print(f"{prog('conformance.interrupts')}: error: kind clusters exist already ({', '.join(kind_containers())}): "
              "their containers would count as leftovers; delete them first (python -m clusters down --all)",
              file=sys.stderr)
        return 2
    trials = [trial(point, how, args.out / f"{i}", args.k8s_version)
              for i, (point, how) in enumerate((pt, h) for pt in POINTS for h in SIGNALS)]
    table = "\n".join(["| stopped while | how | exit | kind containers left | summary marks | result | time |",
                       "|---|---|---|---|---|---|---|", *(t.row() for t in trials)])
    (args.out / "interrupts.md").write_text(table + "\n")
    print(table)
    return 0 if all(t.passed for t in trials) else 1


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], prog("conformance.interrupts")))
