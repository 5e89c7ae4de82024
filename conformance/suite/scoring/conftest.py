"""Fixtures of the scoring tests: scheduler profiles of the suite's own, run by a kube-scheduler
of the suite's own beside the cluster's (conformance/lib/objects/own_scheduler.py), which scoring
pods pick by schedulerName. Where that scheduler cannot run (its roles may not be bound, its
image not pulled), these tests are `not tested`, with that reason: say so rather than guess what
the cluster's scheduler scores.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance.lib.objects import own_scheduler, pods
from conformance.lib.profile import Profile
from conformance.suite.conftest import Target

MOST_ALLOCATED = "kep5004-most-allocated"  # NodeResourcesFit alone, packing, the DRA-backed name listed
LEAST_ALLOCATED = "kep5004-least-allocated"  # NodeResourcesFit alone, spreading, the DRA-backed name listed
CPU_MEMORY_ONLY = "kep5004-cpu-memory-only"  # NodeResourcesFit alone, packing, the default resource list
BALANCED = "kep5004-balanced"  # BalancedAllocation, the DRA-backed name listed, and a NodeAffinity tie-breaker
BALANCED_CPU_MEMORY = "kep5004-balanced-cpu-memory"  # BalancedAllocation, its default list, and the tie-breaker
DRA_SCORE_ONLY = "kep5004-dynamic-resources-score"  # DynamicResources, and a NodeAffinity tie-breaker
# The DRA-backed name outweighs cpu and memory, so that where a pod lands shows whether it was scored.
NAME_WEIGHT = 100
# The weight of a plugin under test beside a NodeAffinity preference (weight 1): its smallest
# difference between two nodes (1 point of 100) outweighs the preference (100 points), so the
# preference decides only where the plugin scores both nodes alike (or not at all).
DECIDING_WEIGHT = 200


def _beside_preference(plugin: str) -> dict:
    """Score plugins: `plugin` alone at DECIDING_WEIGHT, and NodeAffinity for a pod's preference."""
    return {
        "score": {
            "disabled": [{"name": "*"}],
            "enabled": [{"name": plugin, "weight": DECIDING_WEIGHT}, {"name": "NodeAffinity", "weight": 1}],
        }
    }


def _fit_only(name: str, strategy: str, resources: list[dict]) -> dict:
    return {
        "schedulerName": name,
        "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeResourcesFit", "weight": 1}]}},
        "pluginConfig": [
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": strategy, "resources": resources}}}
        ],
    }


def _balanced_only(name: str, resources: list[dict]) -> dict:
    return {
        "schedulerName": name,
        "plugins": _beside_preference("NodeResourcesBalancedAllocation"),
        # BalancedAllocation accepts weight 1 only: it compares fractions, it does not add them up.
        "pluginConfig": [{"name": "NodeResourcesBalancedAllocation", "args": {"resources": resources}}],
    }


def scheduler_profiles(profile: Profile) -> list[dict]:
    default_list = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    with_name = [*default_list, {"name": profile.extended_resource_name, "weight": NAME_WEIGHT}]
    return [
        _fit_only(MOST_ALLOCATED, "MostAllocated", with_name),
        _fit_only(LEAST_ALLOCATED, "LeastAllocated", with_name),
        _fit_only(CPU_MEMORY_ONLY, "MostAllocated", default_list),
        _balanced_only(BALANCED, [*default_list, {"name": profile.extended_resource_name, "weight": 1}]),
        _balanced_only(BALANCED_CPU_MEMORY, default_list),
        {"schedulerName": DRA_SCORE_ONLY, "plugins": _beside_preference("DynamicResources")},
    ]


@pytest.fixture(scope="module")
def scoring_scheduler(request: pytest.FixtureRequest, target: Target, module_namespace: str) -> Iterator[None]:
    """The suite's scheduler runs the suite's profiles for this module."""
    p = target.profile
    canary = pods.pod("scheduler-canary", [pods.container("main", p, {}, command=pods.SLEEP)])
    try:
        own_scheduler.start(target.api, module_namespace, scheduler_profiles(p), target.version, canary)
    except own_scheduler.NotStarted as err:
        pytest.skip(f"not tested: the scoring tests' own kube-scheduler did not start: {err}")
    yield
    if not request.config.getoption("--keep"):
        own_scheduler.stop(target.api, module_namespace)
