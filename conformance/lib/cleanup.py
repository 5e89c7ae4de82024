"""Everything the suite creates carries one label, so that it can all be found and removed:
after a run, and after a run that was interrupted before its tests' own teardown ran."""
from __future__ import annotations

from conformance.lib.special_claim import RESOURCE_API
from kube.api import Api, Obj
from kube.waits import wait_for

LABEL = "kep5004.io/test"
SELECTOR = f"{LABEL}=true"
# Cluster-scoped kinds the suite creates; everything else lives in the labelled namespaces.
ADMISSION_API = "admissionregistration.k8s.io/v1"
CLUSTER_SCOPED = (("v1", "Namespace"), (RESOURCE_API, "DeviceClass"),
                  # ALLOC-8 refuses bindings in its namespace with a policy of its own
                  (ADMISSION_API, "ValidatingAdmissionPolicyBinding"), (ADMISSION_API, "ValidatingAdmissionPolicy"))


def labelled(obj: Obj) -> Obj:
    """`obj` with the suite's label added (in place, returned for chaining)."""
    obj.setdefault("metadata", {}).setdefault("labels", {})[LABEL] = "true"
    return obj


def leftovers(api: Api) -> list[str]:
    """`Kind/name` of every object the suite made that still exists."""
    return [f"{kind}/{o['metadata']['name']}" for version, kind in CLUSTER_SCOPED
            for o in api.list(version, kind, label_selector=SELECTOR)]


def sweep(api: Api, timeout: float = 180) -> list[str]:
    """Delete every labelled object (namespaces take their pods, claims and quotas with them) and
    wait until they are gone: a namespace still terminating holds pods and devices."""
    gone = leftovers(api)
    for version, kind in CLUSTER_SCOPED:
        for o in api.list(version, kind, label_selector=SELECTOR):
            api.delete(version, kind, o["metadata"]["name"])
    wait_for(lambda: not leftovers(api), timeout=timeout, interval=2, what="the objects the suite made to be gone",
             describe=lambda: ", ".join(leftovers(api)))
    return gone


def departing(api: Api) -> list[str]:
    """The suite's namespaces that are being deleted: until they are gone, their pods hold devices."""
    return [o["metadata"]["name"] for o in api.list("v1", "Namespace", label_selector=SELECTOR)
            if o["metadata"].get("deletionTimestamp")]


def wait_departed(api: Api, timeout: float = 180) -> None:
    """Return once no namespace of an earlier test is still being deleted."""
    wait_for(lambda: not departing(api), timeout=timeout, interval=1,
             what="the namespaces of earlier tests to be deleted (their pods still hold devices)",
             describe=lambda: ", ".join(departing(api)))
