"""Edges of the special claim's life: a DeviceClass deleted under a running pod (NEG-7), pods that
bypass the scheduler (KUBELET-6), quota refusing pods and special claims (QUOTA-6), which
existing claims the scheduler takes for a pod's special claim (ALLOC-9), and bindings that fail
after the claim was made (ALLOC-8).

Classes created here select the profile's devices and get unique names and unique explicit
names, because the name-to-class mapping is cluster-wide.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import pytest
from kubernetes.client.exceptions import ApiException

from conformance.catalogue import requirement
from conformance.lib.checks import Checks
from conformance.lib.objects import pods, writes
from conformance.lib.objects.cleanup import ADMISSION_API, labelled
from conformance.lib.objects.quota import CLAIM_COUNT, initialised, quota, used
from conformance.lib.objects.special_claim import ANNOTATION, RESOURCE_API, claim_status, claims_owned_by
from conformance.lib.objects.workloads import probe_container
from conformance.lib.oracles import scenario, survivors
from conformance.lib.profile import Profile
from conformance.suite.conftest import Target
from kube.api import Api, Obj
from kube.waits import WaitTimeout, holds_for, wait_for

# --- NEG-7: a DeviceClass deleted while a pod uses its devices ---------------------------------


@pytest.mark.requirement("NEG-7")
def test_deleting_a_device_class_in_use(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    api, p = target.api, target.profile
    name = f"example.com/doomed-{uuid.uuid4().hex[:8]}"
    cls = pods.create_device_class(api, request, p.driver, name, prefix="doomed")["metadata"]["name"]
    classes = {name: cls}
    served = scenario.run_pod_and_verify(
        target, check, namespace, pods.pod("user", [pods.container("main", p, {name: 1})]), classes=classes
    )
    before = survivors.snapshot(served)
    api.delete(RESOURCE_API, "DeviceClass", cls)
    pods.wait_gone(api, RESOURCE_API, "DeviceClass", cls, None, timeout=60)
    pods.wait_elapsed(2)  # for the scheduler to see the deletion before the new pod
    api.create(pods.pod("newcomer", [pods.container("main", p, {name: 1})]), namespace)
    # The requirement asks for Pending, whatever reason the scheduler gives.
    pods.check_stays_unscheduled(api, check, namespace, "newcomer", "NEG-7", duration=15, reason=None)
    # Checked last, so that both halves get a verdict (this one ends the test when it fails).
    survivors.check_unchanged(target, check, [before], "NEG-7", f"the deletion of DeviceClass {cls}", classes=classes)


# --- KUBELET-6: pods bound through spec.nodeName (informational) -------------------------------


def _bypass_outcome(api: Api, p: Profile, namespace: str, name: str) -> str:
    """What became of a pod bound directly to a node: phase, reason, special claim, what it sees."""
    try:
        pod = pods.wait_phase(api, namespace, name, ("Running", "Succeeded", "Failed"), timeout=60)
        waited = ""
    except WaitTimeout:
        pod, waited = pods.get(api, namespace, name), " (still, at the end of the wait)"
    status = pod.get("status") or {}
    states = {s["name"]: s.get("state") for s in status.get("containerStatuses") or []}
    seen = ""
    if status.get("phase") == "Running":
        view = probe_container(api, p, pod, "main")
        seen = (
            "; its probe saw no device"
            if p.probe.saw_nothing(view.raw)
            else f"; its probe shows devices {view.device_ids}: {view.raw.strip()[:300]!r}"
        )
    return (
        f"phase {status.get('phase')}{waited}, reason {status.get('reason')!r}, message {status.get('message')!r}, "
        f"extendedResourceClaimStatus {claim_status(pod)}, claims owned by the pod "
        f"{pods.owned_claims(api, namespace, name)}, container states {json.dumps(states, default=str)}{seen}"
    )


@pytest.mark.requirement("KUBELET-6")
@pytest.mark.parametrize("kind", ["explicit", "implicit"])
def test_pod_bound_directly_to_a_dra_node(target: Target, check: Checks, namespace: str, kind: str) -> None:
    api, p = target.api, target.profile
    resource = p.extended_resource_name if kind == "explicit" else p.implicit_resource_name
    nodes = sorted(pods.dra_capacity(api, p.driver))
    assert nodes, f"precondition: the driver {p.driver} publishes devices on no node"
    name = f"bypass-{kind}"
    obj = pods.pod(name, [pods.container("main", p, {resource: 1})])
    obj["spec"]["nodeName"] = nodes[0]  # the scheduler never sees the pod
    api.create(obj, namespace)
    try:
        check.observe(
            "KUBELET-6",
            f"pod asking for 1 {resource}, bound to {nodes[0]} through spec.nodeName: "
            + _bypass_outcome(api, p, namespace, name),
        )
    finally:
        api.delete("v1", "Pod", name, namespace)


# --- QUOTA-6: quota enforced when pods and special claims are created ---------------------------


def _refused_by_quota(write: Callable[[], Obj], what: str, shown: Callable[[], str]) -> None:
    """A write that must fail as 403 Forbidden for an exceeded quota; `shown` is added to a failure."""
    try:
        write()
    except ApiException as err:
        body = writes.answer(err)
        assert err.status == 403 and "exceeded quota" in body, (
            f"{what}: expected 403 Forbidden, exceeded quota; got {err.status}: {body[:800]}\n{shown()}"
        )
        return
    raise AssertionError(f"{what} was accepted\n{shown()}")


@pytest.mark.requirement("QUOTA-6")
@pytest.mark.parametrize("kind", ["explicit", "implicit"])
def test_pod_beyond_a_requests_quota_is_refused_at_creation(
    target: Target, check: Checks, namespace: str, kind: str
) -> None:
    api, p = target.api, target.profile
    served, why = requirement("NAME-2").applies_to(target.minor, gate_enabled=True)
    if kind == "implicit" and not served:
        pytest.skip(f"pods are not served through implicit names here: {why}")
    resource = p.extended_resource_name if kind == "explicit" else p.implicit_resource_name
    key = f"requests.{resource}"
    api.create(quota("requests", [key], limit=1), namespace)
    initialised(api, namespace, "requests")
    # The pod within the quota is admitted and served: a quota refusing everything is no limit.
    within = pods.pod("within", [pods.container("main", p, {resource: 1})])
    with check("QUOTA-6", stop=True):
        writes.accepted(lambda: api.create(within, namespace), f"pod within asking for 1 {resource} under {key}=1")
        pods.wait_running(api, namespace, "within", timeout=180)
    beyond = pods.pod("beyond", [pods.container("main", p, {resource: 1})])
    with check("QUOTA-6"):
        _refused_by_quota(
            lambda: api.create(beyond, namespace),
            f"pod beyond asking for 1 more {resource} than {key}=1 allows",
            lambda: f"quota used {used(api, namespace, 'requests')}",
        )
        assert api.get("v1", "Pod", "beyond", namespace) is None, "the refused pod beyond exists"


def _refusal_signs(api: Api, namespace: str, name: str) -> str:
    """The pod's PodScheduled condition and the events about it: what shows its claim refused."""
    cond = pods.condition(pods.get(api, namespace, name), "PodScheduled")
    events = api.list("v1", "Event", namespace, field_selector=f"involvedObject.name={name}")
    return json.dumps(
        {
            "PodScheduled": {k: cond.get(k) for k in ("status", "reason", "message")},
            "events": sorted({f"{e.get('reason')}: {str(e.get('message'))[:300]}" for e in events}),
        },
        indent=1,
    )


@pytest.mark.requirement("QUOTA-6")
def test_special_claim_beyond_a_claim_quota_waits_for_the_quota(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    ern = p.extended_resource_name
    api.create(quota("claims", [CLAIM_COUNT], limit=1), namespace)
    initialised(api, namespace, "claims")
    # The first special claim is within the quota: created, and its pod served.
    scenario.run_pod_and_verify(
        target, check, namespace, pods.pod("holder", [pods.container("main", p, {ern: 1})]), served_by="QUOTA-6"
    )
    # The claim count does not limit pods: the second pod is admitted, its special claim is not.
    api.create(pods.pod("waiter", [pods.container("main", p, {ern: 1})]), namespace)
    pods.check_stays_unscheduled(api, check, namespace, "waiter", "QUOTA-6", duration=15, reason=None)
    check.observe("QUOTA-6", f"a special claim refused by quota shows as: {_refusal_signs(api, namespace, 'waiter')}")
    api.delete("v1", "Pod", "holder", namespace)
    # Retried: once the holder's claim is gone and no longer counted, the waiter gets its own.
    with check("QUOTA-6", stop=True):
        pod = pods.wait_running(api, namespace, "waiter", timeout=180)
    scenario.verify_served(target, check, pod)


# --- ALLOC-9: which existing claim the scheduler takes for the pod's special claim --------------

SCHEDULING_GATE = "kep5004.io/claims-first"


def _gated_pod(api: Api, p: Profile, namespace: str, name: str) -> Obj:
    """A pod asking for one device that the scheduler leaves alone until _ungate, so that claims
    naming its uid exist before it is scheduled."""
    obj = pods.pod(name, [pods.container("main", p, {p.extended_resource_name: 1})])
    obj["spec"]["schedulingGates"] = [{"name": SCHEDULING_GATE}]
    return api.create(obj, namespace)


def _ungate(api: Api, namespace: str, name: str) -> None:
    pods.wait_elapsed(2)  # for the scheduler's claim cache to hold the claims created before
    api.resource("v1", "Pod").patch(
        name=name,
        namespace=namespace,
        body={"spec": {"schedulingGates": None}},
        content_type="application/merge-patch+json",
    )


def _claim_for(p: Profile, name: str, pod: Obj, annotation: str, controller: bool) -> Obj:
    """A user's claim for one device, annotated and owned by the pod like a special claim could be.
    `controller` is always set: an ownerReference without it can crash some schedulers."""
    claim = pods.user_claim(name, p.device_class)
    claim["metadata"]["annotations"] = {ANNOTATION: annotation}
    claim["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": pod["metadata"]["name"],
            "uid": pod["metadata"]["uid"],
            "controller": controller,
        }
    ]
    return claim


def _taken(api: Api, namespace: str, name: str, uid: str, pod_name: str) -> str:
    """How the scheduler took the user's claim for the pod's special claim: deleted it (a stale
    one, to start anew), allocated or reserved it, or named it in the pod status; "" if it did not."""
    claim = api.get(RESOURCE_API, "ResourceClaim", name, namespace)
    if claim is None or claim["metadata"]["uid"] != uid:
        return f"claim {name} was deleted"
    status = claim.get("status") or {}
    if status.get("allocation") or status.get("reservedFor") or claim["metadata"].get("finalizers"):
        return (
            f"claim {name} was allocated or reserved: finalizers {claim['metadata'].get('finalizers')}, "
            f"status {json.dumps(status, default=str)}"
        )
    if (claim_status(pods.get(api, namespace, pod_name)) or {}).get("resourceClaimName") == name:
        return f"the pod status names claim {name}"
    return ""


@pytest.mark.requirement("ALLOC-9")
def test_claim_without_both_marks_is_not_taken_for_the_special_claim(
    target: Target, check: Checks, namespace: str
) -> None:
    api, p = target.api, target.profile
    pod = _gated_pod(api, p, namespace, "owner")
    decoys = [  # each lacks one of the two marks
        _claim_for(p, "not-controller", pod, annotation="true", controller=False),
        _claim_for(p, "pod-name-value", pod, annotation="owner", controller=True),  # the value the KEP describes
    ]
    uids = {c["metadata"]["name"]: api.create(c, namespace)["metadata"]["uid"] for c in decoys}
    _ungate(api, namespace, "owner")

    def taken() -> list[str]:
        return [how for name, uid in uids.items() if (how := _taken(api, namespace, name, uid, "owner"))]

    # A scheduler taking a decoy for its own deletes it as stale or uses it: either shows before
    # (or without) the pod running; one that ignores them runs the pod with a claim of its own.
    try:
        wait_for(
            lambda: taken() or (pods.get(api, namespace, "owner").get("status") or {}).get("phase") == "Running",
            timeout=180,
            what="pod owner to run, or a claim to be taken for its own",
            describe=lambda: pods.summary(api, namespace, "owner"),
        )
    except WaitTimeout:
        pass  # the claims are checked whatever the pod did; its running is checked below
    # A taken claim also explains a pod that does not run: then the test ends here.
    with check("ALLOC-9", stop=True, observed=lambda: pods.summary(api, namespace, "owner")):
        found = taken()
        assert not found, (
            'claims lacking the annotation "true" or the controller reference were taken for the '
            "pod's special claim: " + "; ".join(found)
        )
    with check(target.profile.served_by, stop=True):
        running = pods.wait_running(api, namespace, "owner", timeout=10)
    scenario.verify_served(target, check, running)


@pytest.mark.requirement("ALLOC-9")
def test_claim_with_both_marks_is_taken_for_the_special_claim(target: Target, check: Checks, namespace: str) -> None:
    api, p = target.api, target.profile
    pod = _gated_pod(api, p, namespace, "owner")
    uid = api.create(_claim_for(p, "marked", pod, annotation="true", controller=True), namespace)["metadata"]["uid"]
    _ungate(api, namespace, "owner")
    # Taken: deleted as a stale claim of an earlier cycle (which has requests, as this one does;
    # ALLOC-8), or used. Ignored: left alone while the pod status names another claim.
    with check("ALLOC-9", observed=lambda: pods.summary(api, namespace, "owner")):
        wait_for(
            lambda: _taken(api, namespace, "marked", uid, "owner") or claim_status(pods.get(api, namespace, "owner")),
            timeout=90,
            what="claim marked to be taken for pod owner's special claim, or another to be named",
        )
        assert _taken(api, namespace, "marked", uid, "owner"), (
            'claim marked (annotation "true", controller reference to the pod) was ignored: the pod got another claim'
        )


# --- ALLOC-8: a binding that fails after the special claim was created -------------------------

REFUSED = "kep5004: binding refused on purpose"


def _refuse_bindings(api: Api, profile: Profile, request: pytest.FixtureRequest, namespace: str) -> str:
    """An admission policy refusing every pod binding in `namespace`: the scheduler then fails in
    Bind, after PreBind created the special claim. Returns the policy binding's name, whose
    deletion lets bindings through again."""
    name = f"kep5004-refuse-bindings-{uuid.uuid4().hex[:6]}"
    policy = labelled(
        {
            "apiVersion": ADMISSION_API,
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                # the scheduler binds through pods/binding; the canaries below through bindings
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["pods/binding", "bindings"],
                        }
                    ]
                },
                "validations": [{"expression": "false", "message": REFUSED}],
            },
        }
    )
    binding = labelled(
        {
            "apiVersion": ADMISSION_API,
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}},
            },
        }
    )
    api.create(policy)
    api.create(binding)
    if not request.config.getoption("--keep"):
        request.addfinalizer(
            lambda: [
                api.delete(ADMISSION_API, kind, name)
                for kind in ("ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy")
            ]
        )
    _until_refused(api, profile, namespace)
    return name


def _until_refused(api: Api, profile: Profile, namespace: str) -> None:
    """Policies take effect a moment after they are created: bind pods that no scheduler takes
    (canaries, asking for nothing; one that gets through just sleeps) ourselves until a binding
    is refused."""
    node = api.list("v1", "Node")[0]["metadata"]["name"]
    attempts = iter(range(1_000))

    def refused_now() -> bool:
        name = f"canary-{next(attempts)}"
        canary = pods.pod(name, [pods.container("main", profile, {}, command=pods.SLEEP)])
        canary["spec"]["schedulerName"] = "kep5004-no-such-scheduler"
        api.create(canary, namespace)
        try:
            api.create(
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": name},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": node},
                },
                namespace,
            )
        except ApiException as err:
            return REFUSED in writes.answer(err)
        return False

    wait_for(refused_now, timeout=60, interval=1, what=f"bindings in {namespace} refused by the suite's policy")


@pytest.mark.serial  # the scheduler's retries back off: alone, they come within seconds
@pytest.mark.requirement("ALLOC-8")
def test_failed_binding_leaves_a_single_special_claim(
    target: Target, check: Checks, namespace: str, request: pytest.FixtureRequest
) -> None:
    """Bindings are refused until the scheduler has failed to bind the pod after creating its
    special claim; while they are, a pod never owns two special claims, and once they are let
    through the pod runs with exactly one, the one its status names."""
    api, p = target.api, target.profile
    refusal = _refuse_bindings(api, p, request, namespace)
    api.create(pods.pod("rebound", [pods.container("main", p, {p.extended_resource_name: 1})]), namespace)
    pod = pods.get(api, namespace, "rebound")
    seen: set[str] = set()  # every special claim the pod ever owned

    def owned_now() -> list[str]:
        names = [c["metadata"]["name"] for c in claims_owned_by(api, pod)]
        seen.update(names)
        return names

    def refused() -> str | None:
        """Why the scheduler last failed to bind the pod, once that was our refusal (Bind runs after
        PreBind made the special claim, which Unreserve then deletes)."""
        owned_now()
        message = pods.condition(pods.get(api, namespace, "rebound"), "PodScheduled").get("message") or ""
        return message if REFUSED in message else None

    with check("ALLOC-8", stop=True, observed=lambda: pods.summary(api, namespace, "rebound")):
        why = wait_for(refused, timeout=120, interval=1, what="a binding of pod rebound refused")
        # The scheduler retries (and is refused) meanwhile.
        holds_for(
            lambda: len(owned_now()) <= 1,
            duration=15,
            interval=1,
            what="pod rebound owning at most one special claim while its bindings are refused",
            describe=lambda: f"owns {owned_now()}",
        )
    api.delete(ADMISSION_API, "ValidatingAdmissionPolicyBinding", refusal)
    with check("ALLOC-8", stop=True):
        running = pods.wait_running(api, namespace, "rebound", timeout=180)
    served = scenario.verify_served(target, check, running, as_id="ALLOC-8")
    final = served.claim["metadata"]["name"]
    with check("ALLOC-8", observed=lambda: pods.observed("", served.pod, served.claim)):
        owned = [c["metadata"]["name"] for c in claims_owned_by(api, served.pod)]
        assert owned == [final], f"after a refused binding ({why!r}) pod rebound owns {owned}; its status names {final}"
        stale = [name for name in seen - {final} if api.get(RESOURCE_API, "ResourceClaim", name, namespace)]
        assert not stale, f"claims made for the refused bindings still exist: {stale}"
