"""Rendering of kind configs and version selection (no cluster needed)."""

from __future__ import annotations

import pytest
import yaml

from clusters.host import HostFacts
from clusters.topology import MODE_LABEL, ClusterSpec, TopologyError, config_hash, parse_gates, render
from clusters.versions import FEATURE_GATE, resolve, supported_versions
from kube.versions import KubeVersion, UnknownVersionError

V135, V136, V137 = (KubeVersion(1, m, 0) for m in (35, 36, 37))
OUR_HOSTS = HostFacts(cgroup_v1=True, has_cap_sys_resource=False)
ORDINARY_HOST = HostFacts(cgroup_v1=False, has_cap_sys_resource=True)


def patches(config: dict) -> list[dict]:
    return [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]]


def test_dra_topology_has_two_dra_workers() -> None:
    config = render(ClusterSpec("dra", V137), ORDINARY_HOST, "node:x")
    roles = [(n["role"], n.get("labels", {}).get(MODE_LABEL)) for n in config["nodes"]]
    assert roles == [("control-plane", None), ("worker", "dra"), ("worker", "dra")]
    assert all(n["image"] == "node:x" for n in config["nodes"])


def test_mixed_topology_labels_one_worker_per_mechanism() -> None:
    config = render(ClusterSpec("mixed", V136), ORDINARY_HOST, "node:x")
    assert [n.get("labels", {}).get(MODE_LABEL) for n in config["nodes"]] == [None, "dra", "device-plugin"]


def test_unknown_topology_is_rejected() -> None:
    with pytest.raises(TopologyError, match="unknown topology 'gpu'"):
        render(ClusterSpec("gpu", V137), ORDINARY_HOST, "node:x")


@pytest.mark.parametrize(("version", "expected"), [(V135, {FEATURE_GATE: True}), (V136, None), (V137, None)])
def test_gate_is_set_only_where_it_is_off_by_default(version: KubeVersion, expected: dict | None) -> None:
    assert render(ClusterSpec("dra", version), ORDINARY_HOST, "n").get("featureGates") == expected


def test_gate_can_be_switched_off_on_beta_but_not_on_ga() -> None:
    off = render(ClusterSpec("dra", V136, gates={FEATURE_GATE: False}), ORDINARY_HOST, "n")
    assert off["featureGates"] == {FEATURE_GATE: False}
    with pytest.raises(TopologyError, match="locked"):
        render(ClusterSpec("dra", V137, gates={FEATURE_GATE: False}), ORDINARY_HOST, "n")


def test_workarounds_apply_only_on_hosts_that_need_them() -> None:
    ours = render(ClusterSpec("dra", V137), OUR_HOSTS, "n")
    ordinary = render(ClusterSpec("dra", V137), ORDINARY_HOST, "n")
    assert {"kind": "KubeletConfiguration", "failCgroupV1": False, "cgroupDriver": "cgroupfs"} in patches(ours)
    # The runc table last: a key after its header would land in it.
    assert ours["containerdConfigPatches"][0].endswith("runc.options]\n  SystemdCgroup = false\n")
    assert "restrict_oom_score_adj = true" in ours["containerdConfigPatches"][0]
    assert not any(p["kind"] == "KubeletConfiguration" for p in patches(ordinary))
    assert "restrict_oom_score_adj" not in ordinary["containerdConfigPatches"][0]
    assert "SystemdCgroup" not in ordinary["containerdConfigPatches"][0]
    assert "enable_cdi = true" in ordinary["containerdConfigPatches"][0]


def test_no_kindnetd_and_no_coredns() -> None:
    config = render(ClusterSpec("dra", V137), ORDINARY_HOST, "n")
    assert config["networking"]["disableDefaultCNI"] is True
    init = next(p for p in patches(config) if p["kind"] == "InitConfiguration")
    assert "addon/coredns" in init["skipPhases"] and "preflight" in init["skipPhases"]


def test_the_control_plane_gets_the_probe_patches_and_only_it() -> None:
    config = render(ClusterSpec("dra", V137), ORDINARY_HOST, "n")
    control_plane, *workers = config["nodes"]
    assert {"containerPath": "/kep5004/kubeadm-patches", "readOnly": True}.items() <= control_plane["extraMounts"][
        0
    ].items()
    assert all(m["containerPath"] != "/kep5004/kubeadm-patches" for w in workers for m in w["extraMounts"])
    init = next(p for p in patches(config) if p["kind"] == "InitConfiguration")
    assert init["patches"] == {"directory": "/kep5004/kubeadm-patches"}


def test_config_hash_changes_with_config_and_image() -> None:
    a = render(ClusterSpec("dra", V137), ORDINARY_HOST, "n")
    b = render(ClusterSpec("dra", V137), OUR_HOSTS, "n")
    assert config_hash(a, "sha256:1") == config_hash(a, "sha256:1")
    assert len({config_hash(a, "sha256:1"), config_hash(b, "sha256:1"), config_hash(a, "sha256:2")}) == 3


def test_cluster_names_differ_per_topology_and_version() -> None:
    assert ClusterSpec("dra", V137).name == "kep5004-dra-137"
    assert ClusterSpec("mixed", V136).name == "kep5004-mixed-136"
    assert ClusterSpec("dra", V137, purpose="soak").name == "kep5004-soak-dra-137"


def test_gate_overrides_parse_and_name_the_cluster() -> None:
    assert parse_gates("DRAExtendedResource=false, Other=TRUE") == {FEATURE_GATE: False, "Other": True}
    with pytest.raises(TopologyError, match="NAME=true"):
        parse_gates("DRAExtendedResource")
    off = ClusterSpec("dra", V136, gates={FEATURE_GATE: False})
    assert off.name.startswith("kep5004-dra-136-g") and off.name != ClusterSpec("dra", V136).name


def test_version_resolution() -> None:
    pinned = supported_versions()
    assert [v.tag for v in pinned] == ["v1.37.2", "v1.36.3", "v1.35.4"]
    assert resolve("1.35").tag == "v1.35.4"
    assert resolve(None).tag == "v1.37.2"
    assert resolve("1.36").tag == "v1.36.3"
    assert resolve("v1.37.2").tag == "v1.37.2"
    with pytest.raises(UnknownVersionError, match="not pinned"):
        resolve("1.30")
    with pytest.raises(UnknownVersionError, match="not a Kubernetes release version"):
        KubeVersion.parse("latest")


def test_a_purpose_names_a_cluster_of_its_own() -> None:
    assert ClusterSpec("dra", V137, purpose="repro").name == "kep5004-repro-dra-137"
    for bad in ("Repro", "re_pro", "1repro", "a" * 17):
        with pytest.raises(TopologyError, match="cluster purpose"):
            ClusterSpec("dra", V137, purpose=bad)


def test_older_kubelets_run_on_workers_of_their_own_node_image() -> None:
    spec = ClusterSpec("dra", V137, kubelet_version=V136)
    assert spec.name == "kep5004-dra-137-k136"
    config = render(spec, ORDINARY_HOST, "node:137", "node:136")
    assert [n["image"] for n in config["nodes"]] == ["node:137", "node:136", "node:136"]
    assert "featureGates" not in config  # on by default in 1.36 and 1.37


def test_the_gate_is_set_where_the_older_kubelets_have_it_off() -> None:
    config = render(ClusterSpec("dra", V136, kubelet_version=V135), ORDINARY_HOST, "node:136", "node:135")
    assert config["featureGates"] == {FEATURE_GATE: True}


@pytest.mark.parametrize("kubelet", [V137, KubeVersion(1, 33, 0), KubeVersion(2, 36, 0)])
def test_kubelets_are_older_by_one_to_three_minors(kubelet: KubeVersion) -> None:
    with pytest.raises(TopologyError, match="1 to 3 minors older"):
        ClusterSpec("dra", V137, kubelet_version=kubelet)
