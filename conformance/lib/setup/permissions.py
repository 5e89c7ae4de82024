"""What the suite must be allowed to do in a cluster it is pointed at, checked before it starts.

Each entry is asked with a SelfSubjectAccessReview, so a restricted kubeconfig is refused up
front with the missing verb and resource named, instead of failing tests halfway with 403s.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.lib.objects import own_scheduler
from conformance.lib.profile import Profile
from kube.api import Api


@dataclass(frozen=True)
class Permission:
    verb: str
    resource: str = ""  # "pods", "deviceclasses", ...; empty for a non-resource URL
    group: str = ""
    subresource: str = ""
    path: str = ""  # a non-resource URL such as /metrics
    name: str = ""  # one object only (empty: any)
    why: str = ""

    def __str__(self) -> str:
        if self.path:
            return f"{self.verb} {self.path}"
        sub = f"/{self.subresource}" if self.subresource else ""
        group = f".{self.group}" if self.group else ""
        return f"{self.verb} {self.resource}{sub}{group}" + (f" {self.name}" if self.name else "")


RESOURCE = "resource.k8s.io"
RBAC = "rbac.authorization.k8s.io"
OWN_SCHEDULER_KINDS = ("serviceaccounts", "configmaps")
REQUIRED: tuple[Permission, ...] = (
    *(Permission(v, "namespaces", why="one namespace per test") for v in ("create", "delete", "list")),
    Permission("get", "serviceaccounts", why="a new namespace takes pods once its default ServiceAccount exists"),
    *(Permission(v, "pods") for v in ("create", "get", "list", "delete", "update", "patch")),
    Permission("watch", "pods", why="ALLOC-7: the pod as it was when scheduled"),
    # exec is a websocket GET since 1.30 (create for the older SPDY POST): both verbs are needed
    *(Permission(v, "pods", subresource="exec", why="the probe runs in test containers") for v in ("create", "get")),
    Permission("get", "pods", subresource="log", why="finished containers are judged by their probe output"),
    *(
        Permission(v, "pods", subresource="status", why="status validation (API-7, NEG-6, STATUS-4)")
        for v in ("update", "patch")
    ),
    Permission("patch", "pods", subresource="ephemeralcontainers", why="CTR-4"),
    *(Permission(v, "resourceclaims", RESOURCE) for v in ("create", "get", "list", "delete")),
    *(
        Permission(v, "deviceclasses", RESOURCE, why="naming tests create their own classes")
        for v in ("create", "get", "list", "update", "delete")
    ),
    Permission("list", "resourceslices", RESOURCE, why="devices per node, device ids"),
    *(
        Permission(v, "resourceslices", RESOURCE, why="KEP-4 publishes a device of a driver of its own")
        for v in ("create", "delete")
    ),
    *(Permission(v, "resourcequotas") for v in ("create", "get", "delete")),
    *(
        Permission(v, "priorityclasses", "scheduling.k8s.io", why="KEP-6 sets a lower and a higher priority")
        for v in ("create", "delete")
    ),
    *(Permission(v, "nodes") for v in ("get", "list")),
    Permission("get", "nodes", subresource="proxy", why="each kubelet's feature gates (preflight)"),
    Permission("list", "events", why="FailedScheduling and driver events"),
    Permission("list", "endpointslices", "discovery.k8s.io", why="diagnostics: where pods reach the API server"),
    *(Permission(v, "deployments", "apps", why="stored workloads, mixed tests") for v in ("create", "list", "delete")),
    *(Permission(v, "statefulsets", "apps", why="stored workloads") for v in ("create", "list")),
    *(Permission(v, "jobs", "batch", why="stored workloads") for v in ("create", "get", "list", "delete")),
    Permission("create", "services", why="stored workloads (a StatefulSet's headless Service)"),
    *(
        Permission(v, "daemonsets", "apps", why="the driver update test rolls the driver's DaemonSets")
        for v in ("get", "list", "patch")
    ),
    Permission("get", path="/metrics", why="kube-apiserver's feature gates (preflight)"),
    *(
        Permission(v, kind, "admissionregistration.k8s.io", why="ALLOC-8 refuses bindings in its own namespace")
        for kind in ("validatingadmissionpolicies", "validatingadmissionpolicybindings")
        for v in ("create", "list", "delete")
    ),
    Permission("create", "bindings", why="ALLOC-8 sees its binding refusal in force before relying on it"),
    Permission("list", "clusterrolebindings", RBAC, why="the sweep: the scoring tests' kube-scheduler holds roles"),
)
# The next two groups are granted by the generated ClusterRole but not asked for before a run:
# without them the requirements named are `not tested`, with the refusal as the reason.
#
# SCORE-1/2: the scoring tests' kube-scheduler of the suite's own needs kube-scheduler's roles.
OWN_SCHEDULER = (
    *(Permission("create", kind, why="SCORE-1/2: the scoring tests' kube-scheduler") for kind in OWN_SCHEDULER_KINDS),
    *(
        Permission(v, "clusterrolebindings", RBAC, why="SCORE-1/2: the scoring tests' kube-scheduler holds its roles")
        for v in ("create", "delete")
    ),
    *(
        Permission("bind", "clusterroles", RBAC, name=role, why="SCORE-1/2: the scoring tests' kube-scheduler")
        for role in own_scheduler.ROLES
    ),
)
# KEP-7 reads the leading kube-controller-manager's /metrics through a port-forward to its pod (a
# websocket GET, create for SPDY, like exec).
CONTROLLER_METRICS = (
    *(
        Permission(v, "pods", subresource="portforward", why="KEP-7: kube-controller-manager's metrics")
        for v in ("create", "get")
    ),
    Permission("get", "leases", "coordination.k8s.io", why="KEP-7: which kube-controller-manager leads"),
)
# Only for profiles with the nodeModes capability: the migration tests move a node between the
# device plugin and DRA by relabelling it.
RELABEL_NODES = Permission("patch", "nodes", why="nodeModes: the migration tests relabel nodes")


# Only for profiles whose workload image needs a pull secret: copied into each test namespace and
# named by its default ServiceAccount.
PULL_SECRET = (
    Permission("get", "secrets", why="workloadImagePullSecret: read from its namespace"),
    Permission("create", "secrets", why="workloadImagePullSecret: copied into each test namespace"),
    Permission(
        "patch", "serviceaccounts", why="workloadImagePullSecret: named by each test namespace's default ServiceAccount"
    ),
)


# Only when the disruptive tests are asked for (--disruptive): they delete the driver's pod on a
# node (delete pods, already needed) and drain a node of the suite's pods.
DISRUPT = (
    Permission("create", "pods", subresource="eviction", why="--disruptive: a node drained of the suite's pods"),
    Permission("patch", "nodes", why="--disruptive: a node cordoned and uncordoned"),
)


def required(profile: Profile, disruptive: bool = False) -> tuple[Permission, ...]:
    """What the suite needs for this profile's driver (and for the disruptive tests, if asked)."""
    extra = (
        ((RELABEL_NODES,) if profile.node_modes else ())
        + (PULL_SECRET if profile.workload_pull_secret else ())
        + (DISRUPT if disruptive else ())
    )
    seen = {str(p) for p in REQUIRED}
    more: list[Permission] = []
    for p in extra:
        if str(p) not in seen:
            seen.add(str(p))
            more.append(p)
    return REQUIRED + tuple(more)


def _allowed(api: Api, p: Permission) -> bool:
    attributes = (
        {"nonResourceAttributes": {"path": p.path, "verb": p.verb}}
        if p.path
        else {
            "resourceAttributes": {
                "verb": p.verb,
                "group": p.group,
                "resource": p.resource,
                "subresource": p.subresource,
                "name": p.name,
            }
        }
    )
    review = api.create(
        {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": attributes}
    )
    return bool((review.get("status") or {}).get("allowed"))


def missing(api: Api, needed: tuple[Permission, ...]) -> list[Permission]:
    return [p for p in needed if not _allowed(api, p)]


def granted(profile: Profile, disruptive: bool = False) -> tuple[Permission, ...]:
    """What the generated ClusterRole grants: what the suite needs, and what the scoring tests
    and KEP-7 use where they may."""
    return required(profile, disruptive) + OWN_SCHEDULER + CONTROLLER_METRICS


def cluster_role_rules(needed: tuple[Permission, ...]) -> list[dict[str, list[str]]]:
    """The RBAC rules granting exactly `needed`: what a ServiceAccount running the suite needs."""
    by_resource: dict[tuple[str, str, str], list[str]] = {}
    paths: dict[str, list[str]] = {}
    for p in needed:
        verbs = (
            paths.setdefault(p.path, [])
            if p.path
            else by_resource.setdefault(
                (p.group, p.resource + (f"/{p.subresource}" if p.subresource else ""), p.name), []
            )
        )
        if p.verb not in verbs:
            verbs.append(p.verb)
    rules = [
        {"apiGroups": [group], "resources": [resource], "verbs": verbs, **({"resourceNames": [name]} if name else {})}
        for (group, resource, name), verbs in by_resource.items()
    ]
    rules += [{"nonResourceURLs": [path], "verbs": verbs} for path, verbs in paths.items()]
    return rules
