"""Everything the suite creates carries one label, so that it can all be found and removed:
after a run, and after a run that was interrupted before its tests' own teardown ran."""

from __future__ import annotations

from conformance.lib.objects.special_claim import allocation_results
from kube.api import RBAC_API, RESOURCE_API, TRANSIENT_ERRORS, Api, Obj
from kube.waits import wait_for

LABEL = "kep5004.io/test"
SELECTOR = f"{LABEL}=true"
# Cluster-scoped kinds the suite creates; everything else lives in the labelled namespaces.
ADMISSION_API = "admissionregistration.k8s.io/v1"
CLUSTER_SCOPED = (
    ("v1", "Namespace"),
    (RESOURCE_API, "DeviceClass"),
    # ALLOC-8 refuses bindings in its namespace with a policy of its own
    (ADMISSION_API, "ValidatingAdmissionPolicyBinding"),
    (ADMISSION_API, "ValidatingAdmissionPolicy"),
    # the scoring tests' own kube-scheduler holds kube-scheduler's roles (own_scheduler.py)
    (RBAC_API, "ClusterRoleBinding"),
)


def labelled(obj: Obj) -> Obj:
    """`obj` with the suite's label added (in place, returned for chaining)."""
    obj.setdefault("metadata", {}).setdefault("labels", {})[LABEL] = "true"
    return obj


def new_namespace(api: Api, name: str, pull_secret: tuple[str, str] | None = None, privileged: bool = False) -> None:
    """Create the labelled namespace `name`, ready for pods: the API server refuses pods (403,
    "serviceaccount default not found") until kube-controller-manager has made the namespace's
    default ServiceAccount, which takes longer while that controller restarts or the host is
    loaded (seen on 1.37.2 right after etcd restarted). pull_secret: (namespace, name) of a Secret
    copied in and named by that ServiceAccount, so every pod there pulls images with it.
    privileged: Pod Security admits privileged pods there (node access)."""
    security = {"pod-security.kubernetes.io/enforce": "privileged"} if privileged else {}
    api.create(labelled({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": security}}))
    wait_for(
        lambda: api.get("v1", "ServiceAccount", "default", name),
        timeout=120,
        interval=0.2,
        transient=TRANSIENT_ERRORS,
        what=f"the default ServiceAccount of namespace {name}",
    )
    if pull_secret:
        source = api.get("v1", "Secret", pull_secret[1], pull_secret[0])
        assert source is not None, f"the workload image's pull secret {pull_secret[0]}/{pull_secret[1]} does not exist"
        api.create(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": source.get("type"),
                "data": source.get("data"),
                "metadata": {"name": pull_secret[1]},
            },
            name,
        )
        api.resource("v1", "ServiceAccount").patch(
            name="default",
            namespace=name,
            body={"imagePullSecrets": [{"name": pull_secret[1]}]},
            content_type="application/merge-patch+json",
        )


def leftovers(api: Api) -> list[str]:
    """`Kind/name` of every object the suite made that still exists."""
    return [
        f"{kind}/{o['metadata']['name']}"
        for version, kind in CLUSTER_SCOPED
        for o in api.list(version, kind, label_selector=SELECTOR)
    ]


def sweep(api: Api, timeout: float = 180) -> list[str]:
    """Delete every labelled object (namespaces take their pods, claims and quotas with them) and
    wait until they are gone: a namespace still terminating holds pods and devices. Returns what
    it deleted: what the tests left, not what their teardown was already deleting."""
    gone = []
    for version, kind in CLUSTER_SCOPED:
        for o in api.list(version, kind, label_selector=SELECTOR):
            if not o["metadata"].get("deletionTimestamp"):
                api.delete(version, kind, o["metadata"]["name"])
                gone.append(f"{kind}/{o['metadata']['name']}")
    wait_for(
        lambda: not leftovers(api),
        timeout=timeout,
        interval=2,
        what="the objects the suite made to be gone",
        describe=lambda: ", ".join(leftovers(api)),
    )
    return gone


def _departing_namespaces(api: Api) -> list[str]:
    return [
        o["metadata"]["name"]
        for o in api.list("v1", "Namespace", label_selector=SELECTOR)
        if o["metadata"].get("deletionTimestamp")
    ]


def held_by_departing(api: Api, driver: str) -> list[str]:
    """The claims of the suite's namespaces that are being deleted which hold devices of `driver`:
    until those claims go, the devices are not free."""
    held = []
    for ns in _departing_namespaces(api):
        for claim in api.list(RESOURCE_API, "ResourceClaim", ns):
            results = [r for r in allocation_results(claim) if r.get("driver") == driver]
            if results:
                devices = ", ".join(f"{r['pool']}/{r['device']}" for r in results)
                held.append(f"{ns}/{claim['metadata']['name']} ({devices})")
    return held


def _still_there(api: Api) -> str:
    """What keeps the departing namespaces: their pods and claims, with phase and finalizers."""
    lines = []
    for ns in _departing_namespaces(api):
        for kind, version in (("Pod", "v1"), ("ResourceClaim", RESOURCE_API)):
            for o in api.list(version, kind, ns):
                meta, status = o["metadata"], o.get("status") or {}
                state = status.get("phase") or ("allocated" if status.get("allocation") else "not allocated")
                lines.append(
                    f"{kind} {ns}/{meta['name']}: {state}, node {o.get('spec', {}).get('nodeName', '-')}, "
                    f"finalizers {meta.get('finalizers') or []}, deleting since {meta.get('deletionTimestamp')}"
                )
    return "; ".join(lines) or "nothing listed"


def wait_devices_released(api: Api, driver: str, timeout: float = 180) -> None:
    """Return once no namespace of an earlier test that is being deleted holds devices of `driver`."""
    wait_for(
        lambda: not held_by_departing(api, driver),
        timeout=timeout,
        interval=1,
        what=f"the {driver} devices of earlier tests' namespaces to be released",
        describe=lambda: f"held: {held_by_departing(api, driver)}; {_still_there(api)}",
    )
