from __future__ import annotations

import re

import pytest

from fake_driver.inventory import PROFILES, Version, build_inventory, gpu_uuid


@pytest.mark.parametrize("profile", PROFILES.values(), ids=list(PROFILES))
def test_inventory_is_deterministic_and_unique(profile):
    first = build_inventory(profile, "node-a", 8)
    again = build_inventory(profile, "node-a", 8)
    other_node = build_inventory(profile, "node-b", 8)
    assert first == again
    assert [g.name for g in first.gpus] == [f"gpu-{i}" for i in range(8)]
    assert [g.index for g in first.gpus] == list(range(8))
    assert len({g.uuid for g in first.gpus}) == 8
    assert not {g.uuid for g in first.gpus} & {g.uuid for g in other_node.gpus}


def test_uuid_is_pinned():
    """The identity must never drift: the suite compares uuids across plugin restarts/versions."""
    assert (
        gpu_uuid(PROFILES["generic"], "kind-worker", 0) == "gpu-" + gpu_uuid(PROFILES["nvidia"], "kind-worker", 0)[4:]
    )
    assert re.fullmatch(
        r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        gpu_uuid(PROFILES["nvidia"], "kind-worker", 0),
    )
    assert gpu_uuid(PROFILES["generic"], "kind-worker", 0) == "gpu-231ffcf1-a1d2-5cc8-afe1-e5d4a4d8733e"


def test_generic_profile_attributes():
    gpu = build_inventory(PROFILES["generic"], "node-a", 2).gpus[1]
    assert gpu.attributes == {
        "type": "gpu",
        "uuid": gpu.uuid,
        "index": 1,
        "model": "FAKE-GPU-80GB",
        "driverVersion": Version("1.0.0"),
    }
    assert gpu.capacity == {"memory": "80Gi"}
    assert gpu.uuid.startswith("gpu-")


def test_nvidia_profile_mimics_vendor_naming():
    profile = PROFILES["nvidia"]
    assert (profile.default_driver_name, profile.default_resource_name) == ("gpu.nvidia.com", "nvidia.com/gpu")
    gpu = build_inventory(profile, "node-a", 1).gpus[0]
    assert gpu.name == "gpu-0"
    assert gpu.uuid.startswith("GPU-")
    assert gpu.attributes["type"] == "gpu"
    assert gpu.attributes["uuid"] == gpu.uuid
    assert gpu.attributes["productName"] == gpu.model
    assert gpu.attributes["brand"] == "Nvidia"
    assert isinstance(gpu.attributes["driverVersion"], Version)
    assert re.fullmatch(r"\d+\.\d+\.\d+", gpu.attributes["driverVersion"].value)
    assert gpu.capacity == {"memory": "80Gi"}


@pytest.mark.parametrize("profile", PROFILES.values(), ids=list(PROFILES))
def test_models_are_single_tokens(profile):
    """The exposure file and the probe output carry the model as one whitespace-free token."""
    assert not re.search(r"\s", profile.model)


def test_zero_devices():
    assert build_inventory(PROFILES["generic"], "node-a", 0).gpus == ()
