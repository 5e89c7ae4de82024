"""Smoke tests on a real kind cluster per pinned Kubernetes version (topology `dra`)."""

from __future__ import annotations

import json
import uuid

import pytest

from clusters.images import BuiltImages
from clusters.lifecycle import Cluster
from kube.api import Api, Obj
from kube.versions import KubeVersion
from kube.waits import holds_for, wait_for

pytestmark = pytest.mark.cluster
RESOURCE = "resource.k8s.io/v1"


@pytest.fixture(scope="session")
def api(dra_cluster: Cluster) -> Api:
    return Api(dra_cluster.kubeconfig)


@pytest.fixture
def namespace(api: Api, request: pytest.FixtureRequest):
    name = f"smoke-{uuid.uuid4().hex[:8]}"
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    if not request.config.getoption("--keep"):
        api.delete("v1", "Namespace", name)


def workers(api: Api) -> list[str]:
    return sorted(
        n["metadata"]["name"]
        for n in api.list("v1", "Node")
        if "node-role.kubernetes.io/control-plane" not in n["metadata"].get("labels", {})
    )


def pod(name: str, node: str, image: str, command: str, resources: Obj | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": image,
                    "imagePullPolicy": "Never",
                    "command": ["sh", "-c", command],
                    "resources": resources or {},
                }
            ],
        },
    }


def pod_phase(api: Api, ns: str, name: str) -> str:
    return (api.get("v1", "Pod", name, ns) or {}).get("status", {}).get("phase", "")


def test_server_version_and_nodes_ready(dra_cluster: Cluster, api: Api, k8s_version: KubeVersion) -> None:
    assert api.server_version() == k8s_version.tag
    nodes = api.list("v1", "Node")
    assert len(nodes) == 3
    for node in nodes:
        ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"]
        assert ready == "True", f"node {node['metadata']['name']} not Ready: {node['status']['conditions']}"
        assert node["status"]["nodeInfo"]["kubeletVersion"] == k8s_version.tag


def test_resource_api_v1_served(api: Api) -> None:
    assert api.served(RESOURCE), f"{RESOURCE} is not served"


def test_deviceclass_extended_resource_name_round_trips(api: Api, request: pytest.FixtureRequest) -> None:
    name = f"smoke-{uuid.uuid4().hex[:8]}.example.com"
    api.create(
        {
            "apiVersion": RESOURCE,
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"extendedResourceName": "example.com/smoke-gpu"},
        }
    )
    try:
        stored = api.get(RESOURCE, "DeviceClass", name)
        assert stored["spec"].get("extendedResourceName") == "example.com/smoke-gpu", stored
    finally:
        api.delete(RESOURCE, "DeviceClass", name)


@pytest.mark.parametrize("qos", ["BestEffort", "Guaranteed"])
def test_pods_run_on_every_worker(api: Api, namespace: str, qos: str) -> None:
    image = BuiltImages.load().workload
    limits = {"cpu": "50m", "memory": "32Mi"}
    resources = {"requests": limits, "limits": limits} if qos == "Guaranteed" else None
    names = []
    for i, node in enumerate(workers(api)):
        # Also proves in-cluster access to the API server through its ClusterIP service.
        command = 'nc -w 5 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" </dev/null && echo api-reachable'
        api.create(pod(f"{qos.lower()}-{i}", node, image, command, resources), namespace)
        names.append(f"{qos.lower()}-{i}")
    for name in names:
        wait_for(
            lambda: pod_phase(api, namespace, name) in ("Succeeded", "Failed"),
            timeout=120,
            what=f"pod {name} to finish",
            describe=lambda: json.dumps(api.get("v1", "Pod", name, namespace)["status"]),
        )
        got = api.get("v1", "Pod", name, namespace)
        assert got["status"]["qosClass"] == qos
        assert got["status"]["phase"] == "Succeeded", json.dumps(got["status"])


def test_claim_against_handwritten_slice_is_allocated(api: Api, namespace: str) -> None:
    """The scheduler allocates from a ResourceSlice; without a kubelet plugin the pod cannot start."""
    node = workers(api)[0]
    driver = f"smoke-{uuid.uuid4().hex[:6]}.kep5004.io"
    slice_obj = {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{driver}-{node}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "dev-0", "attributes": {"model": {"string": "smoke"}}}],
        },
    }
    device_class = {
        "apiVersion": RESOURCE,
        "kind": "DeviceClass",
        "metadata": {"name": driver},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }
    claim = {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": "one-device"},
        "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": driver}}]}},
    }
    workload = pod("uses-claim", node, BuiltImages.load().workload, "true")
    del workload["spec"]["nodeName"]  # the scheduler must place it where the device is
    workload["spec"]["resourceClaims"] = [{"name": "dev", "resourceClaimName": "one-device"}]
    workload["spec"]["containers"][0]["resources"] = {"claims": [{"name": "dev"}]}
    api.create(slice_obj)
    api.create(device_class)
    try:
        api.create(claim, namespace)
        api.create(workload, namespace)
        allocated = wait_for(
            lambda: (api.get(RESOURCE, "ResourceClaim", "one-device", namespace).get("status") or {}).get("allocation"),
            timeout=90,
            what="the claim to be allocated",
            describe=lambda: json.dumps(api.get(RESOURCE, "ResourceClaim", "one-device", namespace)),
        )
        results = allocated["devices"]["results"]
        assert [(r["driver"], r["pool"], r["device"]) for r in results] == [(driver, node, "dev-0")]
        bound = wait_for(
            lambda: api.get("v1", "Pod", "uses-claim", namespace)["spec"].get("nodeName"),
            timeout=60,
            what="the pod to be bound",
        )
        assert bound == node
        holds_for(
            lambda: pod_phase(api, namespace, "uses-claim") == "Pending",
            duration=10,
            what="the pod to stay Pending (no kubelet plugin for this driver)",
            describe=lambda: json.dumps(api.get("v1", "Pod", "uses-claim", namespace)["status"]),
        )
    finally:
        api.delete("v1", "Pod", "uses-claim", namespace)
        api.delete(RESOURCE, "DeviceClass", driver)
        api.delete(RESOURCE, "ResourceSlice", slice_obj["metadata"]["name"])
