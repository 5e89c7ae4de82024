"""make bench's arithmetic and plots, from made-up batches (no cluster)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.lib.profile import load
from conformance.rigs import bench
from conformance.rigs.bench import MECHANISMS, bench_pod
from conformance.rigs.bench_figures import Batch, PodTimes, plot, summarise, table


def _batches(rounds: int = 3) -> list[Batch]:
    """Every DRA pod twice as slow as a device-plugin pod at every step, the rounds a little apart."""
    speed = {"device-plugin": 1.0, "dra-extended": 2.0, "claim-template": 2.0}
    return [
        Batch(
            "held",
            m,
            2,
            r,
            [PodTimes(0.0, b * speed[m] * (1 + r / 10), (b + 0.5) * speed[m] * (1 + r / 10)) for b in (1.0, 2.0)],
        )
        for r in range(rounds)
        for m in MECHANISMS
    ]


def test_figures_are_medians_per_batch_and_spreads_over_rounds() -> None:
    figures = summarise(_batches())["figures"]["held"]["2"]
    assert figures["device-plugin"]["end_to_end_ms"] == pytest.approx(
        {"min": 2000.0, "median": 2200.0, "max": 2400.0, "rounds": 3}
    )
    assert figures["dra-extended"]["scheduled_to_running_ms"]["median"] == pytest.approx(1100.0)


def test_ratios_are_the_same_rounds_against_the_device_plugin_slower_above_one() -> None:
    ratios = summarise(_batches())["ratios"]["held"]["2"]
    for figure in ("to_scheduled_ms", "scheduled_to_running_ms", "end_to_end_ms", "pods_bound_per_s"):
        assert ratios["dra-extended"][figure] == pytest.approx({"min": 2.0, "median": 2.0, "max": 2.0, "rounds": 3})
    assert ratios["device-plugin"]["end_to_end_ms"]["median"] == 1.0


def test_the_table_prints_every_mechanism_and_ratio_side_by_side() -> None:
    text = table(summarise(_batches()))
    assert (
        "held, 2 pod(s) per batch: device-plugin | dra-extended | claim-template | dra-extended/device-plugin" in text
    )
    assert "end_to_end_ms            2200 [2000-2400] | 4400 [4000-4800]" in text and "2.00 [2.00-2.00]" in text


def test_plots_are_written_as_png(tmp_path: Path) -> None:
    written = plot(summarise(_batches()), tmp_path)
    assert [p.name for p in written] == ["bench-ratio.png", "bench-latency.png"]
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written)


def test_each_mechanism_asks_for_its_gpu_its_own_way() -> None:
    profile = load("fake-gpu")
    dp, dra, claim = (bench_pod("p", profile, m)["spec"] for m in MECHANISMS)
    name = profile.extended_resource_name
    assert dra["containers"][0]["resources"]["limits"] == {name: "1"} == dp["containers"][0]["resources"]["limits"]
    assert (dra["nodeSelector"], dp["nodeSelector"]) == (
        {"fake-gpu.kep5004.io/mode": "dra"},
        {"fake-gpu.kep5004.io/mode": "device-plugin"},
    )
    assert (
        claim["resourceClaims"][0]["resourceClaimTemplateName"] and "limits" not in claim["containers"][0]["resources"]
    )


class _Pod:
    def __init__(self, name: str, node: str | None, phase: str, version: str) -> None:
        self.metadata = SimpleNamespace(name=name, resource_version=version)
        self.spec = SimpleNamespace(node_name=node)
        self.status = SimpleNamespace(phase=phase)


class _EndingWatch:
    """A watch whose first stream ends with a broken response, as a busy API server's did."""

    def __init__(self) -> None:
        self.resumed_from: list[str | None] = []
        self.stopped = threading.Event()

    def stream(self, func, namespace, resource_version=None, **kwargs):
        self.resumed_from.append(resource_version)
        if len(self.resumed_from) == 1:
            yield {"object": _Pod("p-0", None, "Pending", "7")}
            raise bench.ProtocolError("Response ended prematurely")
        yield {"object": _Pod("p-0", "node-a", "Running", "9")}
        self.stopped.wait(5)  # an open stream with nothing to say, until the watch is stopped

    def stop(self) -> None:
        self.stopped.set()


def test_pod_watch_resumes_after_the_stream_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _EndingWatch()
    monkeypatch.setattr(bench.watch, "Watch", lambda: fake)
    monkeypatch.setattr(bench.client, "CoreV1Api", lambda api_client: SimpleNamespace(list_namespaced_pod=None))
    podwatch = bench.PodWatch(SimpleNamespace(client=None), "ns")
    deadline = time.monotonic() + 5
    while not (podwatch.stamps.get("p-0") and podwatch.stamps["p-0"].running) and time.monotonic() < deadline:
        time.sleep(0.01)
    podwatch.stop()
    assert fake.resumed_from[:2] == [None, "7"], "the second stream resumes where the first ended"
    assert podwatch.stamps["p-0"].bound and podwatch.stamps["p-0"].running


def _failed_pod(reason: str | None, message: str | None) -> SimpleNamespace:
    ended = SimpleNamespace(reason=reason, message=message)
    container = SimpleNamespace(state=SimpleNamespace(terminated=ended))
    return SimpleNamespace(status=SimpleNamespace(phase="Failed", reason=None, container_statuses=[container]))


def test_a_pod_that_failed_to_start_says_why_in_one_line() -> None:
    pod = _failed_pod("StartError", "runc create failed: unable to freeze\n")
    assert bench.failure_reason(pod) == "StartError: runc create failed: unable to freeze"
    no_containers = SimpleNamespace(status=SimpleNamespace(phase="Failed", reason="Evicted", container_statuses=None))
    assert bench.failure_reason(no_containers) == "Evicted"


def test_pods_that_failed_to_start_are_counted_not_timed() -> None:
    stamps = [
        bench.Stamps(seen=0.0, bound=1.0, running=1.5),
        bench.Stamps(seen=0.2, bound=2.0, running=3.0),
        bench.Stamps(seen=0.1, bound=1.5, failed="StartError: unable to freeze"),
    ]
    batch = bench.batch_of("created", "dra-extended", 3, 0, stamps)
    assert batch.failed == ["StartError: unable to freeze"]
    assert batch.figure("scheduled_to_running_ms") == pytest.approx(750.0)  # the failed pod is not timed
    assert batch.figure("to_scheduled_ms") == pytest.approx(1400.0)  # each from its own creation: 1.0, 1.8, 1.4 s
    assert batch.figure("pods_bound_per_s") == pytest.approx(3.0)  # three bound within one second


def test_held_pods_count_from_the_first_binding_of_their_batch() -> None:
    stamps = [bench.Stamps(seen=0.0, bound=10.0, running=10.5), bench.Stamps(seen=0.1, bound=10.2, running=11.2)]
    batch = bench.batch_of("held", "device-plugin", 2, 0, stamps)
    assert (batch.figure("to_scheduled_ms"), batch.figure("end_to_end_ms")) == pytest.approx((100.0, 850.0))


def test_a_mechanism_with_no_pod_started_has_no_figure_and_no_ratio() -> None:
    nothing = Batch("held", "claim-template", 2, 0, [PodTimes(0.0, 1.0, None, "StartError: unable to freeze")])
    batches = [b for b in _batches(1) if b.mechanism != "claim-template"] + [nothing]
    summary = summarise(batches)
    assert summary["figures"]["held"]["2"]["claim-template"]["end_to_end_ms"] is None
    assert summary["ratios"]["held"]["2"]["claim-template"]["end_to_end_ms"] is None
    assert "claim-template" in table(summary)


def test_batches_measured_before_a_failure_are_written_and_said_to_be_partial(tmp_path: Path, capsys) -> None:
    bench.write_results(_batches(rounds=2), tmp_path, "kep5004-bench-mixed-137", 5, [2])
    written = json.loads((tmp_path / "bench.json").read_text())
    assert (written["rounds"], written["rounds_measured"], len(written["batches"])) == (5, 2, 6)
    assert "the run ended in round 2 of 5" in capsys.readouterr().out
    assert (tmp_path / "bench-ratio.png").exists()
