"""Several runs at once: output named per run, exit codes collected, an interrupt passed on once."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from conformance.runner.fanout import Fanout


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_each_line_names_its_run_and_each_exit_code_is_kept(tmp_path: Path, capsys) -> None:
    codes = Fanout(2, tmp_path, lambda m: None).run(
        {
            "a": py("print('one'); print('two')"),
            "b": py("import sys; print('three'); sys.exit(3)"),
        }
    )
    assert codes == {"a": 0, "b": 3}
    out = capsys.readouterr().out.splitlines()
    assert sorted(out) == ["[a] one", "[a] two", "[b] three"]


def test_no_more_runs_than_jobs_at_once(tmp_path: Path) -> None:
    # Each run holds a lock file while it runs; a second holder at the same time shows overlap.
    code = (
        "import os, sys, time; p = 'busy'\n"
        "if os.path.exists(p): sys.exit(9)\n"
        "open(p, 'w').close(); time.sleep(0.3); os.remove(p)"
    )
    codes = Fanout(1, tmp_path, lambda m: None).run({name: py(code) for name in "abc"})
    assert codes == {"a": 0, "b": 0, "c": 0}


def test_an_interrupt_reaches_each_running_child_once_and_waits_for_its_cleanup(tmp_path: Path) -> None:
    # The child records the signals it gets and takes a moment to "clean up" after the first.
    child = (
        "import signal, sys, time\n"
        "def stop(sig, frame):\n"
        "    open('got-' + sys.argv[1], 'a').write(signal.Signals(sig).name + '\\n')\n"
        "    time.sleep(0.5); open('cleaned-' + sys.argv[1], 'w').close(); sys.exit(130)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    fanout = Fanout(2, tmp_path, lambda m: None)
    commands = {n: [sys.executable, "-c", child, n] for n in ("a", "b", "never")}
    interrupt_when_both_run = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    interrupt_when_both_run.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        fanout.run(commands)
    assert time.monotonic() - started < 30
    for name in ("a", "b"):
        assert (tmp_path / f"got-{name}").read_text() == "SIGINT\n"
        assert (tmp_path / f"cleaned-{name}").exists()
    assert fanout.codes["never"] is None and not (tmp_path / "got-never").exists()
