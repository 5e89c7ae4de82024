"""Preflight judges the driver's published pools (no cluster: the slices are given)."""

from __future__ import annotations

from conformance.lib.profile import load
from conformance.lib.setup import preflight


class Api:
    def __init__(self, slices: list[dict], nodes: list[str]) -> None:
        self.slices, self.nodes = slices, nodes

    def list(self, api_version, kind, namespace=None, **selectors):
        if kind == "Node":
            return [{"metadata": {"name": n}} for n in self.nodes]
        return self.slices


def slice_of(
    pool: str, node: str, devices: list[str], generation: int = 1, count: int = 1, driver: str = "gpu.nvidia.com"
) -> dict:
    return {
        "spec": {
            "driver": driver,
            "nodeName": node,
            "devices": [{"name": d} for d in devices],
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        }
    }


def test_sound_pools_pass() -> None:
    api = Api(
        [
            slice_of("w1", "w1", ["gpu-0", "gpu-1"]),
            slice_of("w2", "w2", ["gpu-0"]),
            slice_of("w1", "w1", ["gpu-0", "gpu-0"], generation=0),
        ],
        ["w1", "w2"],
    )  # an older generation is ignored
    item = preflight.pool_item(api, load("fake-gpu"))
    assert item.verdict == "passed", item.detail


def test_a_device_twice_in_a_pool_a_pool_on_two_nodes_and_an_unknown_node_are_named() -> None:
    api = Api(
        [
            slice_of("p", "w1", ["gpu-0", "gpu-1"], count=2),
            slice_of("p", "w2", ["gpu-1"], count=2),
            slice_of("q", "gone", ["gpu-0"]),
        ],
        ["w1", "w2"],
    )
    item = preflight.pool_item(api, load("fake-gpu"))
    assert item.verdict == "failed"
    assert "pool p spans nodes ['w1', 'w2']" in item.detail
    assert "pool p publishes device(s) ['gpu-1'] more than once" in item.detail
    assert "pool q names node(s) ['gone'] that do not exist" in item.detail


def test_a_pool_missing_slices_is_named() -> None:
    item = preflight.pool_item(Api([slice_of("p", "w1", ["gpu-0"], count=2)], ["w1"]), load("fake-gpu"))
    assert item.verdict == "failed" and "has 1 slice(s) of generation 1, they say [2]" in item.detail
