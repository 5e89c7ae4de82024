"""The scale benchmark's objects and table (the run itself needs a cluster and kwok)."""

from __future__ import annotations

import pytest

from conformance.lib.objects.pods import node_slice
from conformance.rigs import scale_bench
from conformance.rigs.scale_bench import (
    NAMES,
    Batch,
    batch_size,
    device_class,
    fake_node,
    gpu_pod,
    table,
)


def test_a_fake_node_offers_the_gpus_under_both_names() -> None:
    node, slice_ = fake_node("fake-1", 8), node_slice("fake-1-gpus", scale_bench.DRIVER, "fake-1", 8)
    assert node["status"]["allocatable"][NAMES["device-plugin"]] == "8"
    assert NAMES["dra"] not in node["status"]["capacity"], "a name a node lists is never served by DRA there"
    assert node["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert slice_["spec"]["nodeName"] == "fake-1" and len(slice_["spec"]["devices"]) == 8
    assert device_class()["spec"]["extendedResourceName"] == NAMES["dra"]


def test_pods_go_only_to_fake_nodes_and_ask_one_gpu() -> None:
    pod = gpu_pod("p-1", "dra", "img")
    assert pod["spec"]["nodeSelector"] == {"type": "kwok"}
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {NAMES["dra"]: "1"}


def test_table_has_rates_and_ratios_over_the_rounds_beside_upstream() -> None:
    batches = [
        Batch(100, "dra", 1, 500, 10.0, []),  # 50 pods/s
        Batch(100, "device-plugin", 1, 500, 5.0, []),  # 100
        Batch(100, "dra", 2, 500, 5.0, []),  # 100
        Batch(100, "device-plugin", 2, 500, 2.5, []),  # 200
        Batch(100, "dra", 3, 500, 20.0, []),  # 25
        Batch(100, "device-plugin", 3, 500, 2.0, []),  # 250
        Batch(5000, "device-plugin", 1, 5000, 50.0, []),  # 100, no DRA batch: no ratio
    ]
    lines = table(batches).splitlines()
    assert lines[2] == "| 100 | 500 | 3 | 50.0 [25.0-100.0] | 200.0 [100.0-250.0] | 0.50 [0.10-0.50] |"
    assert lines[3] == "| 5000 | 5000 | 0 | - | 100.0 [100.0-100.0] | - |"
    upstream = {line.split(" | ")[0]: line for line in lines[7:]}
    assert upstream[
        "| misc SchedulingWithExtendedResource/5000pods_5000nodes (5000 pods, 5000 nodes, device-plugin)"
    ].endswith("| 180 | 100.0 [100.0-100.0] (5000 pods) |")
    assert any(line.endswith("| 120-197 | not measured at 500 nodes |") for line in lines)


def test_a_batch_is_pods_per_node_times_nodes_but_at_most_max_pods() -> None:
    assert [batch_size(n, 5, 5000) for n in (100, 1000, 5000)] == [500, 5000, 5000]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--nodes", "1000,100"], "--nodes must ascend"),
        (["--nodes", "many"], "not a comma-separated list"),
        (["--pods-per-node", "9"], "--pods-per-node be 1..--gpus"),
        (["--max-pods", "0"], "--max-pods must be at least 1"),
    ],
)
def test_bad_arguments_stop_before_anything_is_made(args, message, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        scale_bench.main(args)
    assert exit_.value.code == 2 and message in capsys.readouterr().err
