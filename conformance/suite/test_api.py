"""API and validation of DeviceClass.spec.extendedResourceName and extended resource names."""

from __future__ import annotations

import uuid

import pytest
from kubernetes.client.exceptions import ApiException

from conformance.lib.checks import Checks
from conformance.lib.objects import pods, writes
from conformance.lib.objects.writes import accepted, check_refused_as_invalid
from conformance.suite.conftest import Target
from kube.api import RESOURCE_API, Api, Obj

FIELD = "extendedResourceName"


@pytest.fixture
def class_name(target: Target, request: pytest.FixtureRequest):
    name = f"api-{uuid.uuid4().hex[:8]}.kep5004.io"
    yield name
    if not request.config.getoption("--keep"):
        target.api.delete(RESOURCE_API, "DeviceClass", name)


def _set_name(api: Api, group_version: str, name: str, value: str | None) -> Obj:
    """Update (PUT) the class through `group_version` with the name set to `value` or removed."""
    obj = api.get(group_version, "DeviceClass", name)
    if value is None:
        obj["spec"].pop(FIELD, None)
    else:
        obj["spec"][FIELD] = value
    return api.resource(group_version, "DeviceClass").replace(body=obj).to_dict()


def _read_back(api: Api, group_version: str, name: str) -> dict[str, str | None]:
    """The stored name as read through `group_version` and through v1."""
    return {gv: api.get(gv, "DeviceClass", name)["spec"].get(FIELD) for gv in sorted({group_version, RESOURCE_API})}


@pytest.mark.requirement("API-1", "API-4")
@pytest.mark.parametrize("version", ["v1", "v1beta1", "v1beta2"])
def test_extended_resource_name_round_trips_and_is_mutable(
    target: Target, check: Checks, class_name: str, version: str
) -> None:
    api, gv = target.api, f"resource.k8s.io/{version}"
    if not api.served(gv):
        pytest.skip(f"{gv} is not served by this cluster (API-1 covers the beta versions where served)")
    obj = {**pods.device_class(class_name, target.profile.driver, "example.com/api-gpu"), "apiVersion": gv}
    with check("API-1", stop=True):  # create and read back
        created = accepted(lambda: api.create(obj), f"creating a DeviceClass with {FIELD} through {gv}")
        assert created["spec"].get(FIELD) == "example.com/api-gpu", (
            f"create through {gv} returned spec {created['spec']}"
        )
        stored = _read_back(api, gv, class_name)
        assert set(stored.values()) == {"example.com/api-gpu"}, f"read back: {stored}"
    with check("API-1"):  # update and read back
        updated = accepted(lambda: _set_name(api, gv, class_name, "example.com/api-gpu-2"), f"an update through {gv}")
        stored = _read_back(api, gv, class_name)
        assert updated["spec"].get(FIELD) == "example.com/api-gpu-2" and set(stored.values()) == {
            "example.com/api-gpu-2"
        }, f"update through {gv} returned spec {updated['spec']}; read back: {stored}"
    with check("API-4"):
        accepted(lambda: _set_name(api, gv, class_name, "example.com/api-gpu-3"), f"changing the name through {gv}")
        stored = _read_back(api, gv, class_name)
        assert set(stored.values()) == {"example.com/api-gpu-3"}, f"the name could not be changed on update: {stored}"
        accepted(lambda: _set_name(api, gv, class_name, None), f"clearing the name through {gv}")
        stored = _read_back(api, gv, class_name)
        assert set(stored.values()) == {None}, f"the name could not be cleared on update: {stored}"


@pytest.mark.requirement("API-4")
def test_duplicate_names_are_accepted(target: Target, check: Checks, class_name: str) -> None:
    api, second = target.api, f"dup-{class_name}"
    try:
        with check("API-4"):
            for name in (class_name, second):
                cls = pods.device_class(name, target.profile.driver, "example.com/dup-gpu")
                accepted(lambda: api.create(cls), f"DeviceClass {name} with {FIELD} example.com/dup-gpu")
            stored = api.get(RESOURCE_API, "DeviceClass", second)["spec"]
            assert stored.get(FIELD) == "example.com/dup-gpu", (
                f"a second class with the same name was not stored with it: {stored}"
            )
    finally:
        api.delete(RESOURCE_API, "DeviceClass", second)


# case -> (value, the requirements that name the rule it breaks)
INVALID = {
    "implicit-prefix": ("deviceclass.resource.kubernetes.io/foo", ("API-3", "NEG-1")),
    "kubernetes-io-domain": ("foo.kubernetes.io/gpu", ("API-3",)),
    "no-domain": ("gpu", ("API-3", "NEG-2")),
    "requests-prefix": ("requests.example.com/gpu", ("API-3", "NEG-2")),
}


@pytest.mark.requirement("API-3", "NEG-1", "NEG-2")
@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_extended_resource_names_are_rejected(
    target: Target, check: Checks, class_name: str, case: str
) -> None:
    value, ids = INVALID[case]
    check_refused_as_invalid(
        check,
        ids,
        lambda: target.api.create(pods.device_class(class_name, target.profile.driver, value)),
        f"{FIELD} {value!r}",
        field=f"spec.{FIELD}",
    )


@pytest.mark.requirement("API-5", "NEG-3")
def test_invalid_pod_resource_name_is_rejected(target: Target, check: Checks, namespace: str) -> None:
    bad = pods.pod("bad-name", [pods.container("main", target.profile, {"invalid_resource_name": 1})])
    check_refused_as_invalid(
        check, ("API-5", "NEG-3"), lambda: target.api.create(bad, namespace), "a pod requesting 'invalid_resource_name'"
    )


# case -> (limit, request) of an explicit name, each breaking one extended-resource rule
QUANTITY_RULES = {
    "request-below-limit": ("2", "1"),
    "fractional": ("1500m", "1500m"),
    "request-without-limit": (None, "1"),
}


@pytest.mark.requirement("API-5")
@pytest.mark.parametrize("case", sorted(QUANTITY_RULES))
def test_extended_resource_quantity_rules_hold(target: Target, check: Checks, namespace: str, case: str) -> None:
    # API-5 is pod validation of explicit names, mapped by a class or not: a driver installed with
    # the implicit name only is judged on a name of the same shape (implicit names follow other
    # rules, API-6).
    ern = target.profile.explicit_name or "example.com/kep5004-quantity"
    limit, req = QUANTITY_RULES[case]
    c = pods.container("main", target.profile, {})
    c["resources"] = {"requests": {ern: req}, **({"limits": {ern: limit}} if limit else {})}
    check_refused_as_invalid(
        check,
        ("API-5",),
        lambda: target.api.create(pods.pod("quantity", [c]), namespace),
        f"a pod asking for {ern} with limit {limit} and request {req}",
    )


# Quantity shapes the extended-resource rules refuse for explicit names (API-5); whether they bind
# the implicit prefix too is the spec's open question: what the API server does is recorded.
IMPLICIT_SHAPES = {
    "request-without-limit": {"requests": "1"},
    "request-below-limit": {"requests": "1", "limits": "2"},
    "fractional": {"limits": "500m"},
}


@pytest.mark.requirement("API-6")
def test_implicit_name_accepted_in_container_resources(
    target: Target, check: Checks, namespace: str, record_property
) -> None:
    name = "deviceclass.resource.kubernetes.io/api-6-absent.kep5004.io"  # no such class: the pod stays Pending
    c = pods.container("main", target.profile, {name: 2})
    c["resources"]["requests"] = {name: "2"}
    with check("API-6"):
        accepted(lambda: target.api.create(pods.pod("implicit", [c]), namespace), f"a pod asking for {name}")
        stored = pods.get(target.api, namespace, "implicit")["spec"]["containers"][0]["resources"]
        assert stored.get("limits") == {name: "2"} and stored.get("requests") == {name: "2"}, (
            f"the pod was stored with resources {stored}, written with limits and requests {{{name!r}: '2'}}"
        )
    for shape, quantities in IMPLICIT_SHAPES.items():
        other = pods.container("main", target.profile, {})
        other["resources"] = {field: {name: value} for field, value in quantities.items()}
        try:
            target.api.create(pods.pod(f"implicit-{shape}", [other]), namespace)
            record_property(f"implicit name, {shape}", "accepted")
        except ApiException as err:
            record_property(f"implicit name, {shape}", f"refused {err.status}: {writes.answer(err)[:300]}")


@pytest.mark.requirement("CTR-5")
def test_pod_level_resources_refuse_extended_resources(target: Target, check: Checks, namespace: str) -> None:
    p = target.profile
    bad = pods.pod("pod-level", [pods.container("main", p, {})])
    bad["spec"]["resources"] = {"limits": {"cpu": "100m", p.extended_resource_name: "1"}}
    check_refused_as_invalid(
        check,
        ("CTR-5",),
        lambda: target.api.create(bad, namespace),
        f"a pod with {p.extended_resource_name} in spec.resources",
        field="spec.resources",
    )
