"""`python -m conformance.bench`: measured side by side in one run, printed as ratios.

On a `mixed` kind cluster (one DRA node, one device-plugin node, same fake GPUs):
  - time from the pod being bound to its container running, DRA vs device plugin;
  - scheduling throughput: pods/s for a batch of one-GPU pods per mechanism.
Rounds alternate between the mechanisms so that drift on a shared host hits both alike.
No assertion is made on the numbers: they are printed and written to --out as JSON.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

from clusters import lifecycle
from clusters.images import BuiltImages
from clusters.topology import MODE_LABEL, ClusterSpec
from clusters.versions import resolve
from conformance.invocation import prog
from conformance.lib import driver_setup, pods
from conformance.lib.profile import Profile, load
from kube.api import Api, Obj
from kube.waits import wait_for


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def bound_to_running(pod: Obj) -> float:
    scheduled = _ts(pods.condition(pod, "PodScheduled")["lastTransitionTime"])
    started = _ts(pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"])
    return started - scheduled


def batch(api: Api, ns: str, profile: Profile, name: str, mode: str, count: int) -> tuple[list[float], float]:
    """Create `count` one-GPU pods pinned to the node of `mode`; per-pod latency and batch wall time."""
    start = time.monotonic()
    names = [f"{mode}-{uuid.uuid4().hex[:6]}" for _ in range(count)]
    for n in names:
        p = pods.pod(n, [pods.container("main", profile, {name: 1}, command="sleep 3600")])
        p["spec"]["nodeSelector"] = {MODE_LABEL: mode}
        api.create(p, ns)
    done = [pods.wait_running(api, ns, n, timeout=300) for n in names]
    wall = time.monotonic() - start
    for n in names:
        api.delete("v1", "Pod", n, ns)
    wait_for(lambda: not api.list("v1", "Pod", ns), timeout=180, what="benchmark pods to be gone")
    return [bound_to_running(p) for p in done], wall


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=prog("conformance.bench"), description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", default=None, help="Kubernetes version (default: the pinned default)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pods", type=int, default=4, help="pods per batch (at most the devices per node)")
    ap.add_argument("--out", type=Path, default=Path("reports/bench.json"))
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    profile, images = load("fake-gpu"), BuiltImages.load()
    t0 = time.monotonic()
    cluster = lifecycle.ensure(ClusterSpec("mixed", resolve(args.version)), images)
    create_s = time.monotonic() - t0
    api = Api(cluster.kubeconfig)
    try:
        driver_setup.deploy_fake_driver(cluster.kubectl, profile, images.driver)
        driver_setup.wait_published(api, profile)
        ns = f"bench-{uuid.uuid4().hex[:6]}"
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        lat: dict[str, list[float]] = {"dra": [], "device-plugin": []}
        wall: dict[str, list[float]] = {"dra": [], "device-plugin": []}
        for r in range(args.rounds):
            for mode in (("dra", "device-plugin") if r % 2 == 0 else ("device-plugin", "dra")):
                l, w = batch(api, ns, profile, profile.extended_resource_name, mode, args.pods)
                lat[mode] += l
                wall[mode].append(w)
                print(f"round {r + 1} {mode:13s}: bound->running median {statistics.median(l):.2f} s, "
                      f"batch of {args.pods} in {w:.1f} s", flush=True)
        api.delete("v1", "Namespace", ns)
    finally:
        if not args.keep:
            lifecycle.delete(cluster.name)
    med = {m: statistics.median(v) for m, v in lat.items()}
    thr = {m: args.pods * len(v) / sum(v) for m, v in wall.items()}
    result = {"cluster": cluster.name, "cluster_ready_s": round(create_s, 1), "rounds": args.rounds,
              "pods_per_batch": args.pods, "bound_to_running_median_s": med, "pods_per_s": thr,
              "ratio_dra_over_device_plugin": {"latency": med["dra"] / med["device-plugin"],
                                               "throughput": thr["dra"] / thr["device-plugin"]}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
