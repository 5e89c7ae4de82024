"""What each container should see, for a probe that names devices and one that names requests (no cluster)."""

from __future__ import annotations

from conformance.lib.checks import NOT_TESTED
from conformance.lib.oracles import devices
from conformance.lib.profile import NAMES_REQUESTS, load

POD = {
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
    "status": {
        "extendedResourceClaimStatus": {
            "resourceClaimName": "p-extended-resources-q2x",
            "requestMappings": [
                {"containerName": "a", "resourceName": "x/gpu", "requestName": "container-0-request-0"},
                {"containerName": "b", "resourceName": "x/gpu", "requestName": "container-1-request-0"},
            ],
        }
    },
}
CLAIM = {
    "metadata": {"name": "p-extended-resources-q2x"},
    "status": {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "container-0-request-0", "driver": "d", "pool": "n1", "device": "dev-0"},
                    {"request": "container-0-request-0", "driver": "d", "pool": "n1", "device": "dev-1"},
                    {"request": "container-1-request-0", "driver": "d", "pool": "n1", "device": "dev-2"},
                ]
            }
        }
    },
}
IDS = {("n1", f"dev-{i}"): f"uuid-{i}" for i in range(3)}


def test_a_device_naming_probe_must_show_each_device_of_the_container_requests():
    probe = load("fake-gpu").probe
    assert devices.expected_per_container(POD, CLAIM, IDS, probe) == {"a": ["uuid-0", "uuid-1"], "b": ["uuid-2"]}


def test_a_request_naming_probe_must_show_each_request_once_even_after_the_claim_is_gone():
    probe = load("k8s-test-driver").probe
    expected = {
        "a": ["claim_p_extended_resources_q2x_container_0_request_0"],
        "b": ["claim_p_extended_resources_q2x_container_1_request_0"],
    }
    assert devices.expected_per_container(POD, CLAIM, IDS, probe) == expected
    assert devices.expected_per_container(POD, None, {}, probe) == expected


class Api:
    def __init__(self, output: dict[str, str]) -> None:
        self.output = output

    def exec(self, namespace, pod, command, container=None):
        return self.output[container]


def test_with_a_request_naming_probe_ctr1_is_not_tested_whatever_the_containers_show():
    p = load("k8s-test-driver")
    expected = devices.expected_per_container(POD, CLAIM, IDS, p.probe)
    pod = {
        **POD,
        "status": {**POD["status"], "containerStatuses": [{"name": c, "state": {"running": {}}} for c in "ab"]},
    }
    shown = {c: f"{ids[0]}=true\nprobe-done\n" for c, ids in expected.items()}
    findings = devices.check_containers_see(Api(shown), p, pod, expected)
    assert not findings.problems
    assert [(c.id, c.verdict, c.message) for c in findings.checks if c.verdict == NOT_TESTED] == [
        ("CTR-1", NOT_TESTED, NAMES_REQUESTS)
    ]
    # ... and a container shown another container's request still fails CTR-1 by name
    swapped = {"a": shown["b"], "b": shown["a"]}
    assert {c.id for c in devices.check_containers_see(Api(swapped), p, pod, expected).problems} == {"CTR-1"}


SLICE = {
    "spec": {
        "driver": "gpu.nvidia.com",
        "pool": {"name": "n1"},
        "devices": [{"name": f"dev-{i}", "attributes": {"uuid": {"string": f"uuid-{i}"}}} for i in range(3)],
    }
}


class Cluster(Api):
    """Api, with the driver's ResourceSlice."""

    def list(self, api_version: str, kind: str, namespace: str | None = None, **selectors: str) -> list[dict]:
        return [SLICE] if kind == "ResourceSlice" else []


def test_a_channel_with_ids_of_its_own_must_name_the_same_devices_its_own_way():
    """Files show each GPU's uuid, environment variables its name: both must agree on the devices."""
    import dataclasses
    import re

    from conformance.lib.profile import Channel

    base = load("fake-gpu")
    env = Channel("environment variables", re.compile(r"^GPU=(?P<id>\S+)$", re.MULTILINE), own_ids=True)
    p = dataclasses.replace(base, probe=dataclasses.replace(base.probe, channels=(env,)))
    pod = {
        **POD,
        "status": {**POD["status"], "containerStatuses": [{"name": c, "state": {"running": {}}} for c in "ab"]},
    }
    expected = devices.expected_per_container(POD, CLAIM, devices.device_ids(Cluster({}), p), p.probe)
    shown = {
        "a": "FAKEGPU uuid=uuid-0\nFAKEGPU uuid=uuid-1\nGPU=dev-0\nGPU=dev-1\n",
        "b": "FAKEGPU uuid=uuid-2\nGPU=dev-2\n",
    }
    assert not devices.check_containers_see(Cluster(shown), p, pod, expected).problems
    shown["b"] = "FAKEGPU uuid=uuid-2\nGPU=dev-0\n"  # the variable names another GPU than the file
    problems = devices.check_containers_see(Cluster(shown), p, pod, expected).problems
    assert [c.id for c in problems] == [
        "CTR-1"
    ] and "environment variables show ['dev-0'], expected ['dev-2']" in problems[0].message


def _slice(pool: str, devices: dict[str, dict[str, dict[str, object]]]) -> dict[str, object]:
    return {
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": pool},
            "devices": [{"name": n, "attributes": a} for n, a in devices.items()],
        }
    }


class _Slices:
    def __init__(self, slices: list[dict[str, object]]) -> None:
        self.slices = slices

    def list(self, api_version: str, kind: str) -> list[dict[str, object]]:
        return self.slices


def test_one_device_is_told_apart_by_an_attribute_no_other_device_shares() -> None:
    from conformance.lib.oracles.devices import one_device

    api = _Slices(
        [
            _slice("a", {"gpu-0": {"model": {"string": "H100"}, "uuid": {"string": "GPU-1"}}}),
            _slice("b", {"gpu-0": {"model": {"string": "H100"}, "index": {"int": 0}}}),
        ]
    )
    assert one_device(api, "gpu.example.com") == (("b", "gpu-0"), 'device.attributes["gpu.example.com"].index == 0')


def test_no_device_told_apart_or_none_published_gives_nothing_to_select() -> None:
    from conformance.lib.oracles.devices import one_device

    twins = [_slice(p, {"gpu-0": {"model": {"string": "H100"}}}) for p in ("a", "b")]
    assert one_device(_Slices(twins), "gpu.example.com") is None
    assert one_device(_Slices([]), "gpu.example.com") is None
