"""Merging a feature gate into static pod manifests and kubelet configuration (no cluster needed)."""

from __future__ import annotations

import yaml

from clusters.gates import patch_kubelet_config, patch_manifest, with_gate

MANIFEST = """apiVersion: v1
kind: Pod
metadata: {name: kube-scheduler, namespace: kube-system}
spec:
  containers:
  - name: kube-scheduler
    image: registry.k8s.io/kube-scheduler:v1.36.3
    command: [kube-scheduler, --leader-elect=true, "--feature-gates=A=true,DRAExtendedResource=true"]
"""


def test_flag_added_when_missing() -> None:
    assert with_gate(["kube-apiserver", "--v=2"], "DRAExtendedResource", False) == [
        "kube-apiserver",
        "--v=2",
        "--feature-gates=DRAExtendedResource=false",
    ]


def test_existing_gates_kept_and_one_changed() -> None:
    command = yaml.safe_load(patch_manifest(MANIFEST, "DRAExtendedResource", False))["spec"]["containers"][0]["command"]
    assert command == ["kube-scheduler", "--leader-elect=true", "--feature-gates=A=true,DRAExtendedResource=false"]


def test_switching_back_leaves_one_flag() -> None:
    off = patch_manifest(MANIFEST, "DRAExtendedResource", False)
    command = yaml.safe_load(patch_manifest(off, "DRAExtendedResource", True))["spec"]["containers"][0]["command"]
    assert [c for c in command if c.startswith("--feature-gates")] == [
        "--feature-gates=A=true,DRAExtendedResource=true"
    ]


def test_kubelet_config_gate_merged() -> None:
    text = "kind: KubeletConfiguration\nfailCgroupV1: false\nfeatureGates:\n  A: true\n"
    config = yaml.safe_load(patch_kubelet_config(text, "DRAExtendedResource", False))
    assert config["featureGates"] == {"A": True, "DRAExtendedResource": False} and config["failCgroupV1"] is False
    assert yaml.safe_load(patch_kubelet_config("kind: KubeletConfiguration\n", "G", True))["featureGates"] == {
        "G": True
    }
