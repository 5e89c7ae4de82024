"""`python -m conformance.rigs.scale_bench` (`make scale-bench`): scheduling at scale, a DRA-backed name
against a device-plugin-backed one, side by side in one run.

kwok (sigs.k8s.io/kwok at the pinned version, built from its Go module) plays the kubelets of
fake nodes on a kind cluster of the default version. Every fake node offers --gpus emulated GPUs
under two names: `example.com/scale-gpu`, served through DRA (a ResourceSlice published here for
the node, a DeviceClass naming it in spec.extendedResourceName, KEP-5004), and
`example.com/dp-gpu`, in the node's capacity as a device plugin would advertise it. For each node
count of --nodes (e.g. 100,1000), batches of --pods-per-node x nodes one-GPU pods ask for one
name or the other, in alternating order over --rounds rounds. A batch is created while
kube-scheduler is stopped, so that what is timed is scheduling, not how fast this client creates
pods (as upstream's scheduler_perf measures only its scheduler); a watch stamps each pod when bound
(milliseconds). Printed per node count: pods bound per second (first bind to last) and, round by
round, the ratio DRA / device plugin, each as median [min-max] over the rounds, and upstream's
scheduler_perf thresholds beside the figures of the same shape; JSON, the table and a plot of pods
bound over time go to --out, also when the run ends early. No assertion is made on the numbers.

The scheduler gets a client QPS high enough not to be the limit (--scheduler-qps): with the
default (50) the DRA path would hit it first, since each of its pods costs more API writes (the
special claim, its allocation, the pod's status) than a binding does, and the benchmark would
measure the rate limiter. kube-controller-manager gets one too (--controller-qps): between batches
every pod's special ResourceClaim must lose its deletion-protection finalizer, one request each,
and at its default of 20 requests/s 5000 claims kept a namespace terminating for over ten minutes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from clusters import control_plane, lifecycle, scheduler
from clusters.host import require_engine
from clusters.images import BuiltImages
from clusters.lifecycle import Cluster
from clusters.nodes import KindNodes
from clusters.paths import CLUSTERS_DIR, REPORTS_DIR, cache_root
from clusters.topology import ClusterSpec
from clusters.versions import resolve
from conformance.lib.objects.cleanup import new_namespace
from conformance.lib.objects.pods import node_slice
from conformance.lib.objects.special_claim import RESOURCE_API
from conformance.rigs.bench import PodWatch
from conformance.rigs.bench_figures import cell, spread
from conformance.runner.errors import guarded
from kube.api import Api, Obj
from kube.waits import wait_for

PROG = "python -m conformance.rigs.scale_bench"  # its name in usage lines (a make target of a checkout)

DRIVER = "scale-gpu.kep5004.dev"
DEVICE_CLASS = "scale-gpu"
NAMES = {"dra": "example.com/scale-gpu", "device-plugin": "example.com/dp-gpu"}
# What kwok's documentation asks of the nodes it plays, and keeps ordinary pods off them.
KWOK_KEY = "kwok.x-k8s.io/node"
FAKE = {"type": "kwok"}
MAX_PODS_PER_NODE = 110
# kwok renews each fake node's Lease every quarter of the Lease's duration. At kwok's 40 s and
# 5000 nodes that is 500 writes a second: on a 2-core host (2026-12-08) 4951 of 5000 nodes were
# Ready and no more for 180 s, and that write load runs beside the scheduler being measured,
# which upstream's scheduler_perf (no kubelets, no leases) does not have. Node health is not what
# the benchmark measures: the leases are renewed seldom, and kube-controller-manager waits two
# lease durations before it calls a silent node Unknown.
FAKE_LEASE_S = 600


@dataclass(frozen=True)
class Batch:
    nodes: int
    mechanism: str
    round: int
    pods: int
    seconds: float  # first pod bound -> last pod bound
    bound_offsets: list[float]  # s after the first pod was bound, sorted

    @property
    def pods_per_s(self) -> float:
        return self.pods / max(self.seconds, 1e-3)


def fake_node(name: str, gpus: int) -> Obj:
    capacity = {"cpu": "64", "memory": "512Gi", "pods": str(MAX_PODS_PER_NODE), NAMES["device-plugin"]: str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_KEY: "fake"},
            "labels": {**FAKE, "kubernetes.io/hostname": name},
        },
        "spec": {"taints": [{"key": KWOK_KEY, "value": "fake", "effect": "NoSchedule"}]},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def device_class() -> Obj:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {
            "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
            "extendedResourceName": NAMES["dra"],
        },
    }


def gpu_pod(name: str, mechanism: str, image: str) -> Obj:
    # The image is never pulled: kwok, not a kubelet, runs these pods.
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": FAKE,
            "tolerations": [{"key": KWOK_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": image, "resources": {"limits": {NAMES[mechanism]: "1"}}}],
        },
    }


def build_kwok() -> tuple[Path, Path]:
    """The kwok binary and the stage set it plays, built (or reused) from the Go module."""
    lines = subprocess.run(
        ["bash", str(CLUSTERS_DIR / "toolchain" / "build-kwok.sh")], check=True, stdout=subprocess.PIPE, text=True
    ).stdout.split()
    return Path(lines[0]), Path(lines[1])


def keep_daemonsets_off_fake_nodes(api: Api) -> None:
    """The cluster's DaemonSets tolerate every taint: without this each fake node would get their
    pods too, and the benchmark would schedule those as well."""
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "type", "operator": "NotIn", "values": [FAKE["type"]]}]}
                ]
            }
        }
    }
    daemonsets = api.resource("apps/v1", "DaemonSet")
    for ds in api.list("apps/v1", "DaemonSet", "kube-system"):
        daemonsets.patch(
            name=ds["metadata"]["name"],
            namespace="kube-system",
            body={"spec": {"template": {"spec": {"affinity": affinity}}}},
            content_type="application/strategic-merge-patch+json",
        )


def add_fake_nodes(api: Api, first: int, last: int, gpus: int) -> None:
    """Nodes fake-<first>..fake-<last - 1>, each with its slice; returns when kwok has made them Ready."""

    def add(i: int) -> None:
        api.create(fake_node(f"fake-{i}", gpus))
        api.create(node_slice(f"fake-{i}-gpus", DRIVER, f"fake-{i}", gpus))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(add, range(first, last)))
    wait_ready(api, last)


# How fast kwok makes nodes Ready is the host's (2844 of 5000 in 600 s on a 2-core host,
# 2026-12-08), so the wait has no deadline of its own: it fails when kwok makes no node Ready for
# this long. Each look lists every node, so it looks seldom.
STALL_S = 180
LOOK_EVERY_S = 10


def wait_ready(api: Api, count: int) -> None:
    """Returns once `count` fake nodes are Ready, saying how many are as it goes."""
    ready = ready_fake_nodes(api)
    while ready < count:
        before = ready
        ready = wait_for(
            lambda: (n := ready_fake_nodes(api)) > before and n,
            timeout=STALL_S,
            interval=LOOK_EVERY_S,
            what=f"kwok to make more than {before} of {count} fake nodes Ready",
            describe=lambda: not_ready_fake_nodes(api),
        )
        print(f"[scale] {ready} of {count} fake nodes Ready", file=sys.stderr, flush=True)


def _ready_condition(node: Obj) -> Obj:
    return next((c for c in node["status"].get("conditions") or [] if c["type"] == "Ready"), {})


def ready_fake_nodes(api: Api) -> int:
    return sum(
        1 for n in api.list("v1", "Node", label_selector="type=kwok") if _ready_condition(n).get("status") == "True"
    )


def not_ready_fake_nodes(api: Api) -> str:
    """The fake nodes not Ready, counted by their Ready condition's status and reason, with a few named."""
    waiting = [
        (n["metadata"]["name"], c.get("status", "no Ready condition"), c.get("reason", ""))
        for n in api.list("v1", "Node", label_selector="type=kwok")
        if (c := _ready_condition(n)).get("status") != "True"
    ]
    counts = Counter((status, reason) for _, status, reason in waiting)
    return f"{len(waiting)} not Ready: {dict(counts)}, e.g. {waiting[:5]}"


def batch_size(nodes: int, pods_per_node: int, max_pods: int) -> int:
    """Pods in one batch: upstream's workloads stop at 5000 pods, one per node at 5000 nodes."""
    return min(nodes * pods_per_node, max_pods)


def run_batch(cluster: Cluster, nodes: int, mechanism: str, round_: int, count: int, image: str) -> Batch:
    api = Api(cluster.kubeconfig)
    ns = f"scale-{mechanism}-{uuid.uuid4().hex[:6]}"
    new_namespace(api, ns)  # pods are refused until its default ServiceAccount exists
    podwatch = PodWatch(api, ns)
    names = [f"p-{i}" for i in range(count)]
    try:
        with scheduler.paused(cluster.kubeconfig, KindNodes.of_cluster(cluster.name)):
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda n: api.create(gpu_pod(n, mechanism, image), ns), names))
        wait_for(
            lambda: all((s := podwatch.stamps.get(n)) and s.bound for n in names),
            timeout=1800,
            interval=1,
            what=f"{count} {mechanism} pods bound on {nodes} nodes",
            describe=lambda: f"{sum(1 for s in podwatch.stamps.values() if s.bound)} bound",
        )
    finally:
        podwatch.stop()
        api.delete("v1", "Namespace", ns)
    stamps = [podwatch.stamps[n] for n in names]
    start = min(s.bound for s in stamps)
    bound = sorted(s.bound - start for s in stamps)
    # Pods, special claims and namespace gone before the next batch: it must find every GPU free.
    wait_for(
        lambda: api.get("v1", "Namespace", ns) is None, timeout=1800, interval=2, what=f"namespace {ns} to be deleted"
    )
    return Batch(nodes, mechanism, round_, count, bound[-1], bound)


def plot(batches: list[Batch], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    from matplotlib import pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for b in batches:
        if b is next(x for x in batches if (x.nodes, x.mechanism) == (b.nodes, b.mechanism)):  # first round
            ax.plot(b.bound_offsets, range(1, b.pods + 1), label=f"{b.mechanism}, {b.nodes} nodes")
    ax.set(
        xlabel="seconds since the batch's first pod was bound",
        ylabel="pods bound",
        title="Scheduling at scale (first round)",
    )
    ax.legend()
    path = out / "scale-throughput.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return path


@dataclass(frozen=True)
class Threshold:
    """A scheduler_perf workload of upstream's with its CI threshold: the least pods/s it must reach
    (measured with API server and scheduler in one process, on many cores)."""

    mechanism: str
    nodes: int
    pods: int
    pods_per_s: str
    case: str


# From kubernetes/kubernetes test/integration/scheduler_perf (docs/research/kwok-and-scheduler-perf.md,
# section B): the classic extended resource with the gate off and on, and DRA-backed names (the
# threshold changed between versions of the file: 120-130 and 195-197).
UPSTREAM = (
    Threshold("device-plugin", 5000, 5000, "180", "misc SchedulingWithExtendedResource/5000pods_5000nodes"),
    Threshold(
        "dra", 500, 5000, "120-197", "dra/extendedresource ExtendedResource_25Classes and _50Classes, 5000pods_500nodes"
    ),
)


def _per_round(batches: list[Batch], nodes: int, mechanism: str) -> dict[int, float]:
    return {b.round: b.pods_per_s for b in batches if (b.nodes, b.mechanism) == (nodes, mechanism)}


def table(batches: list[Batch]) -> str:
    """Per node count: each name's pods/s and, round by round, DRA's rate over the device plugin's,
    as median [min-max] over the rounds; then upstream's thresholds beside what was measured."""
    rows = [
        "| nodes | pods | rounds | DRA pods/s | device plugin pods/s | DRA / device plugin |",
        "|---|---|---|---|---|---|",
    ]
    for nodes in sorted({b.nodes for b in batches}):
        rate = {m: _per_round(batches, nodes, m) for m in NAMES}
        ratio = [rate["dra"][r] / rate["device-plugin"][r] for r in rate["dra"] if r in rate["device-plugin"]]
        pods = next(b.pods for b in batches if b.nodes == nodes)
        rows.append(
            f"| {nodes} | {pods} | {len(ratio)} | {cell(spread(rate['dra'].values()), 1)} | "
            f"{cell(spread(rate['device-plugin'].values()), 1)} | {cell(spread(ratio), 2)} |"
        )
    rows += ["", "| upstream scheduler_perf workload | its threshold, pods/s | measured here, same name, same nodes |"]
    rows.append("|---|---|---|")
    for t in UPSTREAM:
        here = spread(_per_round(batches, t.nodes, t.mechanism).values())
        pods = next((b.pods for b in batches if b.nodes == t.nodes), None)
        measured = f"{cell(here, 1)} ({pods} pods)" if here else f"not measured at {t.nodes} nodes"
        rows.append(f"| {t.case} ({t.pods} pods, {t.nodes} nodes, {t.mechanism}) | {t.pods_per_s} | {measured} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    ap = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", default=None, help="Kubernetes version (default: the pinned default)")
    ap.add_argument("--nodes", default="100,1000,5000", help="comma-separated fake node counts, ascending")
    ap.add_argument("--gpus", type=int, default=8, help="emulated GPUs per fake node")
    ap.add_argument("--pods-per-node", type=int, default=5, help="pods per batch = this x nodes (one GPU each) ...")
    ap.add_argument(
        "--max-pods",
        type=int,
        default=5000,
        help="... but at most this many (upstream's workloads have 5000: at 5000 nodes, one per node)",
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scheduler-qps", type=int, default=5000, help="kube-scheduler's client QPS (burst the same)")
    ap.add_argument(
        "--controller-qps",
        type=int,
        default=1000,
        help="kube-controller-manager's client QPS (burst the same): how fast a batch is cleaned up",
    )
    ap.add_argument("--out", type=Path, default=REPORTS_DIR / "scale-bench")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    try:
        counts = [int(n) for n in args.nodes.split(",")]
    except ValueError:
        ap.error(f"--nodes {args.nodes!r} is not a comma-separated list of numbers")
    if counts != sorted(counts) or counts[0] < 1 or not 1 <= args.pods_per_node <= args.gpus or args.rounds < 1:
        ap.error("--nodes must ascend from 1, --pods-per-node be 1..--gpus (every pod finds a GPU), --rounds >= 1")
    if args.max_pods < 1:
        ap.error("--max-pods must be at least 1")
    version = resolve(args.version)  # what the user typed first, then what the host lacks
    require_engine()
    images = BuiltImages.load()
    kwok, stages = build_kwok()
    with lifecycle.cluster(ClusterSpec("dra", version, purpose="scale"), images, keep=args.keep) as cluster:
        api = Api(cluster.kubeconfig)
        log_path = cache_root() / "logs" / f"kwok-{cluster.name}.log"
        player = None
        batches: list[Batch] = []
        try:
            nodes_of_cluster = KindNodes.of_cluster(cluster.name)
            scheduler.set_profiles(cluster.kubeconfig, nodes_of_cluster, [], client_qps=args.scheduler_qps)
            qps = str(args.controller_qps)
            control_plane.set_flags(
                cluster.kubeconfig,
                nodes_of_cluster,
                "kube-controller-manager",
                {"kube-api-qps": qps, "kube-api-burst": qps, "node-monitor-grace-period": f"{2 * FAKE_LEASE_S}s"},
            )
            keep_daemonsets_off_fake_nodes(api)
            api.create(device_class())
            with log_path.open("w") as log:
                player = subprocess.Popen(
                    [
                        str(kwok),
                        f"--kubeconfig={cluster.kubeconfig}",
                        f"--config={stages}",
                        f"--manage-nodes-with-annotation-selector={KWOK_KEY}=fake",
                        f"--node-lease-duration-seconds={FAKE_LEASE_S}",
                        "--cidr=10.128.0.0/12",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            made = 0
            for nodes in counts:
                print(f"[scale] {nodes} fake nodes ({args.gpus} GPUs each) ...", file=sys.stderr, flush=True)
                add_fake_nodes(api, made, nodes, args.gpus)
                made = nodes
                for r in range(args.rounds):
                    for mechanism in list(NAMES) if r % 2 == 0 else list(NAMES)[::-1]:
                        count = batch_size(nodes, args.pods_per_node, args.max_pods)
                        batch = run_batch(cluster, nodes, mechanism, r + 1, count, images.workload)
                        batches.append(batch)
                        print(
                            f"[scale] {nodes} nodes, round {r + 1}, {mechanism:13s}: {batch.pods} pods bound in "
                            f"{batch.seconds:.1f} s, {batch.pods_per_s:.1f} pods/s",
                            file=sys.stderr,
                            flush=True,
                        )
        finally:
            if player is not None:
                player.terminate()
                player.wait(timeout=30)
            if batches:  # what was measured is kept however the run ends
                write_results(batches, args, cluster.name, version.tag, log_path)
    return 0


def write_results(batches: list[Batch], args: argparse.Namespace, cluster: str, version: str, kwok_log: Path) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    text = table(batches)
    settings = {k: getattr(args, k) for k in ("gpus", "pods_per_node", "max_pods", "rounds", "scheduler_qps")}
    (args.out / "scale.json").write_text(
        json.dumps(
            {
                "cluster": cluster,
                "version": version,
                **settings,
                "controller_qps": args.controller_qps,
                "batches": [asdict(b) for b in batches],
            },
            indent=2,
        )
    )
    (args.out / "scale.md").write_text(text)
    print(text + f"JSON, table and plot in {args.out} ({plot(batches, args.out).name}); kwok's log: {kwok_log}")


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], PROG))
