"""`kep5004-conformance COMMAND [ARGS...]`: the installed tool's entry point ([project.scripts]).

Each command is the main() of a module that also runs as `python -m MODULE` from a checkout,
with the same arguments. Here, mistakes a user makes (a missing or bad kubeconfig, an unknown
or invalid profile, images or versions that are not there) end in one error line and exit
status 2, never in a traceback.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from conformance.invocation import invoked_as

PROG = "kep5004-conformance"

# command -> (module whose main(argv) runs it, synopsis, what it does)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": (
        "conformance.run",
        "run [--kubeconfig FILE --profile P]",
        "the conformance job: kind clusters, or your cluster",
    ),
    "byo": ("conformance.byo", "byo DIR [--kubeconfig FILE]", "your workloads, unmodified: what each pod got"),
    "selfcheck": ("conformance.selfcheck", "selfcheck", "is each fake-driver defect caught, by name?"),
    "incluster": ("conformance.incluster", "incluster manifest|fetch ...", "run the suite as a Job in your cluster"),
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
    invoked_as(f"{PROG} {command}")
    return guarded(importlib.import_module(COMMANDS[command][0]).main, rest, f"{PROG} {command}")


def guarded(entry: Callable[[list[str]], int], argv: list[str], prog: str) -> int:
    """A command's main(argv) as its user sees it: a mistake of theirs or an unusable host or
    cluster is one line `PROG: error: ...` and exit 2, Ctrl-C exit 130, a bug its traceback."""
    try:
        return entry(argv)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        message = user_error(err, kubeconfig_arg(argv))
        if message is None:
            raise  # a bug: the traceback is what a report needs
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2


def user_error(err: Exception, kubeconfig: str | None) -> str | None:
    """The error in a line when a user's mistake or an unusable cluster raised it (a profile's
    problems stay one per line); None for anything else, a bug."""
    from kubernetes.client.exceptions import ApiException
    from kubernetes.config import ConfigException
    from urllib3.exceptions import HTTPError
    from yaml import YAMLError

    from clusters.images import ImagesMissingError
    from clusters.shell import CommandError
    from clusters.topology import TopologyError
    from clusters.versions import UnknownVersionError
    from conformance.lib.profile import ProfileError

    where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
    text = " ".join(str(err).split())
    if isinstance(err, ProfileError):
        return str(err)
    if isinstance(err, (CommandError, ImagesMissingError, UnknownVersionError, TopologyError)):
        return text
    if isinstance(err, ConfigException):  # the kubernetes client's words; say which file it read
        return f"bad kubeconfig {where}: {text}"
    if isinstance(err, YAMLError):  # a kubeconfig or a manifest; the text names the file
        return f"not valid YAML: {text}"
    if isinstance(err, (HTTPError, ConnectionError)):
        return f"the cluster in {where} did not answer: {text}"
    if isinstance(err, ApiException):
        try:
            detail = json.loads(err.body or "").get("message", "")
        except (ValueError, AttributeError):
            detail = ""
        return f"the API server of {where} answered {err.status} {err.reason}" + (f": {detail}" if detail else "")
    return None


def kubeconfig_arg(args: list[str]) -> str | None:
    """The value of --kubeconfig FILE / --kubeconfig=FILE among a command's arguments."""
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--kubeconfig" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--kubeconfig="):
            return arg.split("=", 1)[1]
    return None


def kubeconfig_problem(args: list[str]) -> str | None:
    """Why a --kubeconfig given on the command line cannot be read, before anything starts."""
    value = kubeconfig_arg(args)
    if value is None:
        return None
    for part in value.split(os.pathsep):
        path = Path(part)
        if not path.exists():
            return f"--kubeconfig {part}: no such file"
        if not path.is_file():
            return f"--kubeconfig {part}: not a file"
        if not os.access(path, os.R_OK):
            return f"--kubeconfig {part}: not readable"
    return None


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
