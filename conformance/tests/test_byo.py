"""`byo DIR` refuses manifests it cannot apply as workloads before touching any cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusters.paths import REPO_ROOT
from conformance.lib.objects.workloads import manifest_problems
from conformance.runner import byo

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n"


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("byo talked to a cluster despite bad input")

    monkeypatch.setattr(byo, "Api", refuse)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("kind: Pod\n  bad: [\n", "not valid YAML"),
        ("just a string\n", "document 1 is not a Kubernetes object"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "no workload"),
        (
            POD + "---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: x}\n",
            "document 2 is a DeviceClass, neither a workload",
        ),
    ],
)
def test_bad_manifests_are_refused_in_a_line_each_and_nothing_is_created(
    tmp_path: Path, capsys, no_cluster, text: str, words: str
) -> None:
    (tmp_path / "a.yaml").write_text(text)
    (tmp_path / "b.yaml").write_text(POD)
    assert byo.main([str(tmp_path), "--kubeconfig", str(tmp_path / "kubeconfig")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: a.yaml: ") and words in err[0], err


def test_every_stored_workload_is_accepted() -> None:
    stored = sorted((REPO_ROOT / "fixtures" / "workloads").glob("*/*.yaml"))
    assert stored and {path.name: manifest_problems(path) for path in stored if manifest_problems(path)} == {}


def test_an_unreachable_cluster_is_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "a.yaml").write_text(POD)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: x}}]\n"
    )
    assert byo.main([str(tmp_path), "--kubeconfig", str(kubeconfig)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "did not answer" in err[0], err
