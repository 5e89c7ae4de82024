"""How the user invoked a command, for its usage lines: `kep5004-conformance run` through the
installed tool, else `python -m conformance.run` as from a checkout."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

_command: str | None = None


def invoked_as(command: str) -> None:
    """Called by the installed tool before it hands over to a command's main()."""
    global _command
    _command = command


def prog(module: str) -> str:
    return _command or f"python -m {module}"


def wrote(name: str, write: Callable[[], list[Path]], errors: tuple[type[Exception], ...]) -> int:
    """A command that writes files: their paths on stdout (exit 0), or one error line (exit 2)."""
    try:
        written = write()
    except errors as err:
        print(f"{name}: error: {err}", file=sys.stderr)
        return 2
    print("\n".join(str(w) for w in written))
    return 0
