"""Running the external tools (docker, kind, kubectl) with errors that say what failed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence


def progress(message: str) -> None:
    """A progress line of a long cluster step, on stderr so that it shows under pytest -s and in CI logs."""
    print(f"[clusters] {message}", file=sys.stderr, flush=True)


class CommandError(RuntimeError):
    pass


def run(args: Sequence[str], *, input: str | None = None, check: bool = True, timeout: float = 600) -> str:
    if shutil.which(args[0]) is None and "/" not in args[0]:
        raise CommandError(f"{args[0]} is not installed or not on PATH (run `make host` / `make toolchain`)")
    proc = subprocess.run(list(args), input=input, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise CommandError(f"`{' '.join(args)}` exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc.stdout
