"""Which refused pod the migration tests create once more (no cluster needed)."""

from __future__ import annotations

from conformance.suite.mixed.helpers import placed_before_the_switch

REFUSED = {"phase": "Failed", "reason": "UnexpectedAdmissionError"}
SPECIAL_CLAIM = {
    "extendedResourceClaimStatus": {
        "resourceClaimName": "gpu-x",
        "requestMappings": [
            {"containerName": "main", "resourceName": "nvidia.com/gpu", "requestName": "container-0-request-0"}
        ],
    }
}


def test_a_pod_placed_as_a_device_plugin_pod_and_refused_is_placed_before_the_switch() -> None:
    assert placed_before_the_switch({"status": REFUSED})


def test_a_pod_with_a_special_claim_refused_is_kubelet_5s_case_not_a_stale_placement() -> None:
    assert not placed_before_the_switch({"status": {**REFUSED, **SPECIAL_CLAIM}})


def test_running_pods_and_other_failures_are_not_given_another_try() -> None:
    assert not placed_before_the_switch({"status": {"phase": "Running"}})
    assert not placed_before_the_switch({"status": {"phase": "Failed", "reason": "OutOfnvidia.com/gpu"}})
    assert not placed_before_the_switch({})
