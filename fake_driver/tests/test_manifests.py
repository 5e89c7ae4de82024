"""Deployment manifests render to valid objects that match what the plugins expect."""

from __future__ import annotations

import pytest
import yaml

from fake_driver import manifests
from fake_driver.config import DEFAULT_READY_PORT, load_config


def objects(text: str) -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(text)}


@pytest.mark.parametrize("profile", ["generic", "nvidia"])
def test_driver_manifests_render_completely(profile, tmp_path):
    text = manifests.render_driver({"PROFILE": profile})
    assert "${" not in text
    objs = objects(text)
    namespace = manifests.NAMESPACE
    assert ("Namespace", namespace) in objs
    # The ConfigMap's config is what the plugins load at start: it must be valid for them.
    config_file = tmp_path / "config.yaml"
    config_file.write_text(objs[("ConfigMap", "fake-gpu-driver-config")]["data"]["config.yaml"])
    config = load_config({"NODE_NAME": "kind-worker", "FAKE_GPU_CONFIG": str(config_file)})
    assert config.profile.name == profile
    assert config.driver_name == config.profile.default_driver_name


def test_rbac_is_least_privilege():
    objs = objects(manifests.render_driver())
    rules = objs[("ClusterRole", "fake-gpu-dra-plugin")]["rules"]
    assert rules == [
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]},
        {
            "apiGroups": ["resource.k8s.io"],
            "resources": ["resourceslices"],
            "verbs": ["create", "get", "list", "watch", "update", "delete"],
        },
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
    ]
    assert objs[("ServiceAccount", "fake-gpu-device-plugin")]["automountServiceAccountToken"] is False


@pytest.mark.parametrize(
    "name,module,mode,host_paths",
    [
        (
            manifests.DRA_DAEMONSET,
            "fake_driver.dra_plugin",
            "dra",
            {"/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry", "/var/run/cdi", "/var/run/fake-gpu"},
        ),
        (
            manifests.DEVICE_PLUGIN_DAEMONSET,
            "fake_driver.device_plugin",
            "device-plugin",
            {"/var/lib/kubelet/device-plugins", "/var/run/cdi", "/var/run/fake-gpu"},
        ),
    ],
)
def test_daemonsets(name, module, mode, host_paths):
    ds = objects(manifests.render_driver({"IMAGE": "img:1"}))[("DaemonSet", name)]
    pod = ds["spec"]["template"]["spec"]
    [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": manifests.MODE_LABEL, "operator": "In", "values": [mode, "both"]}]
    [container] = pod["containers"]
    assert container["image"] == "img:1"
    assert container["imagePullPolicy"] == "Never"
    assert container["command"] == ["python3", "-m", module]
    probe = container["readinessProbe"]["httpGet"]  # an HTTP probe: no process started in the container each period
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert probe["path"] == "/readyz" and ports[probe["port"]] == DEFAULT_READY_PORT
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert {v["hostPath"]["path"] for v in volumes.values() if "hostPath" in v} == host_paths
    mounted = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    for volume_name, volume in volumes.items():
        if "hostPath" in volume:  # same path inside: the kubelet and runtime see the plugin's paths
            assert mounted[volume_name] == volume["hostPath"]["path"]


def test_deviceclasses():
    objs = objects(
        manifests.render_deviceclasses({"DRIVER_NAME": "gpu.test.io", "EXTENDED_RESOURCE_NAME": "test.io/gpu"})
    )
    explicit = objs[("DeviceClass", "gpu.test.io")]
    implicit = objs[("DeviceClass", "implicit.gpu.test.io")]
    assert explicit["spec"]["extendedResourceName"] == "test.io/gpu"
    assert "extendedResourceName" not in implicit["spec"]
    for device_class in (explicit, implicit):
        assert device_class["apiVersion"] == "resource.k8s.io/v1"
        assert device_class["spec"]["selectors"] == [{"cel": {"expression": 'device.driver == "gpu.test.io"'}}]


def test_nvidia_profile_defaults_flow_into_deviceclasses():
    objs = objects(manifests.render_deviceclasses({"PROFILE": "nvidia"}))
    assert objs[("DeviceClass", "gpu.nvidia.com")]["spec"]["extendedResourceName"] == "nvidia.com/gpu"


def test_missing_or_unknown_values_fail_loudly(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="PROFILE 'amd' is unknown"):
        manifests.render_driver({"PROFILE": "amd"})
    (tmp_path / "extra.yaml").write_text("name: ${NOT_A_KNOWN_VALUE}\n")
    monkeypatch.setattr(manifests, "DEPLOY_DIR", tmp_path)
    with pytest.raises(KeyError, match="NOT_A_KNOWN_VALUE"):
        manifests.render("extra.yaml")


def test_cli(capsys):
    assert manifests.main(["deviceclasses", "DRIVER_NAME=gpu.cli.io"]) == 0
    assert 'device.driver == "gpu.cli.io"' in capsys.readouterr().out
    assert manifests.main(["driver", "oops"]) == 2


def test_a_changed_config_rolls_the_plugin_pods():
    """The plugins read their config once: the pod templates carry its hash, so that applying a
    different configuration (another profile on a reused cluster) restarts them."""

    def hashes(**overrides):
        docs = [d for d in yaml.safe_load_all(manifests.render_driver(overrides)) if d and d["kind"] == "DaemonSet"]
        return {
            d["metadata"]["name"]: d["spec"]["template"]["metadata"]["annotations"]["fake-gpu.kep5004.io/config-hash"]
            for d in docs
        }

    base = hashes(PROFILE="nvidia")
    assert len(base) == 2 and base == hashes(PROFILE="nvidia")
    changed = hashes(PROFILE="nvidia", EXPOSURE="env-names")
    assert all(changed[name] != base[name] for name in base)
