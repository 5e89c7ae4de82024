"""`python -m conformance.rigs.bench` (`make bench`): a GPU by the DRA-backed extended resource
name against the same name served by a device plugin, side by side in one run.

On a `mixed` kind cluster (one DRA node, one device-plugin node, as many GPUs each as the largest
batch), batches of one-GPU pods ask for the GPU by each mechanism:
  - `dra-extended`: the extended resource name, served through DRA on the DRA node (KEP-5004);
  - `device-plugin`: the same name, served by the device plugin on the other node;
  - `claim-template`: an ordinary ResourceClaimTemplate of the same DeviceClass, DRA node.
Two ways of starting a batch, each in every round:
  - `held`: the pods are created while kube-scheduler is stopped and released at once when it
    starts again: what is timed is scheduling and the node starting the pod, not how fast this
    client creates pods. The batch's zero is its first binding (the scheduler's first decision;
    its own start-up and leader election are left out).
  - `created`: the pods are created one by one while the scheduler runs; each pod's zero is its
    creation. Kept beside the other to show how much the client's rate shapes the figures.
A watch stamps every pod when first seen, bound and Running. Per pod: zero -> bound, bound ->
Running and zero -> Running in milliseconds; per batch their medians and pods bound per second;
over --rounds rounds (the mechanisms' order rotating, so that drift on a shared host hits all
alike) the minimum, median and maximum of each, and of each mechanism's ratio to the device
plugin's in the same round. A pod that fails to start (e.g. runc's "unable to freeze" on a loaded
cgroup v1 host) is counted and reported by reason, not waited for. No assertion is made on the
numbers; JSON and two plots go to --out.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError

from clusters import lifecycle, scheduler
from clusters.host import require_engine
from clusters.images import BuiltImages
from clusters.lifecycle import Cluster
from clusters.nodes import KindNodes
from clusters.paths import REPORTS_DIR
from clusters.topology import MODE_LABEL, ClusterSpec
from clusters.versions import resolve
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import RESOURCE_API
from conformance.lib.profile import Profile, load
from conformance.lib.setup import driver_setup
from conformance.rigs.bench_figures import BASE, Batch, PodTimes, plot, summarise, table
from conformance.runner.errors import guarded
from conformance.runner.stopping import signals_interrupt
from kube.api import Api, Obj
from kube.waits import wait_for

PROG = "python -m conformance.rigs.bench"  # its name in usage lines (a make target of a checkout)

MECHANISMS = ("device-plugin", "dra-extended", "claim-template")
METHODS = ("held", "created")
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


def run_batch(
    cluster: Cluster, ns: str, profile: Profile, podwatch: PodWatch, method: str, mechanism: str, size: int, r: int
) -> Batch:
    api = Api(cluster.kubeconfig)
    names = [f"{mechanism}-{uuid.uuid4().hex[:6]}" for _ in range(size)]

    def create_all() -> None:
        for name in names:
            api.create(bench_pod(name, profile, mechanism), ns)

    if method == "held":
        with scheduler.paused(cluster.kubeconfig, KindNodes.of_cluster(cluster.name)):
            create_all()
    else:
        create_all()

    def settled(name: str) -> bool:
        stamp = podwatch.stamps.get(name)
        return bool(stamp and (stamp.running or stamp.failed))

    wait_for(
        lambda: all(settled(n) for n in names),
        timeout=600,
        interval=1,
        what=f"{size} {mechanism} pods Running or failed",
        describe=lambda: f"{sum(map(settled, names))} of {size} Running or failed",
    )
    stamps = [podwatch.stamps[n] for n in names]
    for name in names:
        api.delete("v1", "Pod", name, ns)
    wait_for(lambda: not api.list("v1", "Pod", ns), timeout=600, interval=2, what=f"the {mechanism} pods to be gone")
    return batch_of(method, mechanism, size, r, stamps)


def batch_of(method: str, mechanism: str, size: int, r: int, stamps: list[Stamps]) -> Batch:
    """The pods' times from their method's zero: held, the batch's first binding; created, each
    pod's creation as the watch saw it."""
    first_bound = min((s.bound for s in stamps if s.bound is not None), default=0.0)
    return Batch(
        method,
        mechanism,
        size,
        r,
        [PodTimes(first_bound if method == "held" else (s.seen or 0.0), s.bound, s.running, s.failed) for s in stamps],
    )


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", default=None, help="Kubernetes version (default: the pinned default)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="1,10,100", help="pods per batch, comma-separated (one GPU each)")
    ap.add_argument("--methods", default=",".join(METHODS), help=f"how batches start: {', '.join(METHODS)}")
    ap.add_argument("--mechanisms", default=",".join(MECHANISMS), help="ways of asking (device-plugin always)")
    ap.add_argument("--out", type=Path, default=REPORTS_DIR / "bench")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    try:
        sizes = sorted({int(x) for x in args.sizes.split(",")})
    except ValueError:
        ap.error(f"--sizes {args.sizes!r}: whole numbers, comma-separated")
    methods = [m for m in args.methods.split(",") if m]
    mechanisms = [BASE, *(m for m in args.mechanisms.split(",") if m and m != BASE)]
    if not (1 <= sizes[0] and sizes[-1] <= MAX_PODS_PER_NODE) or args.rounds < 1:
        ap.error(f"--sizes must lie in 1..{MAX_PODS_PER_NODE} (one node's pod limit) and --rounds be at least 1")
    if unknown := set(methods) - set(METHODS) | set(mechanisms) - set(MECHANISMS):
        ap.error(f"unknown method or mechanism: {', '.join(sorted(unknown))}")
    # What the user typed first, then what the host lacks: a mistake stops us before anything is made.
    version = resolve(args.version)
    require_engine()
    images = BuiltImages.load()
    # As many GPUs per node as pods in the largest batch: a batch measures the mechanism, not a queue for devices.
    profile = dataclasses.replace(load("fake-gpu"), device_counts={"*": sizes[-1]})
    batches: list[Batch] = []
    spec = ClusterSpec("mixed", version, purpose="bench")  # its own: never a run's
    with signals_interrupt(), lifecycle.cluster(spec, images, keep=args.keep) as cluster:
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
            for r in range(args.rounds):
                order = mechanisms[r % len(mechanisms) :] + mechanisms[: r % len(mechanisms)]
                for method in methods:
                    for size in sizes:
                        for mechanism in order:
                            batch = run_batch(cluster, ns, profile, podwatch, method, mechanism, size, r)
                            batches.append(batch)
                            end_to_end = batch.figure("end_to_end_ms")
                            failed = f", {len(batch.failed)} failed to start" if batch.failed else ""
                            print(
                                f"[bench] round {r + 1} {method:7s} {size:3d} {mechanism:15s}: end-to-end median "
                                + (f"{end_to_end:.0f} ms" if end_to_end is not None else "-")
                                + failed,
                                file=sys.stderr,
                                flush=True,
                            )
        finally:
            if podwatch:
                podwatch.stop()
            if batches:  # also when a batch failed or the run was interrupted: what was measured stays
                write_results(batches, args.out, spec.name, args.rounds, sizes)
    return 0


def write_results(batches: list[Batch], out: Path, cluster: str, rounds: int, sizes: list[int]) -> None:
    """bench.json, the plots and the table of the batches measured, all of them or those measured
    before a failure or an interrupt ended the run (said in the table's last line)."""
    summary = summarise(batches)
    out.mkdir(parents=True, exist_ok=True)
    done = len({b.round for b in batches})
    (out / "bench.json").write_text(
        json.dumps(
            {
                "cluster": cluster,
                "rounds": rounds,
                "rounds_measured": done,
                "sizes": sizes,
                **summary,
                "failed_to_start": {
                    m: sorted({why for b in batches if b.mechanism == m for why in b.failed})
                    for m in dict.fromkeys(b.mechanism for b in batches)
                },
                "batches": [dataclasses.asdict(b) for b in batches],
            },
            indent=1,
        )
    )
    plots = plot(summary, out)
    print(table(summary))
    for b in batches:
        for why in sorted(set(b.failed)):
            print(f"round {b.round + 1} {b.method} {b.size} {b.mechanism}: a pod failed to start: {why}")
    partial = "" if done == rounds else f" (the run ended in round {done} of {rounds}: these are the batches measured)"
    print(f"median [min-max] over the rounds; ratios: same round, above 1 = slower than {BASE}{partial}")
    print(f"JSON and plots in {out}: {', '.join(p.name for p in plots)}")


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], PROG))
