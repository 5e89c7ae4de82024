"""The installed tool (`kep5004-conformance`): dispatch, one-line errors for a bad kubeconfig or
profile in every command, and everything an installed copy reads shipped with it (no cluster needed)."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from clusters.paths import IN_CHECKOUT, REPO_ROOT
from conformance import cli
from conformance.runner import run, stages

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def tool(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """The tool as its console script runs it, from a directory outside the checkout."""
    return subprocess.run(
        [sys.executable, "-c", "import sys; from conformance.cli import main; sys.exit(main())", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "KEP5004_CACHE": str(cwd / "cache"), **(env or {})},
    )


def one_line_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0], proc.stderr
    for word in words:
        assert word in lines[0]


def test_the_script_entry_point_is_cli_main():
    assert PYPROJECT["project"]["scripts"] == {"kep5004-conformance": "conformance.cli:main"}


def test_help_lists_every_command(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("run", "byo", "incluster", "coverage", "catalogue"):
        assert f"\n  {name} " in out
    assert "selfcheck" not in out, "the project's rigs are make targets of a checkout, not commands of the tool"


def test_no_command_prints_usage_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "usage: kep5004-conformance COMMAND" in capsys.readouterr().err


def test_unknown_command_is_one_line_and_exits_2(capsys):
    assert cli.main(["rnu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown command 'rnu'" in err and "run, byo" in err


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_every_command_has_a_main(name):
    assert callable(importlib.import_module(cli.COMMANDS[name][0]).main)


def test_a_command_gets_the_rest_of_the_arguments(monkeypatch):
    seen = []
    monkeypatch.setattr(run, "main", lambda argv, prog: seen.append(argv) or 7)
    assert cli.main(["run", "--no-mixed", "-k", "x"]) == 7
    assert seen == [["--no-mixed", "-k", "x"]]


def test_catalogue_check_works_from_any_directory(tmp_path):
    proc = tool("catalogue", "check", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "requirements, consistent with" in proc.stdout


def test_coverage_without_summaries_prints_its_usage(tmp_path):
    proc = tool("coverage", cwd=tmp_path)
    assert proc.returncode == 2 and "SUMMARY.json" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--kubeconfig", "/nonexistent", "--profile", "fake-gpu"],
        ["run", "--kubeconfig=/nonexistent", "--profile", "x.yaml"],
        ["byo", "/nonexistent", "--kubeconfig", "/nonexistent"],
    ],
)
def test_a_missing_kubeconfig_is_one_line(tmp_path, args):
    one_line_error(tool(*args, cwd=tmp_path), "--kubeconfig /nonexistent: no such file")


@pytest.mark.parametrize(
    "text, words",
    [
        ("apiVersion: v1\n", ["bad kubeconfig", "current-context"]),
        ("clusters: [\n", ["not valid YAML", "line"]),
        (
            "apiVersion: v1\nkind: Config\ncurrent-context: x\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
            "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n",
            ["did not answer", "127.0.0.1"],
        ),
    ],
)
def test_byo_with_an_unusable_kubeconfig_is_one_line(tmp_path, text, words):
    (tmp_path / "kubeconfig").write_text(text)
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "pod.yaml").write_text(
        (REPO_ROOT / "fixtures" / "workloads" / "nvidia-gpu" / "pod-1gpu.yaml").read_text()
    )
    one_line_error(tool("byo", "workloads", "--kubeconfig", "kubeconfig", cwd=tmp_path), *words)


@pytest.mark.parametrize("command", [["run"], ["run", "--kubeconfig", "kubeconfig"], ["byo", "workloads"]])
def test_an_unknown_profile_is_one_line_in_every_command(tmp_path, command):
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\n")
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "pod.yaml").write_text(
        (REPO_ROOT / "fixtures" / "workloads" / "nvidia-gpu" / "pod-1gpu.yaml").read_text()
    )
    proc = tool(
        *command, "--profile", "/nonexistent.yaml", cwd=tmp_path, env={"KUBECONFIG": str(tmp_path / "kubeconfig")}
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "profile '/nonexistent.yaml' not found" in proc.stderr


def test_an_invalid_profile_names_each_problem(tmp_path):
    (tmp_path / "bad.yaml").write_text("name: bad\n")
    proc = tool("run", "--profile", "bad.yaml", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "bad.yaml: " in proc.stderr and "problem(s)" in proc.stderr


def test_a_bug_still_shows_its_traceback(monkeypatch):
    def broken(argv, prog):
        raise KeyError("bug")

    monkeypatch.setattr(run, "main", broken)
    with pytest.raises(KeyError):
        cli.main(["run"])


def test_run_makes_paths_absolute_before_the_suite_runs_elsewhere(monkeypatch, tmp_path):
    """The suite's pytest runs in REPO_ROOT: relative --out, --kubeconfig and profile paths
    given by the user must still point where they did."""
    seen = {}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.yaml").write_text((REPO_ROOT / "fixtures" / "profiles" / "fake-gpu.yaml").read_text())
    monkeypatch.setattr(
        run, "on_kind", lambda options, chosen, interrupts: seen.update(vars(options), chosen=chosen) or (True, [])
    )
    assert run.main(["--profile", "p.yaml,example-gpu", "--out", "reports-here"]) == 0
    assert seen["out"] == tmp_path / "reports-here"
    assert [arg for arg, _ in seen["chosen"]] == [str(tmp_path / "p.yaml"), "example-gpu"]


# --- what an installed copy needs ------------------------------------------------------------


def test_reports_go_to_the_checkout_or_the_current_directory(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(run, "on_kind", lambda options, chosen, interrupts: seen.update(vars(options)) or (True, []))
    run.main([])
    assert IN_CHECKOUT
    assert seen["out"] == REPO_ROOT / "reports"
    assert stages.PYTEST_CONFIG == []  # a checkout's pytest finds pyproject.toml and conftest.py itself


def data_files() -> set[Path]:
    """Every file under the installed directories that is not Python source or generated."""
    found = set()
    for top in ("clusters", "conformance", "fake_driver", "kube", "fixtures"):
        for path in (REPO_ROOT / top).rglob("*"):
            rel = path.relative_to(REPO_ROOT)
            if (
                path.is_file()
                and path.suffix not in (".py", ".pyc", ".pyi")
                and path.name != "README.md"
                and not any(p == "__pycache__" or p == "_gen" or p.startswith(".gen-") for p in rel.parts)
            ):
                found.add(rel)
    return found


def test_every_data_file_is_shipped_as_package_data():
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert "fixtures*" in setuptools["packages"]["find"]["include"]
    shipped = set()
    for package, patterns in setuptools["package-data"].items():
        base = REPO_ROOT / package.replace(".", "/")
        for pattern in patterns:
            shipped |= {p.relative_to(REPO_ROOT) for p in base.glob(pattern) if p.is_file()}
    assert data_files() - shipped == set()
    for needed in (
        "fixtures/profiles/profile.schema.json",
        "conformance/catalogue/spec_ids.txt",
        "clusters/versions.env",
        "fake_driver/probe/fake-gpu-probe",
    ):
        assert Path(needed) in shipped


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project as pip installs it (a copy of the tree built into a directory of its own, with
    its metadata and entry points), without dependencies: those are this interpreter's."""
    where = tmp_path_factory.mktemp("installed")
    source = where / "source"
    shutil.copytree(
        REPO_ROOT,
        source,
        ignore=shutil.ignore_patterns(".git", "reports", "build", "*.egg-info", "__pycache__", ".pytest_cache"),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
        + ["--target", str(where / "site"), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return where / "site"


def test_the_installed_tool_ships_no_rig_and_no_test(installed):
    assert (installed / "conformance" / "runner" / "run.py").is_file()
    assert not (installed / "conformance" / "rigs").exists()
    assert not list(installed.glob("*/tests")) and not list(installed.glob("*/*/tests"))


def test_installed_suite_collects_the_same_tests_from_anywhere(installed, tmp_path):
    """What the runner passes when installed (no pyproject.toml or root conftest.py around): the
    same tests and ids, the cluster plugin's options (--keep) and markers known through its
    pytest11 entry point, whatever pytest configuration the directory above holds."""
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --no-such-option\n")  # a user's own project
    env = {**os.environ, "PYTHONPATH": str(installed)}
    config = json.loads(
        subprocess.check_output(
            [
                sys.executable,
                "-c",
                "import json; from conformance.runner import stages; print(json.dumps(stages.PYTEST_CONFIG))",
            ],
            cwd=tmp_path,
            text=True,
            env=env,
        )
    )
    assert config == ["-c", os.devnull, f"--rootdir={installed}"]

    def collect(config: list[str], suite: Path, cwd: Path, env: dict[str, str]) -> list[str]:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                *config,
                *stages.STAGE_OPTIONS,
                str(suite),
                "-p",
                "no:cacheprovider",
                "--collect-only",
                "-q",
                "--keep",
                "-m",
                "not serial",
            ],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return [line for line in proc.stdout.splitlines() if "::" in line]

    ids = collect(config, installed / "conformance" / "suite", tmp_path, env)
    assert ids and ids == collect([], stages.SUITE, REPO_ROOT, {**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert all(i.startswith("conformance/suite/") for i in ids)


@pytest.mark.parametrize("command", ["run", "byo", "incluster", "catalogue"])
def test_command_help_names_the_installed_tool(command, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: kep5004-conformance {command} ")
