"""The scoring tests' own kube-scheduler without a cluster: what it takes from the cluster's, and
the objects that run it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from conformance.lib.objects import own_scheduler
from conformance.lib.objects.cleanup import LABEL
from kube.versions import KubeVersion

PROFILES = [{"schedulerName": "kep5004-x"}]


class Api:
    def __init__(self, mirror: dict[str, Any] | None, metrics: str = "") -> None:
        self.mirror, self.metrics = mirror, metrics

    def list(self, api_version: str, kind: str, namespace: str | None = None, **selectors: str) -> list[Any]:
        assert (kind, namespace, selectors) == ("Pod", "kube-system", {"label_selector": "component=kube-scheduler"})
        return [self.mirror] if self.mirror else []

    def raw(self, path: str) -> str:
        assert path == "/metrics"
        return self.metrics


def mirror(command: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "kube-scheduler-cp"},
        "spec": {
            "nodeName": "cp",
            "containers": [{"image": "registry.k8s.io/kube-scheduler:v1.35.4", "command": command}],
        },
    }


def test_the_cluster_schedulers_image_node_gates_and_emulated_version_carry_over_and_nothing_else():
    base = own_scheduler.basis(
        Api(
            mirror(
                [
                    "kube-scheduler",
                    "--kubeconfig=/etc/kubernetes/scheduler.conf",
                    "--leader-elect=true",
                    "--feature-gates=DRAExtendedResource=true",
                    "--emulated-version=1.34",
                ]
            )
        ),
        KubeVersion(1, 35, 4),
    )
    assert (base.image, base.node) == ("registry.k8s.io/kube-scheduler:v1.35.4", "cp")
    assert base.flags == ("--feature-gates=DRAExtendedResource=true", "--emulated-version=1.34")


def test_without_a_mirror_pod_upstreams_image_and_the_api_servers_gate():
    metrics = 'kubernetes_feature_enabled{name="DRAExtendedResource",stage="ALPHA"} 1\n'
    base = own_scheduler.basis(Api(None, metrics), KubeVersion(1, 35, 4))
    assert (base.image, base.node) == ("registry.k8s.io/kube-scheduler:v1.35.4", None)
    assert base.flags == ("--feature-gates=DRAExtendedResource=true",)
    assert own_scheduler.basis(Api(None, ""), KubeVersion(1, 37, 2)).flags == ()


def test_it_runs_only_the_given_profiles_without_leader_election_or_serving():
    base = own_scheduler.Basis("img", "cp", ("--feature-gates=A=true",), "test")
    objs = {o["kind"] + "/" + o["metadata"]["name"]: o for o in own_scheduler.manifests("ns", PROFILES, base)}
    config = yaml.safe_load(objs[f"ConfigMap/{own_scheduler.NAME}"]["data"]["config.yaml"])
    assert config["profiles"] == PROFILES and config["leaderElection"] == {"leaderElect": False}
    pod = objs[f"Pod/{own_scheduler.NAME}"]["spec"]
    assert pod["nodeName"] == "cp" and pod["serviceAccountName"] == own_scheduler.NAME
    assert pod["containers"][0]["command"][2:] == [
        "--secure-port=0",
        own_scheduler.SCORE_LOGGING,
        "--feature-gates=A=true",
    ]
    bindings = [o for o in objs.values() if o["kind"] == "ClusterRoleBinding"]
    # cluster-scoped, so labelled for the sweep after an interrupted run
    assert {b["roleRef"]["name"] for b in bindings} == set(own_scheduler.ROLES)
    assert all(b["metadata"]["labels"][LABEL] == "true" for b in bindings)
    assert all(
        b["subjects"] == [{"kind": "ServiceAccount", "name": own_scheduler.NAME, "namespace": "ns"}] for b in bindings
    )


def test_a_refused_flag_is_told_by_its_error_line_not_the_usage_text_after_it():
    log = "Error: unknown flag: --no-such-flag\nUsage:\n  kube-scheduler [flags]\n      --log-json-split-stream  errors to stderr\n"

    class Logs:
        def logs(self, namespace: str, pod: str, container: str, previous: bool = False) -> str:
            return log

    assert own_scheduler._last_words(Logs(), "ns") == "Error: unknown flag: --no-such-flag"  # type: ignore[arg-type]


def test_a_pods_scores_are_read_per_node_and_plugin_the_last_attempt_counting():
    line = (
        'I1207 22:25:44.96 1 schedule_one.go:984] "Plugin scored node for pod" pod="{}" plugin="{}" node="{}" score={}'
    )
    log = "\n".join(
        line.format(*fields)
        for fields in (
            ("ns/p", "NodeResourcesBalancedAllocation", "w1", 70),
            ("ns/p", "NodeResourcesBalancedAllocation", "w1", 73),  # a later attempt
            ("ns/p", "NodeAffinity", "w1", 100),
            ("ns/p", "NodeResourcesBalancedAllocation", "w2", 74),
            ("ns/other", "NodeResourcesBalancedAllocation", "w2", 99),
        )
    )

    class Logs:
        def logs(self, namespace: str, pod: str, container: str, previous: bool = False) -> str:
            return log

    found = own_scheduler.scores(Logs(), "ns", "p")  # type: ignore[arg-type]
    assert found == "w1: NodeAffinity 100, NodeResourcesBalancedAllocation 73; w2: NodeResourcesBalancedAllocation 74"
    assert own_scheduler.scores(Logs(), "ns", "unscored").startswith("none logged")  # type: ignore[arg-type]


def test_a_panic_is_read_from_the_instance_whose_frames_name_the_culprit():
    """The instance crashing now may have logged its panic line but not yet its stack (run 12 of
    2026-12-07 failed SCORE-1 so: BUG-12's panic seen, then read again without its frames)."""
    full = (
        "I1207 starting\npanic: runtime error: invalid memory address [recovered, repanicked]\n\n"
        "goroutine 1 [running]:\n"
        "k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources.(*resourceAllocationScorer).score(0xc0)\n"
        "\t/go/src/k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources/resource_allocation.go:158 +0x1\n"
        "k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources.(*BalancedAllocation).Score(0xc0)\n"
        "\t/go/src/k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go:169 +0x2\n"
    )
    partial = "I1207 starting\npanic: runtime error: invalid memory address [recovered, repanicked]\n"

    class Logs:
        def __init__(self, current: str, previous: str | None) -> None:
            self.current, self.previous = current, previous

        def logs(self, namespace: str, pod: str, container: str, previous: bool = False) -> str:
            if not previous:
                return self.current
            if self.previous is None:
                raise ApiException(status=400, reason="previous terminated container not found")
            return self.previous

    found = own_scheduler.panic(Logs(partial, full), "ns", "BalancedAllocation")  # type: ignore[arg-type]
    assert found == (
        "panic: runtime error: invalid memory address [recovered, repanicked]"
        " ; k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources.(*resourceAllocationScorer).score"
        " ; k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources.(*BalancedAllocation).Score"
    )
    assert own_scheduler.panic(Logs(partial, None), "ns", "BalancedAllocation") == partial.splitlines()[1]  # type: ignore[arg-type]
    assert own_scheduler.panic(Logs("I1207 fine\n", None), "ns", "BalancedAllocation") is None  # type: ignore[arg-type]


def test_a_refused_binding_is_one_line_and_leaves_no_binding_behind():
    from kubernetes.dynamic.exceptions import ForbiddenError

    class Refusing(Api):
        created: list[tuple[str, str]] = []
        deleted: list[tuple[str, str]] = []

        def create(self, obj: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
            if obj["kind"] == "ClusterRoleBinding" and self.created[-1][0] == "ClusterRoleBinding":
                err = ForbiddenError(
                    type("E", (), {"status": 403, "reason": "Forbidden", "body": None, "headers": {}})()
                )
                err.body = '{"message": "user cannot bind clusterrole system:volume-scheduler"}'
                err.headers = {"Content-Type": "application/json"}
                raise err
            self.created.append((obj["kind"], obj["metadata"]["name"]))
            return obj

        def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
            self.deleted.append((kind, name))

    api = Refusing(mirror(["kube-scheduler"]))
    canary = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "canary"}, "spec": {}}
    with pytest.raises(own_scheduler.NotStarted, match="403 user cannot bind clusterrole system:volume-scheduler$"):
        own_scheduler.start(api, "ns", PROFILES, KubeVersion(1, 37, 2), canary)  # type: ignore[arg-type]
    bindings = [c for c in api.created if c[0] == "ClusterRoleBinding"]
    assert bindings and api.deleted == bindings
