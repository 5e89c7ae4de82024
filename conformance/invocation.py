"""How the user invoked a command, for its usage lines: `kep5004-conformance run` through the
installed tool, else `python -m conformance.run` as from a checkout."""
from __future__ import annotations

_command: str | None = None


def invoked_as(command: str) -> None:
    """Called by the installed tool before it hands over to a command's main()."""
    global _command
    _command = command


def prog(module: str) -> str:
    return _command or f"python -m {module}"
