"""Bad input to the commands that make clusters (run, clusters, bench, soak, selfcheck, upstream-e2e): each
mistake or missing host piece is one line naming it, exit 2, and nothing is created.

Each command's main() runs as `python -m MODULE` runs it, with a stand-in `docker` first on
PATH that logs every call: "nothing created" means docker was asked no more than `info`, no
report directory exists and the cache holds no cluster state. docs/bad-input.md lists the
whole matrix, with the kubeconfig, profile and manifest rows tested in test_cli and test_byo.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from pathlib import Path

import pytest

from conformance.runner.errors import guarded

# A docker that answers `info` as an engine would (or as one that is down) and logs each call.
STUB = """#!/bin/sh
echo "$*" >> "$DOCKER_CALLS"
[ "$1" = info ] || exit 1
[ "$STUB_ENGINE" = up ] && { echo 27.5.1; exit 0; }
echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
exit 1
"""

UP, DOWN, ABSENT = "up", "down", "absent"

# (module and arguments, the engine, words the error line must hold)
MATRIX = [
    (["conformance.runner.run", "--k8s-versions", "v9.9"], UP, ["'v9.9' is not pinned"]),
    (["conformance.runner.run", "--feature-gates", "DRAExtendedResource"], UP, ["NAME=true|false"]),
    (["conformance.runner.run", "--feature-gates", "DRAExtendedResource=maybe"], UP, ["DRAExtendedResource=maybe"]),
    (["conformance.runner.run", "--profile", "nope"], UP, ["profile 'nope' not found"]),
    (["conformance.runner.run"], DOWN, ["no Docker engine answers", "make host"]),
    (["conformance.runner.run"], ABSENT, ["docker is not installed"]),
    (["conformance.runner.run"], UP, ["images", "make images"]),
    (["clusters", "up", "--version", "1.99"], UP, ["'1.99' is not pinned"]),
    (["clusters", "up", "--feature-gates", "x=y=z"], UP, ["NAME=true|false"]),
    (["clusters", "up"], DOWN, ["no Docker engine answers"]),
    (["conformance.rigs.bench", "--version", "1.2"], UP, ["'1.2' is not pinned"]),
    (["conformance.rigs.bench"], DOWN, ["no Docker engine answers"]),
    (["conformance.rigs.bench"], UP, ["make images"]),
    (["conformance.rigs.soak", "--k8s-version", "1.2"], UP, ["'1.2' is not pinned"]),
    (["conformance.rigs.soak", "--profile", "nope"], UP, ["profile 'nope' not found"]),
    (["conformance.rigs.soak"], DOWN, ["no Docker engine answers"]),
    (["conformance.rigs.selfcheck", "--k8s-version", "9"], UP, ["'9' is not pinned"]),
    (["conformance.rigs.selfcheck", "--defects", "no-such-defect"], UP, ["unknown defects no-such-defect"]),
    (["conformance.rigs.selfcheck"], DOWN, ["no Docker engine answers"]),
    (["conformance.rigs.upstream_e2e", "--k8s-versions", "1.2"], UP, ["'1.2' is not pinned"]),
    (["conformance.rigs.upstream_e2e", "--profile", "nope"], UP, ["profile 'nope' not found"]),
    (["conformance.rigs.upstream_e2e"], DOWN, ["no Docker engine answers"]),
]

# argparse's own refusals: its usage line, then the one error line.
ARGPARSE = [
    (["conformance.rigs.bench", "--sizes", "0,10"], ["--sizes must lie in 1..100"]),
    (["conformance.rigs.bench", "--methods", "fast"], ["unknown method or mechanism: fast"]),
    (["conformance.rigs.soak", "--runs", "1"], ["--runs must be at least 2"]),
    (["conformance.rigs.upstream_e2e", "--topologies", "gate-cycle"], ["--topologies names none of dra, mixed"]),
    (["conformance.runner.run", "--parallel", "two"], ["--parallel: invalid int value"]),
]


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Runs a command in-process as `python -m MODULE ARGS` would, on a host whose docker is the
    stand-in (engine up or down) or missing, with an empty cache; returns (exit, stderr)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("KEP5004_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DOCKER_CALLS", str(tmp_path / "docker-calls"))
    monkeypatch.chdir(tmp_path)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}  # run.main sets its own

    def command(argv: list[str], engine: str) -> tuple[int, str]:
        if engine != ABSENT:
            (bin_dir / "docker").write_text(STUB)
            (bin_dir / "docker").chmod(0o755)
        monkeypatch.setenv("STUB_ENGINE", engine)
        # Without a docker of our own, PATH holds only the interpreter's directory (no real docker).
        monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent)]))
        module, args = argv[0], argv[1:] + (["--out", str(tmp_path / "out")] if argv[0] != "clusters" else [])
        entry = importlib.import_module(module if module != "clusters" else "clusters.__main__").main
        try:
            code = guarded(entry, args, f"python -m {module}")
        except SystemExit as exited:  # argparse's refusals
            code = exited.code
        return code, capsys.readouterr().err

    yield command
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def assert_nothing_created(tmp_path: Path) -> None:
    calls = (tmp_path / "docker-calls").read_text().split("\n") if (tmp_path / "docker-calls").exists() else []
    assert all(c.startswith("info") for c in calls if c), f"docker was asked more than `info`: {calls}"
    assert not (tmp_path / "out").exists(), "a report directory was made"
    assert not (tmp_path / "cache" / "clusters").exists(), "cluster state was made"


@pytest.mark.parametrize("argv, engine, words", MATRIX, ids=[" ".join(a) + f" [{e}]" for a, e, _ in MATRIX])
def test_a_mistake_is_one_line_exit_2_and_nothing_is_created(
    tmp_path: Path, host, argv: list[str], engine: str, words: list[str]
) -> None:
    code, stderr = host(argv, engine)
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], stderr
    for word in words:
        assert word in lines[0]
    assert_nothing_created(tmp_path)


@pytest.mark.parametrize("argv, words", ARGPARSE, ids=[" ".join(a) for a, _ in ARGPARSE])
def test_an_invalid_option_is_refused_by_the_parser(tmp_path: Path, host, argv: list[str], words: list[str]) -> None:
    code, stderr = host(argv, UP)
    assert code == 2, stderr
    usage, error = stderr.strip().split("\n")[0], stderr.strip().split("\n")[-1]
    assert usage.startswith("usage:") and "error:" in error and all(w in error for w in words), stderr
    assert_nothing_created(tmp_path)
