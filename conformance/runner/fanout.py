"""Several conformance runs at once, each a child process whose output lines carry its name.

Why processes and not threads: a run owns its clusters and its interrupt handling (partial
summary, clusters deleted); a child process keeps all of that as it is for a single run. Each
child gets its own session, so a Ctrl-C in the terminal reaches only us, and we pass it on
once to each running child and wait for it to clean up; runs not started yet never start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

# A child asked to stop deletes its clusters and writes its summaries: give it time for that.
CLEANUP_GRACE_S = 600.0


class Fanout:
    """Runs named commands, at most `jobs` at a time; `codes` maps each name to its exit code
    (None: never started, because we were interrupted first)."""

    def __init__(self, jobs: int, cwd: Path, log: Callable[[str], None]) -> None:
        self.jobs, self.cwd, self.log = jobs, cwd, log
        self.codes: dict[str, int | None] = {}
        self._running: dict[str, subprocess.Popen[str]] = {}
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # one line at a time on our stdout

    def run(self, commands: dict[str, list[str]]) -> dict[str, int | None]:
        self.codes = dict.fromkeys(commands)
        pool = ThreadPoolExecutor(max_workers=self.jobs)
        futures = [pool.submit(self._one, name, cmd) for name, cmd in commands.items()]
        try:
            # Waits with a timeout: a signal must find this thread awake to raise KeyboardInterrupt here.
            while wait(futures, timeout=1).not_done:
                pass
            for future in futures:
                future.result()  # an error in our own code surfaces here
        except KeyboardInterrupt:
            self._stop_all()
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return self.codes

    def _one(self, name: str, cmd: list[str]) -> None:
        with self._lock:
            if self._stopping.is_set():
                return
            child = subprocess.Popen(
                cmd,
                cwd=self.cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                bufsize=1,
                start_new_session=True,
            )
            self._running[name] = child
        self.log(f"{name}: started (pid {child.pid})")
        assert child.stdout is not None  # stdout=PIPE
        for line in child.stdout:
            with self._lock:
                sys.stdout.write(f"[{name}] {line}")
                sys.stdout.flush()
        self.codes[name] = child.wait()
        with self._lock:
            self._running.pop(name, None)
        self.log(f"{name}: exit {self.codes[name]}")

    def _stop_all(self) -> None:
        """SIGINT to every running child (each cleans up as after a Ctrl-C), SIGKILL to the process
        group of any still running after the grace period."""
        with self._lock:
            self._stopping.set()
            running = dict(self._running)
        for name, child in running.items():
            self.log(f"{name}: interrupting (its clusters are deleted, its summary written)")
            _signal(child.pid, signal.SIGINT, group=False)
        for name, child in running.items():
            try:
                child.wait(timeout=CLEANUP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.log(f"{name}: still running after {CLEANUP_GRACE_S:.0f} s: killed")
                _signal(child.pid, signal.SIGKILL, group=True)


def _signal(pid: int, sig: signal.Signals, group: bool) -> None:
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except ProcessLookupError:
        pass
