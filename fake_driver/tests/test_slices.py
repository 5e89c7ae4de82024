from __future__ import annotations

from fake_driver.dra_plugin.slices import SlicePublisher
from fake_driver.inventory import PROFILES, build_inventory
from fake_driver.tests.helpers import FakeKubeApi

DRIVER = "gpu.nvidia.com"


def publisher(api: FakeKubeApi, count: int = 2, node: str = "node-a") -> SlicePublisher:
    return SlicePublisher(api, DRIVER, build_inventory(PROFILES["nvidia"], node, count))


def test_first_publish_creates_one_slice_for_the_node_pool():
    api = FakeKubeApi(node_uid="uid-of-node-a")
    publisher(api).reconcile()
    [resource_slice] = api.slices.values()
    meta, spec = resource_slice["metadata"], resource_slice["spec"]
    assert meta["name"].startswith(f"node-a-{DRIVER}-")
    assert meta["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "uid-of-node-a", "controller": True}
    ]
    assert spec["driver"] == DRIVER
    assert spec["nodeName"] == "node-a"
    assert spec["pool"] == {"name": "node-a", "generation": 1, "resourceSliceCount": 1}
    gpu0 = build_inventory(PROFILES["nvidia"], "node-a", 1).gpus[0]
    assert spec["devices"][0] == {
        "name": "gpu-0",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": gpu0.uuid},
            "index": {"int": 0},
            "productName": {"string": "NVIDIA-FAKE-H100-80GB"},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Hopper"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "cudaDriverVersion": {"version": "12.8.0"},
            "driverVersion": {"version": "570.124.6"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }
    assert [d["name"] for d in spec["devices"]] == ["gpu-0", "gpu-1"]


def test_unchanged_inventory_writes_nothing():
    api = FakeKubeApi()
    publisher(api).reconcile()
    api.calls.clear()
    publisher(api).reconcile()
    assert api.calls == []


def test_changed_inventory_bumps_generation_in_place():
    api = FakeKubeApi()
    publisher(api, count=2).reconcile()
    [name] = api.slices
    publisher(api, count=3).reconcile()
    assert list(api.slices) == [name]
    spec = api.slices[name]["spec"]
    assert spec["pool"]["generation"] == 2
    assert len(spec["devices"]) == 3


def test_extra_slices_are_removed_and_generation_outranks_them():
    api = FakeKubeApi()
    for generation in (4, 7):
        api.slices[f"old-{generation}"] = {
            "metadata": {"name": f"old-{generation}"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "node-a",
                "pool": {"name": "renamed-pool", "generation": generation, "resourceSliceCount": 2},
                "devices": [],
            },
        }
    api.slices["other-node"] = {
        "metadata": {"name": "other-node"},
        "spec": {"driver": DRIVER, "nodeName": "node-b", "pool": {"name": "node-b"}},
    }
    publisher(api).reconcile()
    names = sorted(api.slices)
    assert len(names) == 2 and "other-node" in names
    [ours] = [api.slices[n] for n in names if n != "other-node"]
    assert ours["spec"]["pool"] == {"name": "node-a", "generation": 8, "resourceSliceCount": 1}


def test_delete_all_removes_only_this_nodes_slices():
    api = FakeKubeApi()
    publisher(api, node="node-a").reconcile()
    publisher(api, node="node-b").reconcile()
    publisher(api, node="node-a").delete_all()
    assert [s["spec"]["nodeName"] for s in api.slices.values()] == ["node-b"]
