"""The kubeadm patches that slow the control plane's readiness probes (no cluster needed)."""
from __future__ import annotations

from pathlib import Path

import yaml

from clusters import probe_patches


def test_each_component_probed_every_second_gets_a_strategic_patch_of_its_own_container() -> None:
    found = {name: yaml.safe_load(text) for name, text in probe_patches.patches().items()}
    assert set(found) == {"etcd+strategic.yaml", "kube-apiserver+strategic.yaml", "kube-scheduler+strategic.yaml"}
    for name, patch in found.items():
        [container] = patch["spec"]["containers"]
        assert container["name"] == name.split("+")[0]
        assert container["readinessProbe"] == {"periodSeconds": probe_patches.READINESS_PERIOD_S}
        assert probe_patches.READINESS_PERIOD_S > 1


def test_the_files_are_written_once_into_a_directory_named_after_their_content(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KEP5004_CACHE", str(tmp_path))
    written = probe_patches.ensure()
    assert sorted(p.name for p in written.iterdir()) == sorted(probe_patches.patches())
    assert probe_patches.node_mount()["hostPath"] == str(written)
    monkeypatch.setattr(probe_patches, "READINESS_PERIOD_S", 7)
    assert probe_patches.directory() != written
    assert "periodSeconds: 7" in (probe_patches.ensure() / "etcd+strategic.yaml").read_text()
