"""How a run stops on Ctrl-C or SIGTERM: every lane before its next step, every running stage at
once (its whole process group), and only then the run's own cleanup (summaries, clusters)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Interrupts:
    """What the lanes of one run share to stop together. Signals reach only the main thread: a
    lane in another thread learns of an interrupt here, before its next step, and its running
    stage is stopped through the processes held here."""

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._processes: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def check(self) -> None:
        """Raise KeyboardInterrupt once the run is stopping."""
        if self._stopping.is_set():
            raise KeyboardInterrupt("another lane was interrupted")

    def wait(self, event: threading.Event) -> None:
        """Until `event` is set; an interrupt meanwhile stops the waiting lane."""
        while not event.wait(1):
            self.check()
        self.check()

    @contextmanager
    def running(self, process: subprocess.Popen[bytes]) -> Iterator[None]:
        """`process` (a stage, in a process group of its own) is stopped by stop_all() meanwhile."""
        with self._lock:
            self._processes.add(process)
        try:
            yield
        finally:
            with self._lock:
                self._processes.discard(process)

    def stop_all(self) -> None:
        """After an interrupt: every lane stops before its next step, and running stages now."""
        self._stopping.set()
        with self._lock:
            running = list(self._processes)
        for process in running:
            stop_process_group(process)


def stop_process_group(process: subprocess.Popen[bytes], grace: float = 60) -> None:
    """SIGINT to the whole group (pytest tears its fixtures down: pods and namespaces go), then
    SIGKILL to whatever is left after `grace` seconds."""
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, `kill`) handled like Ctrl-C for the block, and SIGINT too,
    explicitly: a shell starting us in the background (nohup, `&` in a script) sets it to
    "ignore", and a `kill -INT` from whoever started us must still stop the run. The previous
    handlers come back afterwards, so a caller's own handling is left as it was."""
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)
