"""The scale benchmark's objects and table (the run itself needs a cluster and kwok)."""

from __future__ import annotations

import pytest

from conformance.rigs import scale_bench
from conformance.rigs.scale_bench import NAMES, Batch, device_class, fake_node, gpu_pod, node_slice, table


def test_a_fake_node_offers_the_gpus_under_both_names() -> None:
    node, slice_ = fake_node("fake-1", 8), node_slice("fake-1", 8)
    assert node["status"]["allocatable"][NAMES["device-plugin"]] == "8"
    assert NAMES["dra"] not in node["status"]["capacity"], "a name a node lists is never served by DRA there"
    assert node["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert slice_["spec"]["nodeName"] == "fake-1" and len(slice_["spec"]["devices"]) == 8
    assert device_class()["spec"]["extendedResourceName"] == NAMES["dra"]


def test_pods_go_only_to_fake_nodes_and_ask_one_gpu() -> None:
    pod = gpu_pod("p-1", "dra", "img")
    assert pod["spec"]["nodeSelector"] == {"type": "kwok"}
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {NAMES["dra"]: "1"}


def test_table_has_the_median_rate_and_ratio_per_node_count() -> None:
    batches = [
        Batch(100, "dra", 500, 10.0, []),
        Batch(100, "device-plugin", 500, 5.0, []),
        Batch(1000, "dra", 5000, 50.0, []),
        Batch(1000, "device-plugin", 5000, 100.0, []),
    ]
    rows = table(batches).splitlines()[2:]
    assert rows == ["| 100 | 500 | 50.0 | 100.0 | 0.50 |", "| 1000 | 5000 | 100.0 | 50.0 | 2.00 |"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--nodes", "1000,100"], "--nodes must ascend"),
        (["--nodes", "many"], "not a comma-separated list"),
        (["--pods-per-node", "9"], "--pods-per-node be 1..--gpus"),
    ],
)
def test_bad_arguments_stop_before_anything_is_made(args, message, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        scale_bench.main(args)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
