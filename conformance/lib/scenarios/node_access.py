"""Node access, where the profile grants it (`nodeAccess`): a privileged pod on a node that
enters the host's namespaces, as `kubectl debug node/...` makes one, to act on the node itself
(restart its kubelet) on a cluster the suite cannot reach otherwise.

The pod runs in a namespace of its own that Pod Security lets run privileged pods, and is
removed with it; a cluster whose policies refuse such a pod fails the test as a setup error
naming the refusal, never as the requirement under test.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from conformance.lib.objects import cleanup, pods
from conformance.lib.profile import NodeAccess, Profile
from kube.api import Api, Obj
from kube.waits import wait_for

NO_CAPABILITY = (
    "the profile declares no nodeAccess (a privileged pod on a node in the host's namespaces), "
    "so the suite cannot act on a node itself"
)


def host_pod(name: str, node: str, access: NodeAccess, pull_policy: str, command: list[str]) -> Obj:
    """A pod on `node` that runs `command` in the host's PID namespace with every privilege."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "hostPID": True,
            "restartPolicy": "Never",
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "host",
                    "image": access.image,
                    "imagePullPolicy": pull_policy,
                    "command": command,
                    "securityContext": {"privileged": True},
                }
            ],
        },
    }


@contextmanager
def _on_node(api: Api, profile: Profile, node: str, command: list[str]) -> Iterator[tuple[str, Obj]]:
    """The host pod running `command` on `node`, in a namespace of its own, both gone after."""
    access = profile.node_access
    assert access is not None, NO_CAPABILITY
    namespace = f"kep5004-node-{uuid.uuid4().hex[:8]}"
    cleanup.new_namespace(api, namespace, profile.workload_pull_secret, privileged=True)
    try:
        yield namespace, api.create(host_pod("host", node, access, profile.workload_pull_policy, command), namespace)
    finally:
        api.delete("v1", "Namespace", namespace)


def _wait_kubelet_started(api: Api, node: str, since: str, timeout: float, after: str) -> None:
    wait_for(
        lambda: started_since(api, node, since),
        timeout=timeout,
        interval=1,
        what=f"the kubelet of {node} to report that it started again after {after} (event reason Starting)",
        describe=lambda: f"last Starting events: {[_stamp(e) for e in _starting(api, node)][-3:]}",
    )


def restart_kubelet(api: Api, profile: Profile, node: str, timeout: float = 180) -> None:
    """Restart the kubelet of `node` and see that it did: a command that exits 0 without a
    restart would let a test judge pods that were never disturbed. An AssertionError (not a
    requirement's failure: callers run it outside their checks) where it could not."""
    access = profile.node_access
    assert access is not None, NO_CAPABILITY
    with _on_node(api, profile, node, list(access.restart_kubelet)) as (namespace, pod):
        done = pods.wait_phase(api, namespace, "host", ("Succeeded", "Failed"), timeout=timeout)
        output = api.logs(namespace, "host", "host")
        assert done["status"]["phase"] == "Succeeded", (
            f"restarting the kubelet on {node} through nodeAccess failed: {pods.summary(api, namespace, 'host')}; "
            f"output: {output[-400:]!r}"
        )
    _wait_kubelet_started(api, node, pod["metadata"]["creationTimestamp"], 60, "the restart command ran")


NO_REBOOT = "the profile's nodeAccess gives no reboot command, so the suite cannot restart a machine"


def reboot(api: Api, profile: Profile, node: str, timeout: float = 600) -> None:
    """Restart the machine of `node` with the profile's reboot command, and see that its kubelet
    started again after it and the node is Ready (the pod that ran the command goes down with
    the machine)."""
    access = profile.node_access
    assert access is not None and access.reboot, NO_REBOOT if access else NO_CAPABILITY
    with _on_node(api, profile, node, list(access.reboot)) as (_, pod):
        _wait_kubelet_started(api, node, pod["metadata"]["creationTimestamp"], timeout, "the reboot command ran")
        wait_for(
            lambda: pods.condition(api.get("v1", "Node", node) or {}, "Ready").get("status") == "True",
            timeout=timeout,
            interval=2,
            what=f"node {node} Ready after the reboot",
        )


def _starting(api: Api, node: str) -> list[Obj]:
    """The kubelet's "Starting" events of `node` (one per kubelet start; a repeat updates its time)."""
    return [
        e
        for e in api.list("v1", "Event", "default", field_selector=f"involvedObject.name={node}")
        if e.get("reason") == "Starting" and (e.get("involvedObject") or {}).get("kind") == "Node"
    ]


def _stamp(event: Obj) -> str:
    """When the event last happened, in the API server's RFC 3339 seconds (comparable as text)."""
    last: str = max(
        filter(
            None,
            (
                event.get("lastTimestamp"),
                event.get("firstTimestamp"),
                (event.get("eventTime") or "")[:19] + "Z" if event.get("eventTime") else None,
                event["metadata"].get("creationTimestamp"),
            ),
        )
    )
    return last


def started_since(api: Api, node: str, since: str) -> bool:
    return any(_stamp(e) >= since for e in _starting(api, node))
