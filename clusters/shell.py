"""Running the external tools (docker, kind, kubectl) with errors that say what failed."""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


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


def poll(check: Callable[[], T | None], timeout: float, what: str, interval: float = 3,
         describe: Callable[[], str] | None = None) -> T:
    """Call `check` until it returns something truthy; errors of the tools count as 'not yet'
    (components restart under us), and the last one is reported on timeout."""
    end, last = time.monotonic() + timeout, ""
    while True:
        try:
            result = check()
            if result:
                return result
        except (CommandError, subprocess.TimeoutExpired) as err:
            last = str(err)
        if time.monotonic() > end:
            state = describe() if describe else last
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}" + (f": {state}" if state else ""))
        time.sleep(interval)
