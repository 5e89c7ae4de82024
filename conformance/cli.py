"""`kep5004-conformance COMMAND [ARGS...]`: the installed tool's entry point ([project.scripts]).

Each command is the main() of a module that also runs as `python -m MODULE` from a checkout,
with the same arguments. Here, mistakes a user makes (a missing or bad kubeconfig, an unknown
or invalid profile, images or versions that are not there) end in one error line and exit
status 2, never in a traceback.
"""

from __future__ import annotations

import importlib
import sys

from conformance.runner.errors import guarded, kubeconfig_problem

PROG = "kep5004-conformance"

# command -> (module whose main(argv) runs it, synopsis, what it does)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": (
        "conformance.runner.run",
        "run [--kubeconfig FILE --profile P]",
        "the conformance job: kind clusters, or your cluster",
    ),
    "byo": ("conformance.runner.byo", "byo DIR [--kubeconfig FILE]", "your workloads, unmodified: what each pod got"),
    "incluster": (
        "conformance.runner.incluster",
        "incluster manifest|fetch ...",
        "run the suite as a Job in your cluster",
    ),
    "coverage": ("conformance.report.coverage", "coverage SUMMARY.json...", "requirement x version table of runs"),
    "merge": (
        "conformance.report.merge",
        "merge OUT BUNDLE.tar.gz...",
        "one coverage table and JUnit from runs made on separate machines",
    ),
    "submission": (
        "conformance.report.submission",
        "submission REPORT_DIR DEST",
        "a certification submission (PRODUCT.yaml, README, e2e.log, junit_01.xml)",
    ),
    "catalogue": ("conformance.catalogue.__main__", "catalogue check|markdown|...", "the requirement catalogue"),
}

USAGE = (
    f"""usage: {PROG} COMMAND [ARGS...]

Conformance suite for KEP-5004 (extended resources served by a DRA driver).

commands:
"""
    + "".join(f"  {synopsis:<36} {what}\n" for _, synopsis, what in COMMANDS.values())
    + f"""
`{PROG} COMMAND --help` lists a command's options. Reports go to ./reports (a checkout's own reports/ when run
from one) unless --out says otherwise; build caches and cluster state to $KEP5004_CACHE
(default ~/.cache/kep5004-conformance).
"""
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        sys.stderr.write(USAGE)
        return 2
    command, rest = args[0], args[1:]
    if command in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    if command == "--version":
        print(f"{PROG} {_version()}")
        return 0
    if command not in COMMANDS:
        return _error(None, f"unknown command {command!r} (choose from {', '.join(COMMANDS)}; see {PROG} --help)")
    problem = kubeconfig_problem(rest)
    if problem:
        return _error(command, problem)
    if command == "coverage" and rest and rest[0] in ("-h", "--help"):  # its main takes file names only
        print(f"usage: {PROG} coverage SUMMARY.json...\n\n{importlib.import_module(COMMANDS[command][0]).__doc__}")
        return 0
    name = f"{PROG} {command}"
    entry = importlib.import_module(COMMANDS[command][0]).main
    return guarded(lambda argv: entry(argv, prog=name), rest, name)


def _error(command: str | None, message: str) -> int:
    print(f"{PROG}{' ' + command if command else ''}: error: {message}", file=sys.stderr)
    return 2


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PROG)
    except PackageNotFoundError:
        return "(not installed: running from a checkout)"


if __name__ == "__main__":
    sys.exit(main())
