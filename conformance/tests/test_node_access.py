"""Node access through a privileged pod (no cluster): what the pod is, and that a refusal is a setup error."""

from __future__ import annotations

import pytest

from conformance.lib.profile import load
from conformance.lib.scenarios import node_access

POD_CREATED = "2026-12-07T01:00:00Z"


def starting(at: str) -> dict:
    """The kubelet's event of a start at `at`."""
    return {
        "reason": "Starting",
        "involvedObject": {"kind": "Node", "name": "node-a"},
        "lastTimestamp": at,
        "metadata": {"creationTimestamp": "2026-12-06T09:00:00Z"},
    }


class Cluster:
    """Pods end in `phase`; namespaces and pods are recorded; the node's kubelet has `events`."""

    def __init__(self, phase: str, events: list[dict] = ()) -> None:
        self.phase, self.created, self.deleted, self.events = phase, [], [], list(events)

    def create(self, obj: dict, namespace: str | None = None) -> dict:
        self.created.append((obj, namespace))
        return {**obj, "metadata": {**obj["metadata"], "creationTimestamp": POD_CREATED}}  # as the server answers

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        if kind == "Pod":
            return {
                "metadata": {"name": name, "creationTimestamp": POD_CREATED},
                "spec": {},
                "status": {"phase": self.phase},
            }
        return {"metadata": {"name": name}}

    def logs(self, namespace: str, pod: str, container: str) -> str:
        return "restarted\n"

    def list(self, api_version: str, kind: str, namespace: str | None = None, **selectors: str) -> list[dict]:
        return self.events if kind == "Event" else []

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        self.deleted.append((kind, name))


def test_the_kubelet_is_restarted_from_a_privileged_pod_in_the_host_pid_namespace_on_that_node() -> None:
    api = Cluster("Succeeded", [starting("2026-12-07T01:00:04Z")])
    node_access.restart_kubelet(api, load("fake-gpu"), "node-a")
    (namespace, _), (pod, pod_namespace) = api.created
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert pod_namespace == namespace["metadata"]["name"]
    spec = pod["spec"]
    assert spec["nodeName"] == "node-a" and spec["hostPID"] and spec["containers"][0]["securityContext"]["privileged"]
    assert spec["containers"][0]["command"][-3:] == ["systemctl", "restart", "kubelet"]
    assert api.deleted == [("Namespace", namespace["metadata"]["name"])]


def test_a_command_that_fails_on_the_node_is_an_error_naming_it_and_the_pod_goes() -> None:
    api = Cluster("Failed")
    with pytest.raises(AssertionError, match="restarting the kubelet on node-a through nodeAccess failed"):
        node_access.restart_kubelet(api, load("fake-gpu"), "node-a")
    assert [kind for kind, _ in api.deleted] == ["Namespace"]


def test_without_the_capability_nothing_is_created() -> None:
    api = Cluster("Succeeded")
    with pytest.raises(AssertionError, match="declares no nodeAccess"):
        node_access.restart_kubelet(api, load("example-gpu"), "node-a")
    assert not api.created


def test_a_restart_command_that_exits_0_without_a_new_kubelet_start_is_an_error() -> None:
    from kube.waits import WaitTimeout, set_timeout_scale

    set_timeout_scale(0.001)
    try:
        with pytest.raises(WaitTimeout, match="the kubelet of node-a to report that it started again"):
            node_access.restart_kubelet(
                Cluster("Succeeded", [starting("2026-12-06T23:00:00Z")]), load("fake-gpu"), "node-a"
            )
    finally:
        set_timeout_scale(1.0)


def test_a_reboot_is_seen_in_a_new_kubelet_start_and_the_node_ready_again() -> None:
    import dataclasses

    from kube.waits import WaitTimeout, set_timeout_scale

    p = load("fake-gpu")
    p = dataclasses.replace(p, node_access=dataclasses.replace(p.node_access, reboot=("reboot",)))
    api = Cluster("Running", [starting("2026-12-07T01:02:00Z")])
    api.get = lambda v, kind, name, ns=None: {
        "metadata": {"name": name, "creationTimestamp": POD_CREATED},  # type: ignore[method-assign]
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    node_access.reboot(api, p, "node-a")
    set_timeout_scale(0.001)
    try:
        api.events = [starting("2026-12-06T23:00:00Z")]  # a command that did not reboot anything
        with pytest.raises(WaitTimeout, match="the kubelet of node-a to report that it started again after the reboot"):
            node_access.reboot(api, p, "node-a")
    finally:
        set_timeout_scale(1.0)


def test_without_a_reboot_command_no_machine_is_restarted() -> None:
    with pytest.raises(AssertionError, match="gives no reboot command"):
        node_access.reboot(Cluster("Succeeded"), load("fake-gpu"), "node-a")
