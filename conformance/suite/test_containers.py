"""Which container sees which device (spec §3.6-3.7; CTR-*, KUBELET-2).

Each container runs the profile's probe; its output must list exactly the devices of the
requests mapped to that container, and no device may show up in two long-lived containers.
"""

from __future__ import annotations

import uuid

import pytest
from kubernetes.client.exceptions import ApiException

from conformance.catalogue import requirement
from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import IMPLICIT_PREFIX, claim_status, request_naming, special_claim
from conformance.lib.objects.workloads import ProbeError, probe_container
from conformance.lib.objects.writes import accepted, refused_as_invalid
from conformance.lib.oracles import scenario
from conformance.lib.oracles.devices import device_ids, expected_per_container
from conformance.lib.oracles.scenario import Served
from conformance.lib.profile import Profile
from conformance.suite.conftest import Target, needs_explicit_name
from kube.api import Api, Obj
from kube.waits import wait_for

# layout name -> devices asked for by each regular container, in order
# Ends the ephemeral container's probe output: the probe's exit status follows it.
PROBE_END = "kep5004-probe-exit="
LAYOUTS = {
    "1x1": [1],
    "1x3": [3],
    "3x1": [1, 1, 1],
    "3-containers-1-2-3": [1, 2, 3],
}


def _probe(api: Api, p: Profile, pod: Obj, containers: list[str]) -> dict[str, list[str]]:
    """container -> device ids its probe printed."""
    return {c: probe_container(api, p, pod, c).device_ids for c in containers}


def _mapped(api: Api, p: Profile, served: Served) -> dict[str, list[str]]:
    """container -> device ids of the special claim's requests mapped to it: what it should see."""
    return expected_per_container(served.pod, served.claim, device_ids(api, p), p.probe)


def _shared(seen: dict[str, list[str]]) -> list[str]:
    """Device ids that appear in more than one of the containers."""
    ids = [d for devs in seen.values() for d in devs]
    return sorted({d for d in ids if ids.count(d) > 1})


@pytest.mark.requirement("CTR-1", "KUBELET-2")
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_each_container_sees_exactly_its_devices(target: Target, check: Checks, namespace: str, layout: str) -> None:
    api, p = target.api, target.profile
    asked = {f"c{i}": k for i, k in enumerate(LAYOUTS[layout])}
    containers = [pods.container(n, p, {p.extended_resource_name: k}) for n, k in asked.items()]
    served = scenario.run_pod_and_verify(target, check, namespace, pods.pod(f"layout-{layout.lower()}", containers))
    seen, mapped = _probe(api, p, served.pod, list(asked)), _mapped(api, p, served)
    shown = lambda: pods.observed("", served.pod, served.claim)  # noqa: E731 - evaluated only on failure
    # KUBELET-2 is about which container gets the CDI devices of which requests: the counts (of
    # devices, or of requests, one per container here, for a probe that names requests). Which
    # devices they are is the driver's (CTR-1, checked against the claim by verify_served).
    shows = {n: k if p.probe.names_devices else 1 for n, k in asked.items()}
    with check("KUBELET-2", observed=shown):
        assert all(len(seen[n]) == len(mapped.get(n, [])) == shows[n] for n in asked), (
            f"containers see {seen}; the requests mapped to them hold {mapped}; asked {asked}"
        )
    with check("CTR-1", observed=shown):
        assert not _shared(seen), f"devices seen by more than one container: {_shared(seen)}; seen {seen}"


@pytest.mark.requirement("CTR-2", "ALLOC-5")
def test_one_container_with_three_names(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    api, p = target.api, target.profile
    tag = uuid.uuid4().hex[:8]
    classes = {p.extended_resource_name: p.device_class}
    for suffix in ("a", "b"):
        name = f"example.com/ctr2-{suffix}-{tag}"
        classes[name] = pods.create_device_class(api, request, p.driver, name, prefix=f"ctr2-{suffix}")["metadata"][
            "name"
        ]
    pod = pods.pod("three-names", [pods.container("main", p, {n: 1 for n in classes})])
    served = scenario.run_pod_and_verify(target, check, namespace, pod, classes=classes)
    with check("CTR-2", observed=lambda: pods.observed("", served.pod, served.claim)):
        requests = served.claim["spec"]["devices"]["requests"]
        used = sorted(r["exactly"]["deviceClassName"] for r in requests)
        assert used == sorted(classes.values()), (
            f"expected one request per name, for classes {sorted(classes.values())}; got {used}"
        )
        seen, mapped = probe_container(api, p, served.pod, "main").device_ids, _mapped(api, p, served).get("main")
        assert len(seen) == 3 and seen == mapped, (
            f"container main sees {seen}, the claim's three requests hold {mapped}"
        )
    check.observe("ALLOC-5", request_naming(served.pod, served.claim))


@pytest.mark.requirement("CTR-1", "CTR-2", "KUBELET-2")
def test_three_containers_with_one_two_and_three_distinct_names(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    """As upstream's three-container case: the first container asks for the explicit name, the
    second adds the implicit one, the third adds the implicit name of a second class; each must see
    exactly the devices of its own requests, one per name."""
    api, p = target.api, target.profile
    needs_explicit_name(target.profile)
    other = pods.create_device_class(api, request, p.driver, prefix="three-names")["metadata"]["name"]
    names = [p.extended_resource_name, p.implicit_resource_name, IMPLICIT_PREFIX + other]
    classes = {names[0]: p.device_class, names[1]: p.device_class, names[2]: other}
    asked = {f"c{i}": names[: i + 1] for i in range(3)}
    containers = [pods.container(c, p, {n: 1 for n in wanted}) for c, wanted in asked.items()]
    served = scenario.run_pod_and_verify(
        target, check, namespace, pods.pod("one-two-three", containers), classes=classes
    )
    seen, mapped = _probe(api, p, served.pod, list(asked)), _mapped(api, p, served)
    shown = lambda: pods.observed("", served.pod, served.claim)  # noqa: E731 - evaluated only on failure
    with check("CTR-2", observed=shown):
        per_container = {
            c: sorted(m["resourceName"] for m in claim_status(served.pod)["requestMappings"] if m["containerName"] == c)
            for c in asked
        }
        assert per_container == {c: sorted(w) for c, w in asked.items()}, (
            f"the status maps {per_container}; the containers asked for {asked}"
        )
    with check("KUBELET-2", observed=shown):
        assert all(len(seen[c]) == len(mapped.get(c, [])) == len(w) for c, w in asked.items()), (
            f"containers see {seen}; the requests mapped to them hold {mapped}; asked {asked}"
        )
    with check("CTR-1", observed=shown):
        assert not _shared(seen), f"devices seen by more than one container: {_shared(seen)}; seen {seen}"


@pytest.mark.requirement("CTR-3", "ALLOC-5")
def test_init_containers_reuse_devices_of_later_containers(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    ern = p.extended_resource_name
    init = [
        pods.container("init-first", p, {ern: 2}, command=p.probe.shell),
        pods.container("sidecar", p, {ern: 1}, restart_always=True),
        pods.container("init-last", p, {ern: 1}, command=p.probe.shell),
    ]
    main = [pods.container("main", p, {ern: 1})]
    served = scenario.run_pod_and_verify(
        target, check, namespace, pods.pod("init-reuse", main, init=init), exact_counts=False
    )
    check.observe("ALLOC-5", request_naming(served.pod, served.claim))
    if not requirement("CTR-3").applies_to(target.minor, gate_enabled=True)[0]:
        return  # 1.34: every init container gets devices of its own (the summary says so from the catalogue)
    seen = _probe(api, p, served.pod, ["init-first", "sidecar", "init-last", "main"])
    with check("CTR-3", observed=lambda: pods.observed("", served.pod, served.claim)):
        devices = pods.claim_devices(api, namespace, served.claim["metadata"]["name"])
        assert len(devices) == 2, f"the pod should use 2 devices in total, its claim holds {devices}"
        assert len(seen["sidecar"]) == 1 and len(seen["main"]) == 1 and not set(seen["sidecar"]) & set(seen["main"]), (
            f"sidecar and main should each have one device of their own: {seen}"
        )
        assert seen["init-first"] == sorted(seen["sidecar"] + seen["main"]), (
            f"first init container should see the sidecar's and main's devices: {seen}"
        )
        assert seen["init-last"] == seen["main"], f"last init container should see main's device: {seen}"


@pytest.mark.requirement("KUBELET-2")
def test_container_without_request_sees_no_device(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    containers = [pods.container("gpu", p, {p.extended_resource_name: 1}), pods.container("plain", p, {})]
    served = scenario.run_pod_and_verify(target, check, namespace, pods.pod("one-plain", containers))
    plain = probe_container(api, p, served.pod, "plain")
    gpu, mapped = probe_container(api, p, served.pod, "gpu").device_ids, _mapped(api, p, served).get("gpu")
    with check("KUBELET-2", observed=lambda: pods.observed("", served.pod, served.claim)):
        assert p.probe.saw_nothing(plain.raw), f"container plain, without a request, sees: {plain.raw.strip()[:400]!r}"
        assert len(gpu) == len(mapped or []) == 1, f"container gpu sees {gpu}, its mapped request holds {mapped}"


def _allocation(api: Api, pod: Obj) -> tuple[Obj | None, str | None, Obj | None, Obj | None]:
    """What CTR-4 must find unchanged: the pod's status, and the special claim's uid, requests and allocation."""
    claim = special_claim(api, pod) or {}
    return (
        claim_status(pod),
        claim.get("metadata", {}).get("uid"),
        claim.get("spec"),
        (claim.get("status") or {}).get("allocation"),
    )


@pytest.mark.requirement("CTR-4")
def test_ephemeral_containers_get_no_devices(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    served = scenario.run_pod_and_verify(
        target, check, namespace, pods.pod("debugged", [pods.container("main", p, {p.extended_resource_name: 1})])
    )
    before = _allocation(api, served.pod)
    ephemeral = api.resource("v1", "Pod").ephemeralcontainers

    def add(container: Obj) -> Obj:
        return ephemeral.patch(
            name="debugged",
            namespace=namespace,
            body={"spec": {"ephemeralContainers": [container]}},
            content_type="application/strategic-merge-patch+json",
        ).to_dict()

    # The probe runs at start and the suite marks its end with the probe's exit status, in words no
    # profile's probe prints: probe_container reads an ephemeral container's log (it execs only
    # into init and regular containers), and "sees nothing" must still be the profile's own sign.
    debug = {
        "name": "debug",
        "image": p.workload_image,
        "imagePullPolicy": p.workload_pull_policy,
        "command": ["sh", "-c", f"{p.probe.shell}; echo {PROBE_END}$?; {pods.SLEEP}"],
    }
    with check("CTR-4"):
        with_gpu = {**debug, "name": "debug-gpu", "resources": {"limits": {p.extended_resource_name: "1"}}}
        refused_as_invalid(lambda: add(with_gpu), f"an ephemeral container asking for {p.extended_resource_name}")
    with check("CTR-4", stop=True):
        accepted(lambda: add(debug), "an ephemeral container without resources")

        def probed() -> Obj | None:
            q = pods.get(api, namespace, "debugged")
            return q if PROBE_END in probe_container(api, p, q, "debug").raw else None

        # Reading the log of a container that has not started yet is an API error: "not yet".
        pod = wait_for(
            probed,
            timeout=120,
            what="ephemeral container debug to run its probe",
            transient=(ApiException,),
            describe=lambda: str(pods.get(api, namespace, "debugged")["status"].get("ephemeralContainerStatuses")),
        )
    seen = probe_container(api, p, pod, "debug")
    output, _, status = seen.raw.partition(PROBE_END)
    if status.split()[:1] != ["0"]:
        raise ProbeError(
            f"profile {p.name}'s probe {p.probe.shell!r} in ephemeral container debug exited "
            f"{status.split()[:1] or '?'}: {output.strip()[-400:] or '(no output)'}"
        )
    with check("CTR-4"):
        assert p.probe.saw_nothing(output), f"ephemeral container debug sees: {output.strip()[:400]!r}"
    with check("CTR-4", observed=lambda: pods.observed("", pod, special_claim(api, pod))):
        after = _allocation(api, pod)
        assert after == before, (
            f"after adding ephemeral container debug: (status, claim uid, claim spec, allocation) {after}, before {before}"
        )
