"""Workloads as people write them today, applied unmodified: the profile's stored workload set
(`workloads:`, e.g. fixtures/workloads/nvidia-gpu/*.yaml).

The manifests ask for the profile's extended resource name the device-plugin way (limits only,
no ResourceClaim in the pod). Each pod they produce must run with a special claim whose requests
use the class each name resolves to, every container's probe must show exactly its devices, and
no device may be shared between pods of the workload. A profile without a workload set gets
`not tested`, with the reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.catalogue import requirement
from conformance.lib import profile as profiles
from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import claim_status, expected_requests, special_claim
from conformance.lib.objects.workloads import (
    WORKLOAD_KINDS,
    apply_manifest,
    load_manifest,
    pods_of,
    probe_container,
    requested_names,
)
from conformance.lib.oracles import devices as devices_lib
from conformance.lib.oracles import scenario
from conformance.lib.oracles.resolution import misresolved, resolution
from conformance.suite.conftest import Target
from kube.waits import wait_for


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per manifest of the profile's workload set (known at collection from --profile)."""
    if "manifest" not in metafunc.fixturenames:
        return
    try:
        workloads = profiles.load(metafunc.config.getoption("--profile")).workloads
    except profiles.ProfileError:
        workloads = None  # the target fixture reports the bad profile
    manifests: list[Path | None] = sorted(workloads.glob("*.yaml")) if workloads else [None]
    metafunc.parametrize("manifest", manifests, ids=[m.stem if m else "no-workload-set" for m in manifests])


def _pod_specs(objs: list[dict]) -> list[dict]:
    return [
        o["spec"] if o["kind"] == "Pod" else o["spec"]["template"]["spec"] for o in objs if o["kind"] in WORKLOAD_KINDS
    ]


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
def test_unmodified_workload_runs_on_dra_devices(
    target: Target, check: Checks, namespace: str, manifest: Path | None
) -> None:
    api, p = target.api, target.profile
    if manifest is None:
        pytest.skip(f"not tested: profile {p.name} names no stored workload set (workloads:)")
    objs = load_manifest(manifest)
    names = requested_names(objs)
    classes_used = {
        r["exactly"]["deviceClassName"]
        for o in objs
        if o["kind"] == "ResourceClaim"
        for r in o["spec"]["devices"]["requests"]
    }
    images = {c["image"] for s in _pod_specs(objs) for c in [*(s.get("initContainers") or []), *s["containers"]]}
    # name -> the requirement that it resolves to the profile's class
    served_names = {p.extended_resource_name: "NAME-1", p.implicit_resource_name: "NAME-2"}
    # A set given with a profile (e.g. by path) may hold manifests written for another driver.
    if not (names <= set(served_names) and classes_used <= {p.device_class} and images <= {p.workload_image}):
        pytest.skip(
            f"not tested: {manifest.name} asks for {sorted(names)}, classes {sorted(classes_used)}, images "
            f"{sorted(images)}; profile {p.name} serves {sorted(served_names)}, class "
            f"{p.device_class}, image {p.workload_image}"
        )
    implicit = p.implicit_resource_name in names
    served, why = requirement("NAME-2").applies_to(target.minor, gate_enabled=True)
    if implicit and not served:
        pytest.skip(f"{manifest.name} uses an implicit name, which this version does not serve: {why}")

    created = apply_manifest(api, manifest, namespace)
    want = _expected_pods(created)

    def listed() -> list[dict]:
        return pods_of(api, namespace, created)

    def describe() -> str:
        return "\n".join(pods.summary(api, namespace, q["metadata"]["name"]) for q in listed()) or "no pods"

    def running() -> list[dict] | None:
        found = listed()
        ok = [q for q in found if (q.get("status") or {}).get("phase") in ("Running", "Succeeded")]
        return ok if len(ok) >= want else None

    with check("NAME-2" if implicit else "NAME-1", stop=True):
        ready = wait_for(
            running, timeout=300, interval=2, what=f"{want} pods of {manifest.name} Running", describe=describe
        )

    held: dict[str, list[tuple[str, str]]] = {}  # "pod/claim" -> devices, for the pods' special and own claims
    for q in ready:
        name = q["metadata"]["name"]
        if q["status"]["phase"] == "Succeeded":
            _check_finished(target, check, q)
            continue
        exact = not _has_plain_init(q["spec"])
        claim = special_claim(api, q)
        # Before verify_served, whose claim problems end the test: a wrong class fails the name's ID.
        for resource, rid in served_names.items():
            if expected_requests(q, {resource: p.device_class}):
                with check(rid):
                    bad = misresolved(q, claim, {resource: p.device_class}, exact)
                    assert not bad, pods.observed(
                        f"pod {name}: {resource} not served by {p.device_class} as asked: {bad}; "
                        f"resolved: {resolution(q, claim)}",
                        q,
                        claim,
                    )
        served = scenario.verify_served(target, check, q, exact_counts=exact)
        for c in [served.claim["metadata"]["name"], *[n for n in devices_lib.user_claim_names(q).values() if n]]:
            held[f"{name}/{c}"] = pods.claim_devices(api, namespace, c)
    if len(held) > 1:  # devices within one claim are checked by the claim oracle
        flat = [d for devs in held.values() for d in devs]
        check.that("ALLOC-1", len(flat) == len(set(flat)), f"claims of {manifest.name}'s pods share devices: {held}")

    for job in (o for o in created if o["kind"] == "Job"):
        with check("NAME-1"):
            wait_for(
                lambda: (
                    (api.get("batch/v1", "Job", job["metadata"]["name"], namespace) or {}).get("status") or {}
                ).get("succeeded"),
                timeout=180,
                what=f"job {job['metadata']['name']} to complete",
                describe=describe,
            )


def _check_finished(target: Target, check: Checks, q: dict) -> None:
    """A pod that already finished (a Job's): its claim may already be released (CLAIM-6), so each
    container's logged probe is compared with the claim's devices while the claim is still
    allocated, and otherwise with the driver's devices on the pod's node, as many as it asked for."""
    api, p = target.api, target.profile
    name, ns, node = q["metadata"]["name"], q["metadata"]["namespace"], q["spec"].get("nodeName")
    with check("STATUS-1"):
        assert claim_status(q) is not None, (
            f"finished pod {name} never named a special claim: {pods.summary(api, ns, name)}"
        )
    ids, spelled = devices_lib.device_ids(api, p), devices_lib.channel_ids(api, p)
    claim = special_claim(api, q)
    allocated = bool(claim and (claim.get("status") or {}).get("allocation"))
    # A probe that names requests is judged from the pod's status, which outlives the claim.
    expected = (
        devices_lib.expected_per_container(q, claim, ids, p.probe) if allocated or not p.probe.names_devices else None
    )
    pools = pods.pool_nodes(api, p.driver)
    on_node = {i for (pool, _), i in ids.items() if pools.get(pool) == node}
    asked = expected_requests(q, {p.extended_resource_name: p.device_class, p.implicit_resource_name: p.device_class})
    for c in [*(q["spec"].get("initContainers") or []), *q["spec"]["containers"]]:
        seen = probe_container(api, p, q, c["name"])
        count = sum(n for (container, _), n in asked.items() if container == c["name"])
        if expected is not None:
            ok, wanted = seen.device_ids == expected.get(c["name"], []), f"the claim's {expected.get(c['name'], [])}"
        else:
            ok = len(seen.device_ids) == count == len(set(seen.device_ids)) and set(seen.device_ids) <= on_node
            wanted = f"{count} distinct of node {node}'s {sorted(on_node)} (claim released)"
        # The profile's further channels (e.g. environment variables) must name the same devices.
        ok = ok and all(
            shown == devices_lib.as_channel(spelled, channel, seen.device_ids)
            for channel, shown in seen.channels.items()
        )
        check.that(
            "CTR-1",
            ok,
            f"container {c['name']} of finished pod {name} saw {seen.device_ids} "
            f"(channels {seen.channels}), expected {wanted}; probe output: {seen.raw.strip()[:400]!r}",
        )
