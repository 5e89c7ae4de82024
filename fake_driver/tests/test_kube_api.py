"""RestKubeApi against an in-test HTTP server: real URLs, methods and bodies, no cluster."""

from __future__ import annotations

import json

import pytest

from fake_driver.dra_plugin.kube_api import CredentialsError, KubeApiError, RestKubeApi
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
def api(server) -> RestKubeApi:
    return RestKubeApi(server.url, token="fake-token")


def publisher(api: RestKubeApi) -> SlicePublisher:
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


def test_create_sends_the_publishers_body(server, api):
    publisher(api).reconcile()
    method, path, _, body = server.requests[-1]
    assert (method, path) == ("POST", "/apis/resource.k8s.io/v1/resourceslices")
    assert body["spec"]["devices"][0]["attributes"]["driverVersion"] == {"version": "570.124.6"}
    assert body["spec"]["pool"] == {"name": "n1", "generation": 1, "resourceSliceCount": 1}
    assert body["metadata"]["ownerReferences"][0]["uid"] == "uid-n1"


def test_replace_rebuilds_body_from_a_newer_servers_object(server, api):
    """A slice stored by a newer API server is replaced with only the fields the plugin owns."""
    server.slices["s1"] = {
        "metadata": {
            "name": "s1",
            "resourceVersion": "7",
            "uid": "x",
            "managedFields": [{"manager": "m", "operation": "Update", "futureKey": 1}],
        },
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "n1",
            "futureField": True,
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [],
        },
    }
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


def test_requests_carry_the_token_read_anew_each_time(server, tmp_path):
    token = tmp_path / "token"
    token.write_text("first\n")
    api = RestKubeApi(server.url, token_file=token)
    api.get_node_uid("n1")
    token.write_text("rotated\n")  # the kubelet renews the projected token
    api.get_node_uid("n1")
    assert [headers.get("Authorization") for headers in server.headers] == ["Bearer first", "Bearer rotated"]


def test_errors_other_than_a_missing_object_are_raised_with_their_status(server, api):
    with pytest.raises(KubeApiError, match="HTTP 404") as raised:
        api.replace_resource_slice("gone", {"metadata": {"name": "gone"}})
    assert raised.value.status == 404


def test_kubeconfig_names_the_server_and_the_token(server, tmp_path):
    api = RestKubeApi.from_kubeconfig(server.write_kubeconfig(tmp_path / "kubeconfig"))
    assert api.get_node_uid("n1") == "uid-n1"
    assert server.headers[-1].get("Authorization") == "Bearer fake-token"


@pytest.mark.parametrize("broken", ["current-context", "certificate-authority"])
def test_an_unusable_kubeconfig_is_a_credentials_error(server, tmp_path, broken):
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    config = json.loads(path.read_text())
    if broken == "current-context":
        config["current-context"] = "elsewhere"
    else:
        config["clusters"][0]["cluster"] = {"server": "https://127.0.0.1:1", "certificate-authority": "missing-ca.crt"}
    path.write_text(json.dumps(config))
    with pytest.raises(CredentialsError, match="no usable kubeconfig"):
        RestKubeApi.from_kubeconfig(path)
