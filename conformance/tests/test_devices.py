"""What each container should see, for a probe that names devices and one that names requests (no cluster)."""
from __future__ import annotations

from conformance.lib import devices
from conformance.lib.checks import NOT_TESTED
from conformance.lib.profile import NAMES_REQUESTS, load

POD = {"metadata": {"name": "p", "namespace": "ns"},
       "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
       "status": {"extendedResourceClaimStatus": {
           "resourceClaimName": "p-extended-resources-q2x",
           "requestMappings": [{"containerName": "a", "resourceName": "x/gpu", "requestName": "container-0-request-0"},
                               {"containerName": "b", "resourceName": "x/gpu", "requestName": "container-1-request-0"}]}}}
CLAIM = {"metadata": {"name": "p-extended-resources-q2x"},
         "status": {"allocation": {"devices": {"results": [
             {"request": "container-0-request-0", "driver": "d", "pool": "n1", "device": "dev-0"},
             {"request": "container-0-request-0", "driver": "d", "pool": "n1", "device": "dev-1"},
             {"request": "container-1-request-0", "driver": "d", "pool": "n1", "device": "dev-2"}]}}}}
IDS = {("n1", f"dev-{i}"): f"uuid-{i}" for i in range(3)}


def test_a_device_naming_probe_must_show_each_device_of_the_container_requests():
    probe = load("fake-gpu").probe
    assert devices.expected_per_container(POD, CLAIM, IDS, probe) == {"a": ["uuid-0", "uuid-1"], "b": ["uuid-2"]}


def test_a_request_naming_probe_must_show_each_request_once_even_after_the_claim_is_gone():
    probe = load("k8s-test-driver").probe
    expected = {"a": ["claim_p_extended_resources_q2x_container_0_request_0"],
                "b": ["claim_p_extended_resources_q2x_container_1_request_0"]}
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
    pod = {**POD, "status": {**POD["status"], "containerStatuses": [{"name": c, "state": {"running": {}}} for c in "ab"]}}
    shown = {c: f"{ids[0]}=true\nprobe-done\n" for c, ids in expected.items()}
    findings = devices.check_containers_see(Api(shown), p, pod, expected)
    assert not findings.problems
    assert [(c.id, c.verdict, c.message) for c in findings.checks if c.verdict == NOT_TESTED] == \
        [("CTR-1", NOT_TESTED, NAMES_REQUESTS)]
    # ... and a container shown another container's request still fails CTR-1 by name
    swapped = {"a": shown["b"], "b": shown["a"]}
    assert {c.id for c in devices.check_containers_see(Api(swapped), p, pod, expected).problems} == {"CTR-1"}
