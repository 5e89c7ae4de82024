"""ClientKubeApi on the real kubernetes client against an in-test HTTP server: real URLs and
real client-side body validation, no cluster."""

from __future__ import annotations

import pytest
from kubernetes import client

from fake_driver.dra_plugin.kube_api import ClientKubeApi
from fake_driver.dra_plugin.slices import SlicePublisher
from fake_driver.inventory import PROFILES, build_inventory
from fake_driver.tests.fake_apiserver import FakeApiServer

CLAIM = {"metadata": {"namespace": "ns1", "name": "c1", "uid": "u1"}, "status": {"allocation": {}}}


@pytest.fixture
def server():
    fake = FakeApiServer()
    yield fake
    fake.stop()


@pytest.fixture
def api(server) -> ClientKubeApi:
    configuration = client.Configuration()
    configuration.host = server.url
    return ClientKubeApi(client.ApiClient(configuration))


def publisher(api: ClientKubeApi) -> SlicePublisher:
    return SlicePublisher(api, "gpu.example.com", build_inventory(PROFILES["nvidia"], "n1", 2))


def test_reads_claims_and_nodes(server, api):
    server.claims[("ns1", "c1")] = CLAIM
    assert api.get_resource_claim("ns1", "c1") == CLAIM
    assert api.get_resource_claim("ns1", "gone") is None
    assert api.get_node_uid("n1") == "uid-n1"


def test_lists_slices_of_this_driver_and_node(server, api):
    assert api.list_resource_slices("gpu.example.com", "n1") == []
    _, path, query, _ = server.requests[-1]
    assert path == "/apis/resource.k8s.io/v1/resourceslices"
    assert query["fieldSelector"] == ["spec.driver=gpu.example.com,spec.nodeName=n1"]


def test_create_body_passes_client_validation(server, api):
    """The client validates dict bodies against its models; this is the publisher's real body."""
    publisher(api).reconcile()
    method, path, _, body = server.requests[-1]
    assert (method, path) == ("POST", "/apis/resource.k8s.io/v1/resourceslices")
    assert body["spec"]["devices"][0]["attributes"]["driverVersion"] == {"version": "570.124.6"}
    assert body["spec"]["pool"] == {"name": "n1", "generation": 1, "resourceSliceCount": 1}
    assert body["metadata"]["ownerReferences"][0]["uid"] == "uid-n1"


def test_replace_rebuilds_body_from_a_newer_servers_object(server, api):
    """Fields unknown to the client (a newer API server) must not reach the client's validation."""
    server.slices["s1"] = {
        "metadata": {"name": "s1", "resourceVersion": "7", "uid": "x",
                     "managedFields": [{"manager": "m", "operation": "Update", "futureKey": 1}]},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1", "futureField": True,
                 "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}, "devices": []}}
    publisher(api).reconcile()
    method, path, _, body = server.requests[-1]
    assert (method, path) == ("PUT", "/apis/resource.k8s.io/v1/resourceslices/s1")
    assert body["metadata"] == {"name": "s1", "resourceVersion": "7"}
    assert body["spec"]["pool"]["generation"] == 2 and len(body["spec"]["devices"]) == 2


def test_delete_tolerates_missing_slices(server, api):
    publisher(api).reconcile()
    [name] = server.slices
    api.delete_resource_slice(name)
    api.delete_resource_slice(name)  # 404 is fine: the goal is reached
    assert server.slices == {}
