"""The suite's stages: each a pytest process (in a process group of its own) over part of the
suite, against one cluster, for one report."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from clusters.paths import IN_CHECKOUT, REPO_ROOT
from conformance.report import junit
from conformance.report.summary import NOTHING_SELECTED
from conformance.runner.options import RunOptions
from conformance.runner.reports import Report, StageLog, log
from conformance.runner.stopping import Interrupts, stop_process_group

SUITE = REPO_ROOT / "conformance" / "suite"
# Suites that need a cluster of their own topology, run serially after the main stages.
MIXED_SUITE = SUITE / "mixed"  # nodes serving the name both ways
GATE_CYCLE_SUITE = SUITE / "gate_cycle"  # switches the gate off and on in place
FAULTS_SUITE = SUITE / "faults"  # kills and restarts components and nodes in place
UPGRADE_SUITE = SUITE / "upgrade"  # changes the Kubernetes version in place
SKEW = "skew"  # the main stages on the cluster with older kubelets: their stage and tests' names begin so
# The main stages' part of the suite: everything but the suites needing a cluster of their own.
MAIN_PATHS = [str(SUITE), *(f"--ignore={d}" for d in (MIXED_SUITE, FAULTS_SUITE, GATE_CYCLE_SUITE, UPGRADE_SUITE))]
# The suite's pytest settings: in a checkout its pyproject.toml and conftest.py (found by pytest
# in REPO_ROOT); installed, none at all (not a pytest configuration of whatever directory the
# tool was installed under), the cluster plugin coming through its pytest11 entry point.
PYTEST_CONFIG = [] if IN_CHECKOUT else ["-c", os.devnull, f"--rootdir={REPO_ROOT}"]
# What every stage passes itself, whatever the configuration: unknown markers are errors, and a
# test that hangs is stopped after 30 minutes (each test's own waits have deadlines far below).
STAGE_OPTIONS = ["--strict-markers", "--timeout=1800"]


class Stages:
    """Runs stages for one run's options; an interrupt stops a running stage through `interrupts`."""

    def __init__(self, options: RunOptions, interrupts: Interrupts) -> None:
        self.options, self.interrupts = options, interrupts

    def run(
        self,
        name: str,
        paths: list[str],
        kubeconfig: Path,
        report: Report,
        marker: str,
        workers: int,
        where: str = "",
    ) -> int:
        options, out = self.options, report.out
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            *PYTEST_CONFIG,
            *STAGE_OPTIONS,
            *paths,
            "-p",
            "no:cacheprovider",
            "-m",
            marker,
            f"--kubeconfig={kubeconfig}",
            f"--profile={report.profile_arg}",
            f"--results-json={out / 'results.jsonl'}",
            *([f"--results-where={where}"] if where else []),
            f"--junitxml={junit.stage_file(out, name)}",
            f"--alluredir={out / 'allure'}",
            f"--diagnostics-dir={out / 'diagnostics'}",
            "-rfE",
            f"--timeout-scale={round(options.timeout_scale * report.wait_scale, 2)}",
            *([f"--preflight={report.preflight_file}"] if report.preflight_file else []),
            "-o",
            "junit_family=xunit1",  # keeps the checks tests record as JUnit properties
            # --keep keeps clusters; test namespaces hold devices, so they go unless asked for.
            *(["-k", options.k] if options.k else []),
            *(["--keep"] if options.keep_namespaces else []),
            *(["--disruptive"] if options.disruptive else []),
        ]
        if workers > 1:
            cmd += ["-n", str(workers)]
        self.interrupts.check()
        log(f"stage {name} ({report.profile.name}): {' '.join(cmd[3:])}")
        start = time.monotonic()
        # Its own process group, so that an interrupt reaches pytest AND its xdist workers (which
        # would otherwise go on creating namespaces after the sweep), and only through us.
        stage_pytest = subprocess.Popen(cmd, cwd=REPO_ROOT, start_new_session=True)
        with self.interrupts.running(stage_pytest):
            try:
                code = stage_pytest.wait()
                self.interrupts.check()  # stopped by the main thread for an interrupt: not a verdict
            except KeyboardInterrupt:
                stop_process_group(stage_pytest)
                StageLog(out).add(name, time.monotonic() - start, error="interrupted")
                raise
        log(f"stage {name}: exit {code} after {time.monotonic() - start:.0f} s")
        StageLog(out).add(name, time.monotonic() - start, exit=code)
        return 0 if code == NOTHING_SELECTED else code  # a signal gives a negative code

    def main(self, kubeconfig: Path, report: Report, where: str = "") -> list[int]:
        """The suite on a cluster whose nodes serve the name through DRA only; `where` names the
        cluster in the stages' and tests' names when it is not the run's main one."""
        prefix = f"{where}-" if where else ""
        codes = [
            self.run(f"{prefix}parallel", MAIN_PATHS, kubeconfig, report, "not serial", self.options.parallel, where)
        ]
        if not self.options.no_serial:
            codes.append(self.run(f"{prefix}serial", MAIN_PATHS, kubeconfig, report, "serial", 1, where))
        return codes

    def with_older_kubelets(self, kubeconfig: Path, report: Report) -> list[int]:
        """The main stages again, on a cluster whose kubelets are a minor older than its control plane."""
        return self.main(kubeconfig, report, where=SKEW)

    def mixed(self, kubeconfig: Path, report: Report) -> list[int]:
        # Tests needing a profile capability (nodeModes) report "not tested" without it.
        return [self.run("mixed", [str(MIXED_SUITE)], kubeconfig, report, "serial", 1)]

    def one_by_one(self, suites: list[tuple[str, Path]], kubeconfig: Path, report: Report) -> list[int]:
        """Suite directories one after the other, each alone: they change the cluster in place
        (gate, version) and leave it as they found it."""
        return [self.run(name, [str(suite)], kubeconfig, report, "serial", 1) for name, suite in suites]


# A stage of the plan: what it runs on one cluster for one report (Stages.main, Stages.mixed, serial_suites(...)).
Stage = Callable[[Stages, Path, Report], list[int]]


def serial_suites(suites: list[tuple[str, Path]]) -> Stage:
    def stage(stages: Stages, kubeconfig: Path, report: Report) -> list[int]:
        return stages.one_by_one(suites, kubeconfig, report)

    return stage
