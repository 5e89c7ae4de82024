"""The in-cluster runner without a cluster: manifests, the sonobuoy plugin, the image's contract."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from clusters.paths import REPO_ROOT
from conformance.lib import profile as profiles
from conformance.lib.profile import PROFILES_DIR
from conformance.lib.setup import permissions
from conformance.runner import incluster

EXAMPLE = PROFILES_DIR / "example-gpu.yaml"


def test_manifest_grants_exactly_the_checked_permissions_and_mounts_the_profile():
    objs = {o["kind"]: o for o in incluster.manifest(EXAMPLE, "suite:1")}
    assert list(objs) == ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Job"]
    granted = {
        (g, r, n, v)
        for rule in objs["ClusterRole"]["rules"]
        if "resources" in rule
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for n in rule.get("resourceNames", [""])
        for v in rule["verbs"]
    }
    wanted = {
        (p.group, p.resource + (f"/{p.subresource}" if p.subresource else ""), p.name, p.verb)
        for p in permissions.granted(profiles.load(str(EXAMPLE)))
        if not p.path
    }
    assert granted == wanted
    assert objs["ConfigMap"]["data"]["profile.yaml"] == EXAMPLE.read_text()
    pod = objs["Job"]["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["suite", "results"]
    assert all(c["securityContext"]["runAsUser"] == incluster.NOBODY for c in pod["containers"])
    assert objs["Job"]["spec"]["backoffLimit"] == 0


def test_sonobuoy_plugin_matches_its_documented_schema():
    schema = json.loads((REPO_ROOT / "fixtures/incluster/sonobuoy-plugin.schema.json").read_text())
    plugin = incluster.sonobuoy_plugin(EXAMPLE, "suite:1")
    assert list(Draft202012Validator(schema).iter_errors(plugin)) == []
    broken = {**plugin, "sonobuoy-config": {**plugin["sonobuoy-config"], "driver": "Deployment"}}
    assert [e.message for e in Draft202012Validator(schema).iter_errors(broken)] == [
        "'Deployment' is not one of ['Job', 'DaemonSet']"
    ]


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, ""),
        ({"E2E_FOCUS": r"\[Conformance\]"}, ""),
        ({"E2E_FOCUS": "naming", "E2E_SKIP": "quota"}, "(naming) and not (quota)"),
    ],
)
def test_focus_and_skip_become_one_selection(env, expected):
    assert incluster.selection(env) == expected


def test_extra_args_may_name_the_profile(tmp_path):
    options = incluster.run_options(
        {"E2E_EXTRA_ARGS": "--profile=example-gpu --timeout-scale=2"}, tmp_path / "k", tmp_path
    )
    assert (options.profile, options.timeout_scale) == ("example-gpu", 2.0)
    assert incluster.run_options({"KEP5004_PROFILE": "/p.yaml"}, tmp_path / "k", tmp_path).profile == "/p.yaml"


def test_extra_args_that_make_no_run_stop_the_job_with_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        incluster.run_options({"E2E_EXTRA_ARGS": "--jobs 0"}, tmp_path / "k", tmp_path)
    assert stopped.value.code == 2 and "--jobs must be at least 1" in capsys.readouterr().err


def test_entrypoint_writes_what_hydrophone_and_sonobuoy_collect(monkeypatch, tmp_path, capsys):
    """A stand-in run: the results directory gets e2e.log (opening with the spec count), junit_01.xml,
    the tarball and `done`; stdout ends with the verdicts and the line hydrophone waits for."""
    monkeypatch.setattr(incluster, "count_tests", lambda options: 3)

    def fake_run(cmd, **kwargs):
        out = Path(cmd[cmd.index("--out") + 1]) / "existing"
        out.mkdir(parents=True)
        (out / "junit-parallel.xml").write_text('<testsuite name="p" tests="1"><testcase name="t"/></testsuite>')
        (out / "summary.json").write_text(json.dumps({"requirements": [{"id": "API-1", "verdict": "passed"}]}))
        return FakeProcess()

    class FakeProcess:
        stdout = iter(["running\n"])
        returncode = 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(incluster.subprocess, "Popen", fake_run)
    env = {
        "RESULTS_DIR": str(tmp_path / "results"),
        "KEP5004_CACHE": str(tmp_path / "cache"),
        "KEP5004_PROFILE": str(EXAMPLE),
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "KUBERNETES_SERVICE_PORT": "443",
    }
    assert incluster.entrypoint(env) == 0
    results = tmp_path / "results"
    assert (results / "e2e.log").read_text().splitlines()[0] == "Will run 3 of 3 specs"
    assert "<testcase" in (results / "junit_01.xml").read_text()
    assert (results / "done").read_text() == str(results / incluster.TARBALL)
    with tarfile.open(results / incluster.TARBALL) as tar:
        assert {"e2e.log", "junit_01.xml", "existing/summary.json"} <= set(tar.getnames())
    lines = capsys.readouterr().out.strip().splitlines()
    assert (results / "e2e.log").read_text().strip().splitlines()[-3:] == lines[-3:]
    assert lines[-3] == 'KEP5004-VERDICTS {"API-1": "passed"}'
    assert lines[-2].startswith("Ginkgo ran 1 suite in ") and lines[-1].startswith("Test Suite Passed")
    config = yaml.safe_load((tmp_path / "cache" / "kubeconfig").read_text())
    assert config["clusters"][0]["cluster"]["server"] == "https://10.96.0.1:443"


def test_a_job_whose_results_container_ended_is_reported_at_once_with_its_output(tmp_path):
    class CrashedJob:
        def get(self, *args):
            return {"metadata": {"name": incluster.NAME}}

        def list(self, *args, **kwargs):
            crashed = {"terminated": {"exitCode": 1}}
            return [
                {
                    "metadata": {"name": "job-pod"},
                    "status": {
                        "containerStatuses": [
                            {"name": "suite", "state": crashed},
                            {"name": "results", "state": crashed},
                        ]
                    },
                }
            ]

        def logs(self, namespace, pod, container):
            return "ModuleNotFoundError: No module named 'grpc'"

    with pytest.raises(incluster.CommandError, match="ended without results.*No module named 'grpc'"):
        incluster.fetch(CrashedJob(), "kep5004-conformance", tmp_path / "r.tar.gz", timeout=3600)


def test_fetch_without_the_job_is_one_line_not_an_hour_of_waiting(tmp_path, capsys):
    class NoJob:
        def get(self, *args):
            return None

    with pytest.raises(incluster.CommandError, match="no Job kep5004-conformance/kep5004-conformance: apply"):
        incluster.fetch(NoJob(), "kep5004-conformance", tmp_path / "r.tar.gz", timeout=3600)


def test_vendor_check_counts_what_the_suite_left_but_not_the_driver_pods_it_rolled():
    from conformance.rigs.vendor_check import left_behind

    before = {"Pod": ["fake-gpu-driver/dra-a", "kube-system/x"], "Namespace": ["default"]}
    after = {"Pod": ["fake-gpu-driver/dra-b", "kube-system/x", "kep5004-1/p"], "Namespace": ["default", "kep5004-1"]}
    assert left_behind(before, after, "fake-gpu-driver") == {"Pod": ["kep5004-1/p"], "Namespace": ["kep5004-1"]}
    assert left_behind(before, before, "fake-gpu-driver") == {}


def test_a_rehearsal_holds_only_where_the_suite_fails_exactly_the_driver_known_defects():
    from conformance.rigs.vendor_check import against_known_defects

    known = {"KUBELET-1": "leaks after a restart"}
    assert not any(against_known_defects({"KUBELET-1": "failed", "NAME-1": "passed"}, known).values())
    assert against_known_defects({"KUBELET-1": "passed", "NAME-1": "failed", "CTR-1": "error"}, known) == {
        "failed, not a known defect": ["NAME-1"],
        "known defect not found": ["KUBELET-1"],
        "error": ["CTR-1"],
    }
