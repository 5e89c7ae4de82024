"""Reading samples from a /metrics page (no cluster needed)."""

from __future__ import annotations

from kube import metrics

PAGE = """# HELP dynamic_resource_allocation_resource_claims [ALPHA] Number of ResourceClaims
# TYPE dynamic_resource_allocation_resource_claims gauge
dynamic_resource_allocation_resource_claims{admin_access="false",allocated="true",source="extended_resource"} 2
dynamic_resource_allocation_resource_claims{admin_access="false",allocated="true",source=""} 1
dynamic_resource_allocation_resource_claims{admin_access="true",allocated="true",source=""} 1
dynamic_resource_allocation_resource_claims_other{source="extended_resource"} 7
kubernetes_feature_enabled{name="DRAExtendedResource",stage="BETA"} 1
process_open_fds 12
odd{note="a \\"quoted\\" word"} 3
"""
CLAIMS = "dynamic_resource_allocation_resource_claims"


def test_samples_of_one_metric_with_their_labels() -> None:
    assert [labels["source"] for labels, _ in metrics.samples(PAGE, CLAIMS)] == ["extended_resource", "", ""]
    assert metrics.samples(PAGE, "process_open_fds") == [({}, 12.0)]
    assert metrics.samples(PAGE, "odd") == [({"note": 'a "quoted" word'}, 3.0)]


def test_value_sums_the_samples_that_carry_the_labels_asked_for() -> None:
    assert metrics.value(PAGE, CLAIMS, allocated="true", source="extended_resource") == 2
    assert metrics.value(PAGE, CLAIMS, allocated="true", source="") == 2  # either admin_access
    assert metrics.value(PAGE, "kubernetes_feature_enabled", name="DRAExtendedResource") == 1
    assert metrics.value(PAGE, CLAIMS, source="extended-resource") is None
    assert metrics.value("", CLAIMS) is None
