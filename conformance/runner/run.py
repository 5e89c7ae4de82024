"""`python -m conformance.runner` (`kep5004-conformance run`): the whole conformance job.

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

import sys
from dataclasses import dataclass, field
from pathlib import Path

from clusters.images import ImagesMissingError
from clusters.shell import CommandError
from clusters.topology import TopologyError
from conformance.lib import profile as profiles
from conformance.runner.existing import on_existing
from conformance.runner.kind_mode import on_kind
from conformance.runner.options import RunOptions, load_profiles, parse
from conformance.runner.reports import log
from conformance.runner.stopping import Interrupts, signals_interrupt
from kube.versions import UnknownVersionError
from kube.waits import set_timeout_scale

PROG = "python -m conformance.runner"  # its name in usage lines from a checkout (the installed tool passes its own)

# Exit codes: every stage passed; a stage failed; the user's input or host could not be used; interrupted.
PASSED, FAILED, BAD_INPUT, INTERRUPTED = 0, 1, 2, 130


@dataclass(frozen=True)
class RunResult:
    code: int  # PASSED, FAILED, BAD_INPUT or INTERRUPTED
    reports: list[Path] = field(default_factory=list)  # report directories written (summary.json in each)


def run(options: RunOptions) -> RunResult:
    """One conformance run. Signals are the caller's: wrap it in signals_interrupt() to have
    SIGTERM stop it as Ctrl-C does (main() does)."""
    interrupts = Interrupts()
    try:
        set_timeout_scale(options.timeout_scale)
        chosen = load_profiles(options.profile or "fake-gpu")  # a bad profile stops us before anything is created
        if options.kubeconfig:
            if len(chosen) > 1:
                raise CommandError("--kubeconfig takes one profile: the driver installed in that cluster")
            arg, profile = chosen[0]
            if profile.deploy == "fake-driver" and not options.install_fake_driver:
                log(
                    f"profile {profile.name} describes the project's fake driver: judging it as installed by hand "
                    "(nothing is installed unless --install-fake-driver is given)"
                )
            passed, reports = on_existing(options, arg, profile, interrupts)
        else:
            not_fake = [p.name for _, p in chosen if p.deploy != "fake-driver"]
            if not_fake:
                raise CommandError(
                    f"kind mode deploys the project's fake driver, but profile(s) {', '.join(not_fake)} "
                    "describe a preinstalled driver: run them with --kubeconfig against your cluster"
                )
            passed, reports = on_kind(options, chosen, interrupts)
        return RunResult(PASSED if passed else FAILED, reports)
    except (
        profiles.ProfileError,
        TopologyError,
        UnknownVersionError,
        ImagesMissingError,
        CommandError,
        ValueError,
    ) as err:
        log(f"error: {err}")
        return RunResult(BAD_INPUT)
    except KeyboardInterrupt:
        log("interrupted: partial summaries written, clusters deleted (unless --keep)")
        return RunResult(INTERRUPTED)


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    options = parse(sys.argv[1:] if argv is None else argv, prog, __doc__)
    with signals_interrupt():
        return run(options).code
