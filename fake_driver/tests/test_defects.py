"""Self-check defects change exactly what they say, and only when asked for."""

from __future__ import annotations

from fake_driver import manifests
from fake_driver.defects import DEFECTS
from fake_driver.dra_plugin.slices import SlicePublisher
from fake_driver.dra_plugin.state import held
from fake_driver.inventory import PROFILES, build_inventory


def test_every_defect_names_its_area_and_effect():
    assert len(DEFECTS) >= 8 and all(area and effect for area, effect in DEFECTS.values())


def test_deviceclass_without_name_drops_only_the_field():
    normal = manifests.render_deviceclasses({"PROFILE": "nvidia"})
    broken = manifests.render_deviceclasses({"PROFILE": "nvidia", "DEFECTS": "[deviceclass-without-name]"})
    assert "extendedResourceName:" in normal and "extendedResourceName:" not in broken
    assert broken.count("kind: DeviceClass") == normal.count("kind: DeviceClass")


def test_slice_defects():
    inventory = build_inventory(PROFILES["nvidia"], "n1", 4)
    ok = SlicePublisher(None, "gpu.nvidia.com", inventory)._devices
    short = SlicePublisher(None, "gpu.nvidia.com", inventory, frozenset({"slice-missing-device"}))._devices
    wrong = SlicePublisher(None, "gpu.nvidia.com", inventory, frozenset({"slice-wrong-id"}))._devices
    assert len(short) == len(ok) - 1
    assert [d["name"] for d in wrong] == [d["name"] for d in ok] and wrong != ok
    shown = {g.uuid for g in inventory.gpus}
    assert not any(v.get("string") in shown for d in wrong for v in d["attributes"].values())


def test_state_lines_name_claims_still_held():
    lines = held(
        ["uid-b", "uid-a"], ["k8s.x_gpu-uid-c.json", "other.json", "k8s.x_gpu-device-plugin.json"], "k8s.x_gpu-"
    )
    assert lines == ["prepared uid-a", "prepared uid-b", "cdi-spec device-plugin", "cdi-spec uid-c"]
