"""Workloads as people write them today (fixtures/workloads/*.yaml), applied unmodified.

The manifests ask for `nvidia.com/gpu` the device-plugin way (limits only, no ResourceClaim
in the pod). Each pod they produce must run with a special claim, every container's probe must
show exactly its devices, and no device may be shared between pods of the workload.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from clusters.paths import REPO_ROOT
from conformance.lib import devices as devices_lib, pods, scenario
from conformance.lib.special_claim import IMPLICIT_PREFIX, claim_status
from conformance.lib.waits import wait_for
from conformance.lib.workloads import (WORKLOAD_KINDS, apply_manifest, load_manifest, pods_of, probe_container,
                                        requested_names)
from conformance.suite.conftest import Target

WORKLOADS = REPO_ROOT / "fixtures" / "workloads"
MANIFESTS = sorted(WORKLOADS.glob("*.yaml"))
# What the stored manifests were written for: the default profile (fake-gpu).
WRITTEN_FOR = {"names": {"nvidia.com/gpu", "deviceclass.resource.kubernetes.io/gpu.nvidia.com"},
               "class": "gpu.nvidia.com", "image": "kep5004/gpu-workload:v1"}


def _pod_specs(objs: list[dict]) -> list[dict]:
    return [o["spec"] if o["kind"] == "Pod" else o["spec"]["template"]["spec"] for o in objs if o["kind"] in WORKLOAD_KINDS]


def _expected_pods(objs: list[dict]) -> int:
    total = 0
    for o in objs:
        if o["kind"] == "Pod":
            total += 1
        elif o["kind"] in ("Deployment", "StatefulSet", "ReplicaSet"):
            total += o["spec"].get("replicas", 1)
        elif o["kind"] == "Job":
            total += o["spec"].get("parallelism", 1)
    return total


def _has_plain_init(spec: dict) -> bool:
    return any(c.get("restartPolicy") != "Always" for c in spec.get("initContainers") or [])


@pytest.mark.requirement("NAME-1", "NAME-2", "ALLOC-1", "CTR-1", "STATUS-1")
@pytest.mark.parametrize("manifest", MANIFESTS, ids=[m.stem for m in MANIFESTS])
def test_unmodified_workload_runs_on_dra_devices(target: Target, namespace: str, manifest: Path) -> None:
    api, p = target.api, target.profile
    objs = load_manifest(manifest)
    names = requested_names(objs)
    classes_used = {r["exactly"]["deviceClassName"] for o in objs if o["kind"] == "ResourceClaim"
                    for r in o["spec"]["devices"]["requests"]}
    images = {c["image"] for s in _pod_specs(objs) for c in [*(s.get("initContainers") or []), *s["containers"]]}
    served_names = {p.extended_resource_name, p.implicit_resource_name}
    # The stored manifests are unmodified user workloads for the default profile; a profile
    # serving other names cannot run them (collection cannot deselect by profile, so say so).
    assert names <= served_names and classes_used <= {p.device_class} and images <= {p.workload_image}, \
        (f"[NAME-1] {manifest.name} targets {sorted(WRITTEN_FOR['names'])}, class {WRITTEN_FOR['class']} and image "
         f"{WRITTEN_FOR['image']}; profile {p.name} serves {sorted(served_names)}, class {p.device_class}, image {p.workload_image} "
         f"(manifest asks for {sorted(names)}, classes {sorted(classes_used)}, images {sorted(images)})")
    implicit = any(n.startswith(IMPLICIT_PREFIX) for n in names)

    created = apply_manifest(api, manifest, namespace)
    want = _expected_pods(created)

    def listed() -> list[dict]:
        return pods_of(api, namespace, created)

    def describe() -> str:
        return "\n".join(pods.summary(api, namespace, q["metadata"]["name"]) for q in listed()) or "no pods"

    if implicit and target.minor <= (1, 34):
        # 1.34 does not honour implicit names (BUG-1): the pods must stay Pending without a claim.
        with pods.requirement("NAME-2"):
            wait_for(lambda: len(listed()) >= want, timeout=60, what=f"{want} pods of {manifest.name}", describe=describe)
        for q in listed():
            pods.assert_stays_unscheduled(api, namespace, q["metadata"]["name"], "NAME-2", duration=15)
        return

    def running() -> list[dict] | None:
        found = listed()
        ok = [q for q in found if (q.get("status") or {}).get("phase") in ("Running", "Succeeded")]
        return ok if len(ok) >= want else None

    with pods.requirement("NAME-2" if implicit else "NAME-1"):
        ready = wait_for(running, timeout=300, interval=2, what=f"{want} pods of {manifest.name} Running", describe=describe)

    devices: dict[str, list[tuple[str, str]]] = {}  # pod -> devices of its special and own claims
    for q in ready:
        name = q["metadata"]["name"]
        if q["status"]["phase"] == "Succeeded":
            _check_finished(target, q)
            continue
        served = scenario.verify_served(target, q, exact_counts=not _has_plain_init(q["spec"]))
        owned = [served.claim["metadata"]["name"], *[n for n in devices_lib.user_claim_names(q).values() if n]]
        devices[name] = [d for c in owned for d in pods.claim_devices(api, namespace, c)]
        assert served.seen and all(served.seen.values()), f"[CTR-1] a GPU container of {name} sees no device: {served.seen}"
    flat = [d for devs in devices.values() for d in devs]
    assert len(flat) == len(set(flat)), f"[ALLOC-1] pods of {manifest.name} share devices: {devices}"

    for job in (o for o in created if o["kind"] == "Job"):
        with pods.requirement("NAME-1"):
            wait_for(lambda: ((api.get("batch/v1", "Job", job["metadata"]["name"], namespace) or {}).get("status") or {})
                     .get("succeeded"), timeout=180, what=f"job {job['metadata']['name']} to complete", describe=describe)


def _check_finished(target: Target, q: dict) -> None:
    """A Job pod that already finished: its claim may be gone (CLAIM-6), so check what remains:
    the status named a claim and every container's log shows as many devices as it asked for."""
    api, p = target.api, target.profile
    name = q["metadata"]["name"]
    assert claim_status(q), f"[STATUS-1] finished pod {name} never named a special claim: {pods.summary(api, q['metadata']['namespace'], name)}"
    for c in q["spec"]["containers"]:
        want = sum(int(v) for k, v in ((c.get("resources") or {}).get("limits") or {}).items() if "/" in k)
        seen = probe_container(api, p, q, c["name"])
        assert len(seen.device_ids) == want, f"[CTR-1] container {c['name']} of {name} saw {seen.device_ids}, asked for {want}"
