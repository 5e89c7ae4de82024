"""Mistakes of a command's user as one line: `PROG: error: ...` and exit status 2, never a
traceback (a bug keeps its traceback). Every command's entry goes through `guarded`."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path


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
    from conformance.lib.profile import ProfileError
    from kube.versions import UnknownVersionError

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
