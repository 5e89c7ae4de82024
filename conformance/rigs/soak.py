"""`python -m conformance.rigs.soak` (`make soak N=10`): how often does each test fail on a healthy cluster?

Makes one kind cluster of the default version (topology `dra`, named for the soak so that it
can run next to the conformance job or the interrupt trials), then runs the main stages of the
suite N times against it (the runner's existing-cluster mode, the fake driver installed each
time), and writes a per-test table: passes, failures and the flake rate (a test that both passed
and failed is flaky; one that always failed is broken, not flaky). A flake is a defect to find,
so the table lists where each failure's report is.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from clusters import lifecycle
from clusters.host import require_engine
from clusters.images import BuiltImages
from clusters.paths import REPORTS_DIR
from clusters.topology import ClusterSpec
from clusters.versions import resolve
from conformance.lib.profile import load
from conformance.runner import run as runner
from conformance.runner.errors import guarded
from conformance.runner.options import RunOptions
from conformance.runner.stopping import signals_interrupt

PROG = "python -m conformance.rigs.soak"  # its name in usage lines (a make target of a checkout)


def outcomes(out: Path, runs: int) -> dict[str, list[str]]:
    """test -> outcome of each run ("missing" where a run did not report it)."""
    per_run = []
    for i in range(runs):
        results = out / f"run-{i + 1}" / "existing" / "results.jsonl"
        lines = results.read_text().splitlines() if results.exists() else []
        per_run.append({r["test"]: r["outcome"] for r in map(json.loads, lines)})
    tests = sorted({t for run in per_run for t in run})
    return {t: [run.get(t, "missing") for run in per_run] for t in tests}


def table(results: dict[str, list[str]]) -> tuple[str, int]:
    """The markdown table of every test that failed at least once, and how many did."""
    rows, flaky = [], 0
    for test, seen in results.items():
        failed = [i + 1 for i, o in enumerate(seen) if o not in ("passed", "skipped")]
        if not failed:
            continue
        kind = "broken" if len(failed) == len(seen) else "FLAKY"
        flaky += kind == "FLAKY"
        rows.append(
            f"| {test} | {len(seen) - len(failed)} | {len(failed)} (runs {', '.join(map(str, failed))}) | {kind} |"
        )
    runs = len(next(iter(results.values()), []))
    head = [
        f"{len(results)} tests x {runs} runs: {flaky} flaky, {len(rows) - flaky} always failing, "
        f"{len(results) - len(rows)} never failed.",
        "",
        "| test | passed | failed | |",
        "|---|---|---|---|",
    ]
    return "\n".join(head + (rows or ["| (none) | | | |"])) + "\n", len(rows)


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", "--runs", type=int, default=10)
    p.add_argument("--k8s-version", default=None)
    p.add_argument("--profile", default="fake-gpu")
    p.add_argument("--keep", action="store_true", help="keep the kind cluster")
    p.add_argument("--out", type=Path, default=REPORTS_DIR / "soak")
    args = p.parse_args(argv)
    if args.runs < 2:
        p.error("--runs must be at least 2 (one run cannot show a flake)")
    version = resolve(args.k8s_version)  # what the user typed first: a mistake stops us before anything is made
    load(args.profile)
    require_engine()
    started, codes = time.monotonic(), defaultdict(int)
    spec = ClusterSpec("dra", version, purpose="soak")
    with signals_interrupt(), lifecycle.cluster(spec, BuiltImages.load(), keep=args.keep) as cluster:
        for i in range(args.runs):
            print(f"[soak] run {i + 1}/{args.runs}", file=sys.stderr, flush=True)
            code = runner.run(
                RunOptions(
                    kubeconfig=cluster.kubeconfig,
                    profile=args.profile,
                    install_fake_driver=True,
                    out=args.out / f"run-{i + 1}",
                )
            ).code
            codes[code] += 1
            if code in (runner.BAD_INPUT, runner.INTERRUPTED):  # nothing more to learn
                return code
    text, failing = table(outcomes(args.out, args.runs))
    text += f"\nExit codes: {dict(codes)}; {time.monotonic() - started:.0f} s in all.\n"
    (args.out / "soak.md").write_text(text)
    print(text)
    return 0 if not failing else 1


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], PROG))
