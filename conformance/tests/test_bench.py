"""make bench's arithmetic and plots, from made-up batches (no cluster)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.lib.profile import load
from conformance.rigs import bench
from conformance.rigs.bench import MECHANISMS, Batch, bench_pod, plot, summarise


def _batches() -> list[Batch]:
    # device-plugin twice as fast to run a pod and to bind the batch as the two DRA ways
    speed = {"device-plugin": 1.0, "dra-extended": 2.0, "claim-template": 2.0}
    return [
        Batch(m, [0.5 * speed[m], 1.0 * speed[m]], [0.1, 2.0 * speed[m]], 2 / (2.0 * speed[m]))
        for _ in range(2)
        for m in MECHANISMS
    ]


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
    batch = bench.batch_of("dra-extended", stamps)
    assert batch.latencies == [0.5, 1.0] and batch.failed == ["StartError: unable to freeze"]
    assert batch.bound_offsets == [1.0, 1.5, 2.0] and batch.pods_per_s == 1.5
    result = summarise(_batches() + [batch])
    assert result["failed_to_start"] == {"dra-extended": 1, "device-plugin": 0, "claim-template": 0}
    assert result["failure_reasons"]["dra-extended"] == ["StartError: unable to freeze"]


def test_a_mechanism_with_no_pod_started_is_an_error_naming_why() -> None:
    nothing = Batch("claim-template", [], [1.0], 1.0, ["StartError: unable to freeze"])
    batches = [b for b in _batches() if b.mechanism != "claim-template"] + [nothing]
    with pytest.raises(RuntimeError, match="no claim-template pod started.*unable to freeze"):
        summarise(batches)
