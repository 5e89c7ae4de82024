from __future__ import annotations

from pathlib import Path

import pytest

from fake_driver.config import ConfigError, load_config


def problems_of(env: dict[str, str]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(env)
    return caught.value.problems


def write_yaml(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


def test_defaults():
    config = load_config({"NODE_NAME": "kind-worker"})
    assert config.profile.name == "generic"
    assert config.driver_name == "gpu.example.com"
    assert config.resource_name == "example.com/gpu"
    assert config.device_count == 8
    assert config.state_dir == Path("/var/run/fake-gpu")
    assert config.cdi_dir == Path("/var/run/cdi")
    assert config.registration_socket == Path("/var/lib/kubelet/plugins_registry/gpu.example.com-reg.sock")
    assert config.dra_socket == Path("/var/lib/kubelet/plugins/gpu.example.com/dra.sock")
    assert config.checkpoint_path == Path("/var/lib/kubelet/plugins/gpu.example.com/checkpoint.json")
    assert config.kubelet_socket == Path("/var/lib/kubelet/device-plugins/kubelet.sock")
    assert config.device_plugin_socket == Path("/var/lib/kubelet/device-plugins/fake-gpu-example.com_gpu.sock")
    assert config.cdi_kind.kind == "k8s.gpu.example.com/gpu"
    assert config.delete_slices_on_exit is True
    assert config.device_plugin_cdi is False


def test_nvidia_profile_defaults():
    config = load_config({"NODE_NAME": "n", "FAKE_GPU_PROFILE": "nvidia"})
    assert (config.driver_name, config.resource_name) == ("gpu.nvidia.com", "nvidia.com/gpu")


def test_file_then_env_and_per_node_overrides(tmp_path):
    path = write_yaml(
        tmp_path,
        """
profile: nvidia
driverName: gpu.test.io
devicesPerNode: 4
nodeDevices: {small-node: 2, empty-node: 0}
resourceName: test.io/gpu
deleteSlicesOnExit: false
""",
    )
    base = {"FAKE_GPU_CONFIG": path}
    assert load_config({**base, "NODE_NAME": "big-node"}).device_count == 4
    assert load_config({**base, "NODE_NAME": "small-node"}).device_count == 2
    assert load_config({**base, "NODE_NAME": "empty-node"}).device_count == 0
    overridden = load_config(
        {
            **base,
            "NODE_NAME": "big-node",
            "FAKE_GPU_DRIVER_NAME": "gpu.env.io",
            "FAKE_GPU_DEVICES_PER_NODE": "3",
            "FAKE_GPU_DELETE_SLICES_ON_EXIT": "true",
        }
    )
    assert (overridden.driver_name, overridden.device_count) == ("gpu.env.io", 3)
    assert overridden.resource_name == "test.io/gpu"
    assert overridden.delete_slices_on_exit is True


def test_node_devices_patterns_match_node_names_exact_names_first(tmp_path):
    path = write_yaml(tmp_path, "devicesPerNode: 4\nnodeDevices: {'*-worker2': 2, 'kind-worker2': 6, '*-worker': 36}\n")
    count = {
        node: load_config({"FAKE_GPU_CONFIG": path, "NODE_NAME": node}).device_count
        for node in ("kind-worker", "kind-worker2", "other-worker2", "kind-worker3")
    }
    assert count == {"kind-worker": 36, "kind-worker2": 6, "other-worker2": 2, "kind-worker3": 4}


def test_exposure_is_files_unless_set_and_unknown_ones_are_named():
    assert load_config({"NODE_NAME": "n"}).exposure == "files"
    assert load_config({"NODE_NAME": "n", "FAKE_GPU_EXPOSURE": "env-names"}).exposure == "env-names"
    with pytest.raises(ConfigError, match="exposure .*'mounts' is not one of files, env-names"):
        load_config({"NODE_NAME": "n", "FAKE_GPU_EXPOSURE": "mounts"})


@pytest.mark.parametrize(
    "env,expected",
    [
        ({}, "NODE_NAME is not set"),
        ({"FAKE_GPU_PROFILE": "amd"}, "profile 'amd' is unknown; choose one of: generic, nvidia"),
        (
            {"FAKE_GPU_DEVICES_PER_NODE": "-1"},
            "devicesPerNode (from FAKE_GPU_DEVICES_PER_NODE): -1 is out of range 0..128",
        ),
        ({"FAKE_GPU_DEVICES_PER_NODE": "129"}, "129 is out of range 0..128"),
        ({"FAKE_GPU_DEVICES_PER_NODE": "eight"}, "'eight' is not an integer"),
        ({"FAKE_GPU_DRIVER_NAME": "GPU.Example.com"}, "driverName 'GPU.Example.com' must be a lowercase DNS subdomain"),
        ({"FAKE_GPU_DRIVER_NAME": "a" * 60 + ".com"}, "of at most 63 characters"),
        ({"FAKE_GPU_DRIVER_NAME": "gpu_example.com"}, "driverName 'gpu_example.com'"),
        (
            {"FAKE_GPU_RESOURCE_NAME": "gpu"},
            "resourceName 'gpu' is not a valid extended resource name: needs a domain prefix",
        ),
        ({"FAKE_GPU_RESOURCE_NAME": "kubernetes.io/gpu"}, "reserved for native resources"),
        ({"FAKE_GPU_RESOURCE_NAME": "deviceclass.resource.kubernetes.io/gpu"}, "reserved for native resources"),
        ({"FAKE_GPU_RESOURCE_NAME": "example.com/-gpu"}, "name part '-gpu'"),
        ({"FAKE_GPU_RESOURCE_NAME": "Example_com/gpu"}, "prefix 'Example_com' is not a valid DNS subdomain"),
        (
            {"FAKE_GPU_STATE_DIR": "relative/dir"},
            "stateDir (from FAKE_GPU_STATE_DIR): 'relative/dir' is not an absolute path",
        ),
        ({"FAKE_GPU_DELETE_SLICES_ON_EXIT": "maybe"}, "'maybe' is not a boolean"),
    ],
)
def test_single_problem_is_named_exactly(env, expected):
    full_env = {"NODE_NAME": "n", **env} if env else {}
    problems = problems_of(full_env)
    assert len(problems) == 1, problems
    assert expected in problems[0]


def test_file_problems_are_reported_with_the_file(tmp_path):
    path = write_yaml(tmp_path, "profile: generic\ndevicesPerNod: 4\nnodeDevices: {n1: 200}\n")
    problems = problems_of({"NODE_NAME": "n", "FAKE_GPU_CONFIG": path})
    assert any(f"{path}: unknown key 'devicesPerNod'" in p for p in problems), problems
    assert any("nodeDevices" in p and "node 'n1': 200 is out of range" in p for p in problems), problems


def test_all_problems_are_collected():
    problems = problems_of({"FAKE_GPU_PROFILE": "nope", "FAKE_GPU_DEVICES_PER_NODE": "-3"})
    assert len(problems) == 3, problems
    message = str(ConfigError(problems))
    assert message.startswith("invalid configuration:\n  - ")


def test_missing_or_broken_file(tmp_path):
    assert "cannot read" in problems_of({"NODE_NAME": "n", "FAKE_GPU_CONFIG": str(tmp_path / "absent.yaml")})[0]
    broken = write_yaml(tmp_path, "profile: [unclosed\n")
    assert "not valid YAML" in problems_of({"NODE_NAME": "n", "FAKE_GPU_CONFIG": broken})[0]
    listing = write_yaml(tmp_path, "- a\n- b\n")
    assert "top level must be a mapping" in problems_of({"NODE_NAME": "n", "FAKE_GPU_CONFIG": listing})[0]


def test_defects_are_off_by_default_and_unknown_ones_are_named():
    assert load_config({"NODE_NAME": "n"}).defects == frozenset()
    assert load_config({"NODE_NAME": "n", "FAKE_GPU_DEFECTS": "no-unprepare, extra-device"}).defects == {
        "no-unprepare",
        "extra-device",
    }
    with pytest.raises(ConfigError, match="unknown defect.*bogus"):
        load_config({"NODE_NAME": "n", "FAKE_GPU_DEFECTS": "bogus"})
