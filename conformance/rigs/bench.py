"""`python -m conformance.rigs.bench` (`make bench`): three ways to get a GPU, side by side in one run.

On a `mixed` kind cluster whose fake driver publishes as many GPUs per node as --pods (one DRA
node, one device-plugin node), batches of --pods one-GPU pods are created at once for each mechanism:
  - `dra-extended`: the extended resource name, served by DRA on the DRA node (KEP-5004);
  - `device-plugin`: the same name, served by the device plugin on the other node;
  - `claim-template`: an ordinary ResourceClaimTemplate of the same DeviceClass, DRA node.
A watch on the namespace stamps each pod, in milliseconds, when it is first seen, bound to its
node and Running. From those: bound-to-running latency per pod and scheduling throughput (pods
bound per second). A pod that fails to start (its phase Failed, e.g. runc's "unable to freeze" on a
loaded cgroup v1 host) is counted and reported by reason, not waited for, and left out of the latencies.
Rounds alternate the order of the mechanisms so that drift on a shared host
hits all alike. No assertion is made on the numbers: ratios against the device plugin are
printed, and JSON plus two PNG plots (latency distribution, pods bound over time) are written to
--out.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError

from clusters import lifecycle
from clusters.host import require_engine
from clusters.images import BuiltImages
from clusters.paths import REPORTS_DIR
from clusters.topology import MODE_LABEL, ClusterSpec
from clusters.versions import resolve
from conformance.lib import driver_setup, pods
from conformance.lib.profile import Profile, load
from conformance.lib.special_claim import RESOURCE_API
from conformance.runner.errors import guarded
from kube.api import Api, Obj
from kube.waits import wait_for

PROG = "python -m conformance.rigs.bench"  # its name in usage lines (a make target of a checkout)

MECHANISMS = ("dra-extended", "device-plugin", "claim-template")
TEMPLATE = "bench-gpu"
MAX_PODS_PER_NODE = 100  # kubelet's default maxPods is 110; the node's own daemons take a few


@dataclass
class Stamps:
    """When the watch first saw a pod in each state (time.time(), milliseconds and better)."""

    seen: float | None = None
    bound: float | None = None
    running: float | None = None
    failed: str | None = None  # why it never ran: the container's termination reason and message


@dataclass
class PodWatch:
    """Stamps of every pod of a namespace, from one watch running in a thread."""

    api: Api
    namespace: str
    stamps: dict[str, Stamps] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._watch = watch.Watch()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        core = client.CoreV1Api(self.api.client)
        version = None  # resume where the last stream ended: a busy API server ends watches early
        while not self._stopped.is_set():
            try:
                for event in self._watch.stream(
                    core.list_namespaced_pod, self.namespace, resource_version=version, _request_timeout=3600
                ):
                    now, pod = time.time(), event["object"]
                    version = pod.metadata.resource_version
                    stamp = self.stamps.setdefault(pod.metadata.name, Stamps())
                    stamp.seen = stamp.seen or now
                    if pod.spec.node_name and stamp.bound is None:
                        stamp.bound = now
                    phase = pod.status.phase if pod.status else None
                    if phase == "Running" and stamp.running is None:
                        stamp.running = now
                    if phase == "Failed" and stamp.running is None and stamp.failed is None:
                        stamp.failed = failure_reason(pod)
            except ApiException as err:
                if err.status != 410:  # 410 Gone: too old to resume, so list again from now
                    raise
                version = None
            except ProtocolError:  # "Response ended prematurely" (seen at 100 pods on a loaded host)
                pass
            except Exception:
                if not self._stopped.is_set():
                    raise
                # stopped while the stream was failing (the cluster may already be gone): nothing to report

    def stop(self) -> None:
        self._stopped.set()
        self._watch.stop()


def failure_reason(pod) -> str:
    """One line: why a pod that never ran failed, from its containers' termination states."""
    for status in (pod.status.container_statuses or []) if pod.status else []:
        ended = status.state.terminated if status.state else None
        if ended:
            return f"{ended.reason}: {(ended.message or '').strip()}".rstrip(": ")
    return (pod.status.reason if pod.status else None) or "Failed"


@dataclass(frozen=True)
class Batch:
    mechanism: str
    latencies: list[float]  # bound -> running, s, of the pods that started
    bound_offsets: list[float]  # s after the first pod of the batch was seen, sorted
    pods_per_s: float
    failed: list[str] = field(default_factory=list)  # one reason per pod that failed to start


def bench_pod(name: str, profile: Profile, mechanism: str) -> Obj:
    node_mode = "device-plugin" if mechanism == "device-plugin" else "dra"
    if mechanism == "claim-template":
        p = pods.pod(name, [pods.container("main", profile, {}, command=pods.SLEEP)])
        p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
        p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": TEMPLATE}]
    else:
        p = pods.pod(name, [pods.container("main", profile, {profile.extended_resource_name: 1}, command=pods.SLEEP)])
    p["spec"]["nodeSelector"] = {MODE_LABEL: node_mode}
    return p


def run_batch(api: Api, ns: str, profile: Profile, podwatch: PodWatch, mechanism: str, count: int) -> Batch:
    names = [f"{mechanism}-{uuid.uuid4().hex[:6]}" for _ in range(count)]
    for name in names:
        api.create(bench_pod(name, profile, mechanism), ns)

    def settled(name: str) -> bool:
        stamp = podwatch.stamps.get(name)
        return bool(stamp and (stamp.running or stamp.failed))

    wait_for(
        lambda: all(settled(n) for n in names),
        timeout=600,
        interval=1,
        what=f"{count} {mechanism} pods Running or failed",
        describe=lambda: f"{sum(map(settled, names))} of {count} Running or failed",
    )
    stamps = [podwatch.stamps[n] for n in names]
    for name in names:
        api.delete("v1", "Pod", name, ns)
    wait_for(lambda: not api.list("v1", "Pod", ns), timeout=600, interval=2, what=f"the {mechanism} pods to be gone")
    return batch_of(mechanism, stamps)


def batch_of(mechanism: str, stamps: list[Stamps]) -> Batch:
    """Latency over the pods that started; throughput over the pods bound (a pod may fail after binding)."""
    start = min(s.seen for s in stamps)
    bound = sorted(s.bound - start for s in stamps if s.bound is not None)
    return Batch(
        mechanism,
        [s.running - s.bound for s in stamps if s.running],
        bound,
        len(bound) / max(bound[-1] if bound else 0, 1e-3),
        [s.failed for s in stamps if s.failed],
    )


def summarise(batches: list[Batch]) -> dict:
    per = {m: [b for b in batches if b.mechanism == m] for m in MECHANISMS}
    pooled = {m: [x for b in bs for x in b.latencies] for m, bs in per.items()}
    failed = {m: [reason for b in bs for reason in b.failed] for m, bs in per.items()}
    if empty := [m for m, xs in pooled.items() if not xs]:
        raise RuntimeError(f"no {empty[0]} pod started, nothing to compare: {'; '.join(sorted(set(failed[empty[0]])))}")
    latency = {m: statistics.median(xs) for m, xs in pooled.items()}
    p90 = {m: statistics.quantiles(xs, n=10)[-1] if len(xs) > 1 else xs[0] for m, xs in pooled.items()}
    throughput = {m: statistics.median(b.pods_per_s for b in bs) for m, bs in per.items()}
    base = "device-plugin"
    return {
        "bound_to_running_median_s": latency,
        "bound_to_running_p90_s": p90,
        "pods_bound_per_s": throughput,
        "failed_to_start": {m: len(reasons) for m, reasons in failed.items()},
        "failure_reasons": {m: sorted(set(reasons)) for m, reasons in failed.items()},
        "ratio_to_device_plugin": {
            m: {"latency": latency[m] / latency[base], "throughput": throughput[m] / throughput[base]}
            for m in MECHANISMS
        },
    }


def plot(batches: list[Batch], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    from matplotlib import pyplot as plt

    written = []
    fig, ax = plt.subplots(figsize=(7, 4))
    for m in MECHANISMS:
        values = sorted(x * 1000 for b in batches if b.mechanism == m for x in b.latencies)
        ax.plot(values, [(i + 1) / len(values) for i in range(len(values))], label=m)
    ax.set(xlabel="bound -> Running (ms)", ylabel="fraction of pods", title="Latency distribution (CDF)")
    ax.legend()
    written.append(out / "bench-latency.png")
    fig.savefig(written[-1], dpi=110, bbox_inches="tight")
    fig, ax = plt.subplots(figsize=(7, 4))
    for m in MECHANISMS:
        first = next(b for b in batches if b.mechanism == m)
        ax.step(first.bound_offsets, range(1, len(first.bound_offsets) + 1), where="post", label=m)
    ax.set(
        xlabel="seconds since the batch was created", ylabel="pods bound", title="Scheduling over time (first round)"
    )
    ax.legend()
    written.append(out / "bench-throughput.png")
    fig.savefig(written[-1], dpi=110, bbox_inches="tight")
    return written


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", default=None, help="Kubernetes version (default: the pinned default)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pods", type=int, default=MAX_PODS_PER_NODE, help="pods per batch (one GPU each)")
    ap.add_argument("--out", type=Path, default=REPORTS_DIR / "bench")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    if not 1 <= args.pods <= MAX_PODS_PER_NODE or args.rounds < 1:
        ap.error(f"--pods must be 1..{MAX_PODS_PER_NODE} (one node's pod limit) and --rounds at least 1")
    # What the user typed first, then what the host lacks: a mistake stops us before anything is made.
    version = resolve(args.version)
    require_engine()
    images = BuiltImages.load()
    # As many GPUs per node as pods in a batch: a batch measures the mechanism, not a queue for devices.
    profile = dataclasses.replace(load("fake-gpu"), device_counts={"*": args.pods})
    with lifecycle.cluster(
        ClusterSpec("mixed", version, purpose="bench"), images, keep=args.keep
    ) as cluster:  # its own: never a run's
        api = Api(cluster.kubeconfig)
        ns = f"bench-{uuid.uuid4().hex[:6]}"
        podwatch: PodWatch | None = None
        try:
            driver_setup.deploy_fake_driver(cluster.kubectl, profile, images.driver)
            driver_setup.wait_published(api, profile)
            api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            api.create(
                {
                    "apiVersion": RESOURCE_API,
                    "kind": "ResourceClaimTemplate",
                    "metadata": {"name": TEMPLATE},
                    "spec": {"spec": pods.user_claim(TEMPLATE, profile.device_class)["spec"]},
                },
                ns,
            )
            podwatch = PodWatch(api, ns)
            batches = []
            for r in range(args.rounds):
                order = MECHANISMS[r % len(MECHANISMS) :] + MECHANISMS[: r % len(MECHANISMS)]
                for mechanism in order:
                    batch = run_batch(api, ns, profile, podwatch, mechanism, args.pods)
                    batches.append(batch)
                    median = f"{statistics.median(batch.latencies) * 1000:.0f} ms" if batch.latencies else "-"
                    failed = f", {len(batch.failed)} failed to start" if batch.failed else ""
                    print(
                        f"round {r + 1} {mechanism:15s}: bound->running median {median}, "
                        f"{batch.pods_per_s:.1f} pods bound/s{failed}",
                        flush=True,
                    )
        finally:
            if podwatch:
                podwatch.stop()
    result = {
        "cluster": cluster.name,
        "rounds": args.rounds,
        "pods_per_batch": args.pods,
        **summarise(batches),
        "batches": [dataclasses.asdict(b) for b in batches],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench.json").write_text(json.dumps(result, indent=2))
    plots = plot(batches, args.out)
    print(
        f"{'mechanism':15s} {'median ms':>10s} {'p90 ms':>8s} {'pods/s':>7s} {'latency x':>10s} {'throughput x':>13s} "
        f"{'failed':>7s}"
    )
    for m in MECHANISMS:
        ratio = result["ratio_to_device_plugin"][m]
        print(
            f"{m:15s} {result['bound_to_running_median_s'][m] * 1000:10.0f} {result['bound_to_running_p90_s'][m] * 1000:8.0f} "
            f"{result['pods_bound_per_s'][m]:7.1f} {ratio['latency']:10.2f} {ratio['throughput']:13.2f} "
            f"{result['failed_to_start'][m]:7d}"
        )
    for m, reasons in result["failure_reasons"].items():
        for reason in reasons:
            print(f"{m} pods failed to start: {reason}")
    print(f"(x: ratio to device-plugin) JSON and plots in {args.out}: {', '.join(p.name for p in plots)}")
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], PROG))
