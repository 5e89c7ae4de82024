"""What the report commands (merge, submission) share on the command line."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def wrote(name: str, write: Callable[[], list[Path]], errors: tuple[type[Exception], ...]) -> int:
    """A command that writes files: their paths on stdout (exit 0), or one error line (exit 2)."""
    try:
        written = write()
    except errors as err:
        print(f"{name}: error: {err}", file=sys.stderr)
        return 2
    print("\n".join(str(w) for w in written))
    return 0
