"""The runner never hides a failure: failing stages, signals, setup errors and interrupts all
end non-zero with a summary, JUnit and bundle, and nothing left behind (no cluster needed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from clusters import capacity, lifecycle
from clusters.images import BuiltImages
from clusters.paths import REPO_ROOT
from conformance.lib.setup import driver_setup, permissions
from conformance.runner import driver, existing, kind_mode
from conformance.runner.fanout import Fanout
from conformance.runner.options import RunOptions, parse
from conformance.runner.plan import Step, run_lanes
from conformance.runner.run import run
from conformance.runner.stages import Stages
from conformance.runner.stopping import Interrupts, stop_process_group
from kube.api import Api
from kube.features import VERSIONS
from kube.versions import KubeVersion

MAIN_ONLY = dict(no_mixed=True, no_faults=True, no_gate_cycle=True, no_upgrade=True, no_skew=True)


class FakeCluster:
    def __init__(self, name: str) -> None:
        self.name, self.kubeconfig, self.exported, self.created_s = name, Path("/nonexistent"), [], None

    def kubectl(self, *args: str, input: str | None = None) -> str:
        return ""

    def export_logs(self, dest: Path) -> Path:
        self.exported.append(dest)
        return dest


@pytest.fixture
def kind(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict:
    """A kind mode where clusters are fakes and stages are scripted; records what was deleted."""
    state: dict = {"deleted": [], "clusters": [], "codes": [0], "ensure_error": None, "driver_error": None}

    def ensure(spec, images, failure_logs=None, stop=None, priority=1):
        if state["ensure_error"]:
            raise state["ensure_error"]
        cluster = FakeCluster(spec.name)
        state["clusters"].append(cluster)
        return cluster

    def install(*args, **kwargs):
        if state["driver_error"]:
            raise state["driver_error"]
        return True

    monkeypatch.setattr(BuiltImages, "load", classmethod(lambda cls: cls({"DRIVER_IMAGE": "driver:1"})))
    monkeypatch.setattr(kind_mode, "require_engine", lambda: None)
    # The runner hands its cluster budget on through the environment: undone after the test.
    monkeypatch.setattr(capacity, "_budget", None)
    for name in (capacity.MAX_CLUSTERS_ENV, capacity.CREATE_AT_ONCE_ENV):
        monkeypatch.setenv(name, "")
    monkeypatch.setattr(lifecycle, "ensure", ensure)
    monkeypatch.setattr(lifecycle, "delete", lambda name: state["deleted"].append(name))
    monkeypatch.setattr(driver, "install_and_check", install)
    monkeypatch.setattr(Stages, "main", lambda stages, kubeconfig, report: list(state["codes"]))
    state["out"] = tmp_path
    return state


def run_kind(state: dict) -> int:
    return run(RunOptions(k8s_versions=("1.37",), out=state["out"], **MAIN_ONLY)).code


def stages(state: dict) -> list[dict]:
    return json.loads((state["out"] / "kep5004-dra-137" / "summary.json").read_text())["context"]["stages"]


def test_green_stage_exits_zero_and_deletes_the_cluster(kind):
    assert run_kind(kind) == 0
    assert kind["deleted"] == ["kep5004-dra-137"]


@pytest.mark.parametrize("code", [1, -9])  # a failure, and pytest killed by SIGKILL
def test_failed_or_killed_stage_fails_the_run(kind, code):
    kind["codes"] = [0, code]
    assert run_kind(kind) == 1
    assert kind["clusters"][0].exported, "a failed stage exports the cluster's logs"


def test_cluster_creation_error_is_a_stage_error_with_summary_junit_and_bundle(kind):
    kind["ensure_error"] = RuntimeError("kind create failed")
    assert run_kind(kind) == 1
    assert stages(kind) == [{"stage": "dra cluster", "seconds": 0, "error": "RuntimeError: kind create failed"}]
    out = kind["out"] / "kep5004-dra-137"
    assert "kind create failed" in (out / "junit-dra-cluster.xml").read_text()
    assert (kind["out"] / "kep5004-dra-137.tar.gz").exists()
    assert "error: RuntimeError: kind create failed" in (out / "summary.md").read_text()


def test_driver_error_deletes_the_cluster_it_made(kind):
    kind["driver_error"] = TimeoutError("no slices")
    assert run_kind(kind) == 1
    assert kind["deleted"] == ["kep5004-dra-137"]
    assert stages(kind)[0]["stage"] == "dra driver"


def test_profiles_take_turns_on_one_cluster_each_with_its_own_report(kind, monkeypatch):
    removed = []
    monkeypatch.setattr(BuiltImages, "load", classmethod(lambda cls: cls({"DRIVER_IMAGE": "driver:1"})))
    monkeypatch.setattr(
        driver_setup.cleanup, "sweep", lambda api: removed.append("the tests' objects") or ["Namespace/kep5004-x"]
    )
    monkeypatch.setattr(
        driver_setup, "uninstall_fake_driver", lambda kubectl, profile, image: removed.append(profile.name)
    )
    monkeypatch.setattr(
        Stages, "main", lambda stages, kubeconfig, report: [0 if report.profile.name == "fake-gpu" else 1]
    )
    options = RunOptions(k8s_versions=("1.37",), profile="fake-gpu,example-gpu", out=kind["out"], **MAIN_ONLY)
    assert run(options).code == 1
    assert [c.name for c in kind["clusters"]] == ["kep5004-dra-137"] and kind["deleted"] == ["kep5004-dra-137"]
    # what the first profile's tests made goes first: a pod terminating without its driver stays for good
    assert removed == ["the tests' objects", "fake-gpu"], (
        "the first profile's driver goes before the second one's comes"
    )
    first, second = (
        json.loads((kind["out"] / name / "summary.json").read_text())["context"]
        for name in ("kep5004-dra-137", "kep5004-dra-137-example-gpu")
    )
    assert (first["profile"], second["profile"]) == ("fake-gpu", "example-gpu")
    assert kind["clusters"][0].exported, "the second profile's failure exports the cluster's logs"


def test_interrupt_writes_a_partial_summary_deletes_and_exits_130(kind):
    kind["driver_error"] = KeyboardInterrupt()
    assert run_kind(kind) == 130
    assert kind["deleted"] == ["kep5004-dra-137"]
    assert stages(kind) == [{"stage": "dra driver", "seconds": 0, "error": "interrupted"}]


def test_existing_cluster_mode_needs_a_profile_and_installs_nothing_unasked(monkeypatch, tmp_path, capsys):
    kubeconfig = tmp_path / "kubeconfig"
    with pytest.raises(SystemExit) as stopped:
        parse(["--kubeconfig", str(kubeconfig)], "run")
    assert stopped.value.code == 2 and "--kubeconfig needs --profile" in capsys.readouterr().err
    monkeypatch.setattr(driver_setup, "deploy_fake_driver", lambda *a: pytest.fail("nothing may be installed"))
    assert run(RunOptions(kubeconfig=kubeconfig, profile="fake-gpu")).code == 2  # no such cluster
    assert "judging it as installed by hand" in capsys.readouterr().err
    assert run(RunOptions(kubeconfig=kubeconfig, profile="fake-gpu,example-gpu")).code == 2
    assert "--kubeconfig takes one profile" in capsys.readouterr().err


def test_missing_permissions_are_named_before_anything_is_created(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(Api, "server_version", lambda self: "v1.37.2")
    monkeypatch.setattr(permissions, "_allowed", lambda api, p: p.resource != "deviceclasses" or p.verb != "create")
    monkeypatch.setattr(existing, "fresh", lambda out: pytest.fail("nothing may be created"))
    profile = tmp_path / "vendor.yaml"
    profile.write_text(
        (REPO_ROOT / "fixtures/profiles/fake-gpu.yaml")
        .read_text()
        .replace("deploy: fake-driver", "deploy: preinstalled")
    )
    assert run(RunOptions(kubeconfig=tmp_path / "kubeconfig", profile=str(profile))).code == 2
    assert "lack 1 permission(s) the suite needs: create deviceclasses.resource.k8s.io" in capsys.readouterr().err


def test_an_interrupted_stage_stops_its_whole_process_group():
    """pytest's xdist workers are children of the stage's pytest: all of them must stop, or they
    go on creating namespaces after the runner swept the cluster."""
    stage = subprocess.Popen(["sh", "-c", "trap '' INT; sleep 300 & sleep 300 & wait"], start_new_session=True)
    time.sleep(0.5)
    stop_process_group(stage, grace=1)
    time.sleep(0.2)
    assert not _running_in_group(stage.pid), "processes of the stage's group survived"
    assert stage.returncode == -signal.SIGKILL


def _running_in_group(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group, from /proc."""
    from pathlib import Path

    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def test_jobs_hands_each_version_to_a_run_of_its_own_and_fails_when_one_fails(kind, monkeypatch):
    handed: dict[str, list[str]] = {}

    def fan_out(self, commands):
        handed.update(commands)
        return {"v1.37.2": 0, "v1.36.3": 1}

    monkeypatch.setattr(Fanout, "run", fan_out)
    monkeypatch.chdir(kind["out"])
    options = RunOptions(k8s_versions=("1.37", "1.36"), jobs=2, no_mixed=True, out=Path("rel"))
    assert run(options).code == 1
    assert sorted(handed) == ["v1.36.3", "v1.37.2"]
    # The same options, for this version alone and one job; the report root absolute.
    assert handed["v1.36.3"][3] == "conformance.runner"
    child = parse(handed["v1.36.3"][4:], "run")
    assert child == options.but(k8s_versions=("v1.36.3",), jobs=1)
    assert child.out == Path("rel").absolute()
    assert kind["clusters"] == [], "the parent makes no cluster itself"
    assert (Path("rel") / "coverage.md").exists()


def test_options_survive_the_command_line_a_child_run_gets():
    options = RunOptions(
        profile="fake-gpu,example-gpu",
        k8s_versions=("v1.36.3",),
        feature_gates="DRAExtendedResource=false",
        max_clusters=3,
        timeout_scale=2.5,
        k="not scoring and not (quota)",
        keep=True,
    )
    assert parse(options.to_argv(), "run") == options
    on_existing = RunOptions(kubeconfig=Path("k"), profile="p.yaml", install_fake_driver=True)
    assert parse(on_existing.to_argv(), "run") == on_existing and not on_existing.disruptive
    assert RunOptions().disruptive, "kind clusters are the suite's own: the disruptive tests always run"


def step(name: str) -> Step:
    return Step(name, lambda stages, kubeconfig, report: [0], True)


def test_lanes_run_at_once_and_every_step_runs_after_a_failure():
    other_started, ran = threading.Event(), []

    def run_step(s: Step) -> bool:
        if s.topology == "dra":  # the first lane waits for the second one to be under way
            assert other_started.wait(10), "the second lane did not start alongside the first"
        other_started.set()
        ran.append(s.topology)
        return s.topology != "mixed"

    assert run_lanes([[step("dra"), step("mixed")], [step("in-place")]], run_step, Interrupts()) is False
    assert sorted(ran) == ["dra", "in-place", "mixed"]


def test_an_interrupt_in_the_first_lane_stops_the_others_before_their_next_step():
    second_running, ran, interrupts = threading.Event(), [], Interrupts()

    def run_step(s: Step) -> bool:
        if s.topology == "dra":
            second_running.wait(10)
            raise KeyboardInterrupt
        second_running.set()
        while not interrupts.stopping:  # a stage, until the main thread stops it
            threading.Event().wait(0.01)
        ran.append(s.topology)
        interrupts.check()
        ran.append("never")
        return True

    with pytest.raises(KeyboardInterrupt):
        run_lanes([[step("dra")], [step("faults"), step("upgrade")]], run_step, interrupts)
    assert ran == ["faults"], "the other lane stopped, and took no further step"


@pytest.mark.timeout(60)  # a lane waiting for ever fails the test instead of hanging it
@pytest.mark.parametrize("first_fails", [False, True])
def test_the_in_place_lane_makes_its_cluster_once_the_first_lanes_is_up_or_failed(kind, monkeypatch, first_fails):
    events, fake_ensure = [], lifecycle.ensure

    def ensure(spec, images, failure_logs=None, stop=None, priority=1):
        events.append(f"{spec.topology} asked")
        if spec.topology == "dra":
            time.sleep(0.3)  # long enough for another lane to have started, were it not waiting
            events.append("dra up")
            if first_fails:
                raise RuntimeError("kind create failed")
        return fake_ensure(spec, images, failure_logs, stop, priority)

    monkeypatch.setattr(lifecycle, "ensure", ensure)
    monkeypatch.setattr(Stages, "run", lambda *args, **kwargs: 0)
    options = RunOptions(
        k8s_versions=("1.37",), no_mixed=True, no_gate_cycle=True, no_upgrade=True, no_skew=True, out=kind["out"]
    )
    assert run(options).code == (1 if first_fails else 0)
    assert events == ["dra asked", "dra up", "in-place asked"]


def test_the_run_says_how_many_clusters_the_host_allows_and_hands_it_on(kind: dict, capsys) -> None:
    assert run(RunOptions(k8s_versions=("1.37",), max_clusters=3, out=kind["out"], **MAIN_ONLY)).code == 0
    assert "clusters alive at once" in capsys.readouterr().err
    assert os.environ[capacity.MAX_CLUSTERS_ENV] == "3" and int(os.environ[capacity.CREATE_AT_ONCE_ENV]) >= 1


def test_sigterm_stops_a_run_as_ctrl_c_does_and_the_callers_handler_comes_back():
    from conformance.runner.stopping import signals_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"), signals_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert signal.getsignal(signal.SIGTERM) is before


def test_an_existing_cluster_is_expected_to_have_the_gate_on_whatever_its_versions_default(monkeypatch, tmp_path):
    # On 1.35 the gate is off by default: a cluster serving the feature must not fail preflight for it.
    monkeypatch.setattr(Api, "server_version", lambda self: "v1.35.4")
    monkeypatch.setattr(permissions, "missing", lambda api, wanted: [])
    seen = {}

    def install_and_check(api, kubectl, report, image, stage):
        seen["expected"] = VERSIONS.gate_on(KubeVersion.parse("v1.35.4").as_minor, report.context["gate_enabled"])
        return False

    monkeypatch.setattr(driver, "install_and_check", install_and_check)
    monkeypatch.setattr(Stages, "main", lambda stages, kubeconfig, report: [0])
    monkeypatch.setattr(driver_setup.cleanup, "sweep", lambda api: [])
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    run(RunOptions(kubeconfig=kubeconfig, profile="fake-gpu", out=tmp_path / "out"))
    assert seen == {"expected": True}
