"""The kubeadm patches of the control plane's readiness and startup probes (no cluster needed)."""

from __future__ import annotations

from pathlib import Path

import yaml

from clusters import probe_patches


def _containers() -> dict[str, dict]:
    found = {name: yaml.safe_load(text) for name, text in probe_patches.patches().items()}
    containers = {}
    for name, patch in found.items():
        [container] = patch["spec"]["containers"]
        assert container["name"] == name.split("+")[0]  # kubeadm's file name says whose pod it patches
        containers[container["name"]] = container
    return containers


def test_components_probed_for_readiness_every_second_are_probed_every_few_seconds() -> None:
    containers = _containers()
    assert {c for c, found in containers.items() if "readinessProbe" in found} == {
        "etcd",
        "kube-apiserver",
        "kube-scheduler",
    }
    for found in containers.values():
        if "readinessProbe" in found:
            assert found["readinessProbe"] == {"periodSeconds": probe_patches.READINESS_PERIOD_S}
    assert probe_patches.READINESS_PERIOD_S > 1


def test_every_component_is_asked_whether_it_started_every_second_from_the_start_for_as_long_as_kubeadm_allows() -> (
    None
):
    containers = _containers()
    assert set(containers) == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
    for found in containers.values():
        startup = found["startupProbe"]
        assert startup["initialDelaySeconds"] == 0 and startup["periodSeconds"] == 1
        # kubeadm: 10 s before the first of 24 probes 10 s apart
        assert startup["periodSeconds"] * startup["failureThreshold"] == 10 + 24 * 10


def test_the_files_are_written_once_into_a_directory_named_after_their_content(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KEP5004_CACHE", str(tmp_path))
    written = probe_patches.ensure()
    assert sorted(p.name for p in written.iterdir()) == sorted(probe_patches.patches())
    assert probe_patches.node_mount()["hostPath"] == str(written)
    monkeypatch.setattr(probe_patches, "READINESS_PERIOD_S", 7)
    assert probe_patches.directory() != written
    assert "periodSeconds: 7" in (probe_patches.ensure() / "etcd+strategic.yaml").read_text()
