"""make bench's arithmetic and plots, from made-up batches (no cluster)."""
from __future__ import annotations

from pathlib import Path

from conformance.bench import MECHANISMS, Batch, bench_pod, plot, summarise
from conformance.lib.profile import load


def _batches() -> list[Batch]:
    # device-plugin twice as fast to run a pod and to bind the batch as the two DRA ways
    speed = {"device-plugin": 1.0, "dra-extended": 2.0, "claim-template": 2.0}
    return [Batch(m, [0.5 * speed[m], 1.0 * speed[m]], [0.1, 2.0 * speed[m]], 2 / (2.0 * speed[m]))
            for _ in range(2) for m in MECHANISMS]


def test_ratios_are_against_the_device_plugin() -> None:
    result = summarise(_batches())
    assert result["ratio_to_device_plugin"]["device-plugin"] == {"latency": 1.0, "throughput": 1.0}
    assert result["ratio_to_device_plugin"]["dra-extended"] == {"latency": 2.0, "throughput": 0.5}
    assert result["bound_to_running_median_s"]["device-plugin"] == 0.75


def test_plots_are_written_as_png(tmp_path: Path) -> None:
    written = plot(_batches(), tmp_path)
    assert [p.name for p in written] == ["bench-latency.png", "bench-throughput.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written)


def test_each_mechanism_asks_for_its_gpu_its_own_way() -> None:
    profile = load("fake-gpu")
    dra, dp, claim = (bench_pod("p", profile, m)["spec"] for m in MECHANISMS)
    name = profile.extended_resource_name
    assert dra["containers"][0]["resources"]["limits"] == {name: "1"} == dp["containers"][0]["resources"]["limits"]
    assert (dra["nodeSelector"], dp["nodeSelector"]) == ({"fake-gpu.kep5004.io/mode": "dra"},
                                                         {"fake-gpu.kep5004.io/mode": "device-plugin"})
    assert claim["resourceClaims"][0]["resourceClaimTemplateName"] and "limits" not in claim["containers"][0]["resources"]
