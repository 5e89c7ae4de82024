"""API and validation of DeviceClass.spec.extendedResourceName and extended resource names."""
from __future__ import annotations

import uuid

import pytest
from kubernetes.dynamic.exceptions import ApiException

from conformance.lib import pods
from conformance.suite.conftest import Target

RESOURCE = "resource.k8s.io/v1"


@pytest.fixture
def class_name(target: Target, request: pytest.FixtureRequest):
    name = f"api-{uuid.uuid4().hex[:8]}.kep5004.io"
    yield name
    if not request.config.getoption("--keep"):
        target.api.delete(RESOURCE, "DeviceClass", name)


@pytest.mark.requirement("API-1", "API-4")
def test_extended_resource_name_round_trips_and_is_mutable(target: Target, class_name: str) -> None:
    api = target.api
    created = api.create(pods.device_class(class_name, target.profile.driver, "example.com/api-gpu"))
    assert created["spec"].get("extendedResourceName") == "example.com/api-gpu", \
        f"[API-1] create returned spec {created['spec']}"
    stored = api.get(RESOURCE, "DeviceClass", class_name)
    assert stored["spec"].get("extendedResourceName") == "example.com/api-gpu", f"[API-1] stored spec {stored['spec']}"
    res = api.resource(RESOURCE, "DeviceClass")
    res.patch(name=class_name, body={"spec": {"extendedResourceName": "example.com/api-gpu-2"}},
              content_type="application/merge-patch+json")
    assert api.get(RESOURCE, "DeviceClass", class_name)["spec"].get("extendedResourceName") == "example.com/api-gpu-2", \
        "[API-4] the name could not be changed on update"
    res.patch(name=class_name, body={"spec": {"extendedResourceName": None}}, content_type="application/merge-patch+json")
    assert "extendedResourceName" not in api.get(RESOURCE, "DeviceClass", class_name)["spec"], \
        "[API-4] the name could not be cleared on update"


@pytest.mark.requirement("API-4")
def test_duplicate_names_are_accepted(target: Target, class_name: str, request: pytest.FixtureRequest) -> None:
    second = f"dup-{class_name}"
    try:
        target.api.create(pods.device_class(class_name, target.profile.driver, "example.com/dup-gpu"))
        target.api.create(pods.device_class(second, target.profile.driver, "example.com/dup-gpu"))
        stored = target.api.get(RESOURCE, "DeviceClass", second)["spec"]
        assert stored.get("extendedResourceName") == "example.com/dup-gpu", \
            f"[API-4] a second class with the same name was not stored with it: {stored}"
    finally:
        target.api.delete(RESOURCE, "DeviceClass", second)


INVALID = {
    "implicit-prefix": ("deviceclass.resource.kubernetes.io/foo", "NEG-1"),
    "kubernetes-io-domain": ("foo.kubernetes.io/gpu", "API-3"),
    "no-domain": ("gpu", "NEG-2"),
    "requests-prefix": ("requests.example.com/gpu", "NEG-2"),
}


@pytest.mark.requirement("API-3", "NEG-1", "NEG-2")
@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_extended_resource_names_are_rejected(target: Target, class_name: str, case: str) -> None:
    value, req = INVALID[case]
    with pytest.raises(ApiException) as rejected:
        target.api.create(pods.device_class(class_name, target.profile.driver, value))
        stored = target.api.get(RESOURCE, "DeviceClass", class_name)
        pytest.fail(f"[{req}] extendedResourceName {value!r} was accepted; stored: {stored['spec']}")
    assert rejected.value.status == 422, f"[{req}] expected 422 Invalid, got {rejected.value.status}: {rejected.value.body}"
    assert "spec.extendedResourceName" in str(rejected.value.body), \
        f"[{req}] rejection does not name spec.extendedResourceName: {rejected.value.body}"


@pytest.mark.requirement("API-5", "NEG-3")
def test_invalid_pod_resource_name_is_rejected(target: Target, namespace: str) -> None:
    bad = pods.pod("bad-name", [pods.container("main", target.profile.workload_image, {"invalid_resource_name": 1})])
    with pytest.raises(ApiException) as rejected:
        target.api.create(bad, namespace)
        pytest.fail("[NEG-3] a pod requesting 'invalid_resource_name' was accepted")
    assert rejected.value.status == 422, f"[NEG-3] expected 422 Invalid, got {rejected.value.status}"


@pytest.mark.requirement("API-5")
def test_extended_resource_request_must_equal_limit(target: Target, namespace: str) -> None:
    c = pods.container("main", target.profile.workload_image, {target.profile.extended_resource_name: 2})
    c["resources"]["requests"] = {target.profile.extended_resource_name: "1"}
    with pytest.raises(ApiException) as rejected:
        target.api.create(pods.pod("unequal", [c]), namespace)
        pytest.fail("[API-5] a pod with request 1 and limit 2 of an extended resource was accepted")
    assert rejected.value.status == 422


@pytest.mark.requirement("API-6")
def test_implicit_name_accepted_in_container_resources(target: Target, namespace: str) -> None:
    name = "deviceclass.resource.kubernetes.io/api-6-absent.kep5004.io"  # no such class: the pod stays Pending
    c = pods.container("main", target.profile.workload_image, {name: 2})
    c["resources"]["requests"] = {name: "2"}
    created = target.api.create(pods.pod("implicit", [c]), namespace)
    resources = created["spec"]["containers"][0]["resources"]
    assert resources.get("limits", {}).get(name) == "2" == resources.get("requests", {}).get(name), \
        f"[API-6] the pod was stored with resources {resources}"


@pytest.mark.requirement("CTR-5")
def test_pod_level_resources_refuse_extended_resources(target: Target, namespace: str) -> None:
    p = target.profile
    bad = pods.pod("pod-level", [pods.container("main", p.workload_image, {})])
    bad["spec"]["resources"] = {"limits": {"cpu": "100m", p.extended_resource_name: "1"}}
    with pytest.raises(ApiException) as rejected:
        stored = target.api.create(bad, namespace)
        pytest.fail(f"[CTR-5] a pod with {p.extended_resource_name} in spec.resources was accepted: "
                    f"{stored['spec'].get('resources')}")
    assert rejected.value.status == 422, f"[CTR-5] expected 422 Invalid, got {rejected.value.status}"
    assert "spec.resources" in str(rejected.value.body), f"[CTR-5] the rejection does not name spec.resources: {rejected.value.body}"
