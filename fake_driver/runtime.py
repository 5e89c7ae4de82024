"""Process plumbing shared by both plugins: logging, stop signals, readiness marker."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path


def configure_logging(component: str) -> logging.Logger:
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("FAKE_GPU_LOG_LEVEL", "INFO").upper(),
        format=f"%(asctime)s {component} %(levelname)s %(name)s: %(message)s",
    )
    return logging.getLogger(component)


def stop_event_on_signals() -> threading.Event:
    """An event set by SIGTERM (pod deletion) or SIGINT (Ctrl-C in local runs)."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop


class ReadyFile:
    """A marker file the readinessProbe tests for; it lives in the pod, never on the host."""

    def __init__(self, path: Path):
        self.path = path
        self.clear()  # a marker left by an earlier container of this pod means nothing now

    def set(self, ready: bool) -> None:
        if ready:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.touch()
        else:
            self.clear()

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
