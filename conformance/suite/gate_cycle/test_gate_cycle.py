"""DRAExtendedResource switched ON -> OFF -> ON on all four components with workloads running
(spec §3.11 GATE-1..4, UPGRADE-2, §3.1 API-2 and API-8). Runs on a `gate-cycle` cluster (one DRA
worker); where the gate is locked on, the control plane emulates the newest minor in which it can
still be switched off, and the kubelets keep it on (see conftest.py).

The tests are the scenario's steps, in file order: pods are started with the gate on (module
fixture `before`), the gate goes off (`gate_off`), each test checks one behaviour while it is
off, then the gate goes back on (`gate_on_again`) and the last test checks that service resumes
and that the devices of the pod deleted while the gate was off serve new pods.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from clusters import gates
from clusters.nodes import KindNodes
from clusters.versions import FEATURE_GATE
from conformance.lib.checks import Checks
from conformance.lib.objects import pods
from conformance.lib.objects.special_claim import RESOURCE_API, allocated_devices, claim_status
from conformance.lib.objects.workloads import probe_container
from conformance.lib.oracles import driver_state, scenario, survivors
from conformance.lib.profile import Profile
from conformance.lib.scenarios.steps import setup_checks
from conformance.suite.conftest import Target, needs_explicit_name
from conformance.suite.gate_cycle.conftest import Gate
from kube.api import Obj
from kube.waits import WaitTimeout

pytestmark = pytest.mark.serial
EXPLICIT_CLASS_NAME = "example.com/gate-cycle-gpu"  # a name no pod asks for: classes here only test the API
TOUCHED = "kep5004.io/touched"  # a label and a pod condition of ours: updates that change nothing else
# A kubelet restarted with the gate off stops running implicit-name pods
# (docs/upstream/bug-9-gate-off-implicit-name-stop.md).
IMPLICIT_BUG = "BUG-9"
READMISSION = 60  # s: a restarted kubelet re-admits its running pods within seconds of reporting ready


# Devices: 2 for each pod started before the cycle (6), 1 for each pod waiting while it is off and
# for each one started after it (4): 8 with the pod deleted while off, so that when every pod from
# before comes through (no BUG-9) the worker's 8 devices still serve all of them.
@dataclass
class Before:
    """What was started while the gate was on."""

    # must come through the cycle; None for a driver installed with the implicit name only, whose
    # pods all ask for that name and are judged as the implicit-name pod
    explicit: survivors.Snapshot | None
    implicit: survivors.Snapshot  # must too; re-admitted by kubelets restarted with the gate off (BUG-9)
    doomed: survivors.Snapshot  # deleted while the gate is off
    device_class: str  # created with extendedResourceName while on


@dataclass(frozen=True)
class Doomed:
    """The pod deleted while the gate is off, and the driver's state on its node just before."""

    pod: survivors.Snapshot
    held: driver_state.Held
    # Its phase at its deletion where it no longer ran: an implicit-name pod (a driver installed
    # with the implicit name only) may have been stopped by BUG-9 first, its claim unprepared then.
    stopped: str | None = None


def _gpu_pod(target: Target, name: str, resource: str, count: int = 2) -> dict:
    return pods.pod(name, [pods.container("main", target.profile, {resource: count})])


LOCKED = "locked to true"  # how a component words its refusal of a locked gate


@pytest.mark.requirement("GATE-4")
def test_gate_locked_on_unless_an_older_version_is_emulated(
    check: Checks, target: Target, gate: Gate, kind_nodes: KindNodes, record_property
) -> None:
    """Each component's own binary, started beside the running one with nothing to run with,
    must refuse the gate switched off, and the control plane's must accept it when emulating
    the minor the gate cycle runs as (the kubelet has no emulation)."""
    off = f"--feature-gates={FEATURE_GATE}=false"
    for component in ("kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubelet"):
        refused = gates.try_start(kind_nodes, component, target.version.tag, [off])
        record_property(f"{component} {off}", refused.strip()[-400:])
        check.that(
            "GATE-4",
            LOCKED in refused,
            f"{component} {target.version.tag} started with {off} did not refuse the locked gate: {refused[-800:]}",
        )
        if component != "kubelet":
            emulating = [f"--emulated-version={gate.emulated}", off]
            accepted = gates.try_start(kind_nodes, component, target.version.tag, emulating)
            check.that(
                "GATE-4",
                LOCKED not in accepted,
                f"{component} {target.version.tag} refused {' '.join(emulating)}: {accepted[-800:]}",
            )


@pytest.fixture(scope="module")
def before(request: pytest.FixtureRequest, target: Target, module_namespace: str, gate: Gate) -> Before:
    p = target.profile
    setup = setup_checks("starting the pods with the gate on")
    wanted = [("implicit", p.implicit_resource_name, "NAME-2"), ("doomed", p.extended_resource_name, p.served_by)]
    if p.explicit_name:
        wanted.insert(0, ("explicit", p.explicit_name, "NAME-1"))
    started = {
        name: survivors.snapshot(
            scenario.run_pod_and_verify(
                target, setup, module_namespace, _gpu_pod(target, name, resource), served_by=served_by
            )
        )
        for name, resource, served_by in wanted
    }
    started.setdefault("explicit", None)
    cls = pods.create_device_class(target.api, request, p.driver, EXPLICIT_CLASS_NAME, prefix="gate-on")
    return Before(**started, device_class=cls["metadata"]["name"])


@pytest.fixture(scope="module")
def gate_off(before: Before, gate: Gate) -> Before:
    gate.set(False)
    return before


@pytest.mark.requirement("GATE-2")
def test_explicit_name_pods_survive_switching_off(check: Checks, target: Target, gate_off: Before) -> None:
    needs_explicit_name(target.profile)
    assert gate_off.explicit is not None
    survivors.check_unchanged(target, check, [gate_off.explicit], "GATE-2", "switching the gate off")


@pytest.mark.requirement("GATE-2")
def test_implicit_name_pods_after_switching_off(
    check: Checks, target: Target, module_namespace: str, gate_off: Before
) -> None:
    """The spec spares running pods whatever name they use. Seen on 1.35.4 and 1.36.3 (BUG-9,
    docs/upstream/bug-9-gate-off-implicit-name-stop.md): a kubelet restarted with the gate off
    re-admits a running implicit-name pod without leaving the name out of its fit check and stops
    it (event OutOf<implicit name>)."""
    api, snap, after = target.api, gate_off.implicit, "switching the gate off"
    try:
        ended = pods.wait_phase(api, module_namespace, snap.name, ("Succeeded", "Failed"), timeout=READMISSION)
    except WaitTimeout:  # still running: it must have come through untouched
        survivors.check_unchanged(target, check, [snap], "GATE-2", after)
        return
    reason = f"OutOf{target.profile.implicit_resource_name}"
    try:
        pods.wait_event(api, module_namespace, snap.name, reason, timeout=30)
    except WaitTimeout as err:  # stopped, but not the way the known bug stops it
        check.that(
            "GATE-2",
            False,
            f"pod {snap.name} (implicit name) ended after {after}: {err}\n"
            f"{pods.summary(api, module_namespace, snap.name)}",
        )
        return
    check.known_bug(
        "GATE-2",
        IMPLICIT_BUG,
        target.minor,
        f"pod {snap.name} asking for {target.profile.implicit_resource_name} was stopped after {after}: "
        f"event {reason}, phase {ended['status']['phase']}",
    )


@pytest.mark.requirement("API-2")
def test_device_class_field_dropped_while_off(
    request: pytest.FixtureRequest, check: Checks, target: Target, gate_off: Before
) -> None:
    api, p = target.api, target.profile
    res = api.resource(RESOURCE_API, "DeviceClass")
    created = pods.create_device_class(api, request, p.driver, EXPLICIT_CLASS_NAME, prefix="gate-off")
    name = created["metadata"]["name"]
    stored = api.get(RESOURCE_API, "DeviceClass", name)["spec"]
    check.that(
        "API-2",
        "extendedResourceName" not in created["spec"] and "extendedResourceName" not in stored,
        f"a DeviceClass created with the gate off kept extendedResourceName: returned {created['spec']}, "
        f"stored {stored}",
    )
    res.patch(
        name=name,
        body={"spec": {"extendedResourceName": EXPLICIT_CLASS_NAME}},
        content_type="application/merge-patch+json",
    )
    stored = api.get(RESOURCE_API, "DeviceClass", name)["spec"]
    check.that(
        "API-2",
        "extendedResourceName" not in stored,
        f"an update adding extendedResourceName with the gate off was stored: {stored}",
    )
    res.patch(
        name=gate_off.device_class,
        body={"metadata": {"labels": {TOUCHED: "while-off"}}},
        content_type="application/merge-patch+json",
    )
    kept = api.get(RESOURCE_API, "DeviceClass", gate_off.device_class)["spec"]
    check.that(
        "API-2",
        kept.get("extendedResourceName") == EXPLICIT_CLASS_NAME,
        f"updating a class that already had extendedResourceName dropped it with the gate off: {kept}",
    )


@pytest.mark.requirement("API-8")
def test_pod_status_field_dropped_while_off(
    check: Checks, target: Target, module_namespace: str, gate_off: Before
) -> None:
    api, p = target.api, target.profile
    statuses = api.resource("v1", "Pod").status
    api.create(pods.pod("plain", [pods.container("main", p, {}, command=pods.SLEEP)]), module_namespace)
    pods.wait_running(api, module_namespace, "plain")
    status = {
        "resourceClaimName": "made-up",
        "requestMappings": [
            {"containerName": "main", "resourceName": p.extended_resource_name, "requestName": "container-0-request-0"}
        ],
    }
    statuses.patch(
        name="plain",
        namespace=module_namespace,
        body={"status": {"extendedResourceClaimStatus": status}},
        content_type="application/merge-patch+json",
    )
    stored = pods.get(api, module_namespace, "plain")
    check.that(
        "API-8",
        claim_status(stored) is None,
        f"a status update adding extendedResourceClaimStatus was stored with the gate off: {claim_status(stored)}",
    )
    # A status update of a pod that already carries the field must keep it: touch only a condition of ours.
    carrier = gate_off.explicit or gate_off.implicit  # a pod whose status names its special claim
    name = carrier.name
    statuses.patch(
        name=name,
        namespace=module_namespace,
        body={"status": {"conditions": [{"type": TOUCHED, "status": "True"}]}},
        content_type="application/strategic-merge-patch+json",
    )
    updated = pods.get(api, module_namespace, name)
    assert pods.condition(updated, TOUCHED), f"the status update of pod {name} was not applied: {updated.get('status')}"
    check.that(
        "API-8",
        (claim_status(updated) or {}).get("resourceClaimName") == carrier.claim,
        f"a status update with the gate off dropped pod {name}'s extendedResourceClaimStatus "
        f"(naming {carrier.claim} before): {claim_status(updated)}",
    )


# What is done while the gate is off are fixtures too, so that switching it back on always follows them.
@pytest.fixture(scope="module")
def waiting(target: Target, module_namespace: str, gate_off: Before) -> str | None:
    """A pod asking for the explicit name, created while the gate is off (none without one)."""
    if not target.profile.explicit_name:
        return None
    target.api.create(_gpu_pod(target, "waiting", target.profile.explicit_name, count=1), module_namespace)
    return "waiting"


@pytest.fixture(scope="module")
def waiting_implicit(target: Target, module_namespace: str, gate_off: Before) -> str:
    """A pod asking for the implicit name, created while the gate is off."""
    target.api.create(
        _gpu_pod(target, "waiting-implicit", target.profile.implicit_resource_name, count=1), module_namespace
    )
    return "waiting-implicit"


@pytest.fixture(scope="module")
def doomed_deleted(target: Target, module_namespace: str, gate_off: Before) -> Doomed:
    """The `doomed` pod, deleted while the gate is off (the driver's state read just before)."""
    api, doomed = target.api, gate_off.doomed
    node = pods.pool_nodes(api, target.profile.driver)[doomed.devices[0][0]]
    held = driver_state.held_before(api, target.profile, node, [doomed.claim_uid])
    phase = (pods.get(api, module_namespace, doomed.name).get("status") or {}).get("phase")
    api.delete("v1", "Pod", doomed.name, module_namespace)
    return Doomed(doomed, held, None if phase == "Running" else phase)


@pytest.mark.requirement("GATE-1")
def test_new_pods_stay_pending_without_claim_while_off(
    check: Checks, target: Target, module_namespace: str, waiting: str | None
) -> None:
    needs_explicit_name(target.profile)
    assert waiting is not None
    # 30 s like the upstream gate-cycle test; without device plugin the scheduler finds no node.
    pods.check_stays_unscheduled(target.api, check, module_namespace, waiting, "GATE-1", duration=30)


@pytest.mark.requirement("GATE-1")
def test_implicit_name_reported_insufficient_while_off(
    check: Checks, target: Target, module_namespace: str, waiting_implicit: str
) -> None:
    """With the gate off the implicit name is just an extended resource no node has: the pod
    stays Pending and the scheduler says it finds too little of it (as upstream checks)."""
    api, name = target.api, target.profile.implicit_resource_name
    pods.check_stays_unscheduled(api, check, module_namespace, waiting_implicit, "GATE-1", duration=15)
    message = pods.condition(pods.get(api, module_namespace, waiting_implicit), "PodScheduled").get("message", "")
    check.that(
        "GATE-1",
        f"Insufficient {name}" in message,
        f"pod {waiting_implicit} (asking for {name}) is unschedulable with the gate off, but the scheduler "
        f"does not report {name} as insufficient: {message!r}",
    )


@pytest.mark.requirement("GATE-2")
def test_claims_collected_while_off(
    check: Checks, target: Target, module_namespace: str, doomed_deleted: Doomed
) -> None:
    with check("GATE-2"):
        pods.wait_gone(target.api, RESOURCE_API, "ResourceClaim", doomed_deleted.pod.claim, module_namespace)


@pytest.fixture(scope="module")
def gate_on_again(
    target: Target, gate_off: Before, waiting: str | None, waiting_implicit: str, doomed_deleted: Doomed, gate: Gate
) -> list[survivors.Snapshot]:
    """Switch the gate back on; the pods that must come through it: the explicit-name pod, and the
    implicit-name pod unless switching the gate off stopped it (BUG-9)."""
    implicit = target.api.get("v1", "Pod", gate_off.implicit.name, gate_off.implicit.namespace) or {}
    running = (implicit.get("status") or {}).get("phase") == "Running"
    gate.set(True)
    return [*([gate_off.explicit] if gate_off.explicit else []), *([gate_off.implicit] if running else [])]


def _claim_on(name: str, profile: Profile, ids: list[str]) -> Obj:
    """An ordinary ResourceClaim that only the devices with these probe ids can satisfy."""
    claim = pods.user_claim(name, profile.device_class, count=len(ids))
    if profile.probe.device_id_attribute:
        domain, _, attribute = profile.probe.device_id_attribute.rpartition("/")
        field = f'device.attributes["{domain or profile.driver}"].{attribute}'
    else:
        field = "device.name"  # names repeat across nodes: the caller pins the pod to the node
    claim["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": f"{field} in {json.dumps(ids)}"}}
    ]
    return claim


@pytest.mark.requirement("GATE-3", "GATE-2", "UPGRADE-2")
def test_service_resumes_after_switching_on(
    check: Checks,
    target: Target,
    module_namespace: str,
    waiting: str | None,
    waiting_implicit: str,
    doomed_deleted: Doomed,
    gate_on_again: list[survivors.Snapshot],
) -> None:
    api, p, ns = target.api, target.profile, module_namespace
    survivors.check_unchanged(target, check, gate_on_again, "GATE-3", "switching the gate back on")
    with check("GATE-3", stop=True):
        pending = [pods.wait_running(api, ns, name, timeout=180) for name in (waiting, waiting_implicit) if name]
    started = [scenario.verify_served(target, check, pod, as_id="GATE-3").pod for pod in pending]
    started += [
        scenario.run_pod_and_verify(target, check, ns, _gpu_pod(target, name, resource, count=1), as_id="GATE-3").pod
        for name, resource in [
            *([("after", p.explicit_name)] if p.explicit_name else []),
            ("after-implicit", p.implicit_resource_name),
        ]
    ]

    # The devices of the pod deleted while the gate was off must serve pods again once it is back
    # on (the kubelet unprepares its claim): pods started now get those devices and their
    # containers see them; those the pods above did not get are free, so a claim asking for
    # exactly them, on that node, must serve. Device ids are compared per node (a profile may
    # identify devices by name, which repeats across nodes).
    node = doomed_deleted.held.node
    doomed = {(node, d) for d in doomed_deleted.pod.seen["main"]}
    seen = {(pod["spec"]["nodeName"], d) for pod in started for d in probe_container(api, p, pod, "main").device_ids}
    free = [d for n, d in sorted(doomed - seen)]
    with check("GATE-2"):
        if free:
            api.create(_claim_on("reuse", p, free), ns)
            reuse = pods.pod("reuse", [pods.container("main", p, {})])
            reuse["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
            reuse["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "reuse"}]
            reuse["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
            api.create(reuse, ns)
            ran = pods.wait_running(api, ns, "reuse", timeout=180)
            seen |= {(node, d) for d in probe_container(api, p, ran, "main").device_ids}
        assert doomed <= seen, (
            f"devices {sorted(doomed)} of pod {doomed_deleted.pod.name}, deleted while the gate was off, "
            f"are not seen by pods started after switching it on (they see {sorted(seen)})"
        )
    # Where the profile exposes the driver's node state: the claim was really unprepared there.
    if doomed_deleted.stopped is None:
        driver_state.check_released(api, p, check, "GATE-2", doomed_deleted.held)
    elif p.explicit_name is None and _stopped_by_readmission(api, ns, doomed_deleted.pod.name, p):
        check.known_bug(
            "GATE-2",
            IMPLICIT_BUG,
            target.minor,
            f"pod {doomed_deleted.pod.name} (asking for {p.implicit_resource_name}) was {doomed_deleted.stopped} "
            "before its deletion while the gate was off: stopped as the implicit-name pod was, its claim "
            "unprepared then, so its release at deletion cannot be seen",
        )
    else:
        check.that(
            "GATE-2",
            False,
            f"pod {doomed_deleted.pod.name} (asking for {p.extended_resource_name}) was "
            f"{doomed_deleted.stopped} before its deletion while the gate was off",
        )
    check.observe("UPGRADE-2", _tracking_after_reenabling(target, gate_on_again, started))


def _stopped_by_readmission(api, namespace: str, name: str, profile: Profile) -> bool:
    """The pod's kubelet stopped it re-admitting it without leaving the implicit name out of its
    fit check (event OutOf<implicit name>), as BUG-9 does."""
    try:
        pods.wait_event(api, namespace, name, f"OutOf{profile.implicit_resource_name}", timeout=10)
    except WaitTimeout:
        return False
    return True


def _tracking_after_reenabling(target: Target, kept: list[survivors.Snapshot], started: list[Obj]) -> str:
    """Whether the scheduler still knew, after the gate came back, which devices the pods from
    before the cycle hold: the KEP warns it may not; a device held by an old and a new pod
    would show it."""
    held = {device for snap in kept for device in snap.devices}
    new = {
        device
        for pod in started
        for device in allocated_devices(
            target.api.get(
                RESOURCE_API, "ResourceClaim", claim_status(pod)["resourceClaimName"], pod["metadata"]["namespace"]
            )
            or {}
        )
    }
    shared = sorted(held & new)
    return (
        f"after switching {FEATURE_GATE} off and on again, pods from before ({', '.join(s.name for s in kept)}) "
        f"hold {len(held)} devices and pods started since hold {len(new)}; "
        + (f"held by both: {shared} (the scheduler lost track of them)" if shared else "none held by both")
    )
