"""The `check` fixture inside pytest: failed checks fail their ID and the test, later checks still run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SUITE = """
import pytest
from conformance.lib.checks import Findings

@pytest.mark.requirement("ALLOC-1", "CTR-1", "STATUS-1")
def test_soft(check):
    check.that("ALLOC-1", True, "")
    check.that("CTR-1", False, "container main sees []")
    with check("STATUS-1"):
        assert 1 == 1

@pytest.mark.requirement("ALLOC-1", "CTR-1")
def test_stop(check):
    with check("ALLOC-1", stop=True):
        assert False, "pod never Running"
    check.that("CTR-1", True, "")  # not reached

@pytest.mark.requirement("ALLOC-1")
def test_uncited_pass_not_credited_uncited_failure_kept(check):
    check.that("ALLOC-1", True, "")
    check.that("NAME-1", True, "")
    check.that("CLAIM-2", False, "no owner")
    check.deviates("ALLOC-2", "BUG-13", "bound with no claim")

@pytest.mark.requirement("CTR-1", "NAME-1")
def test_findings(check):
    f = Findings()
    f.check(True, "NAME-1", "")
    f.check(False, "CTR-1", "sees gpu-9")
    check.all(f)
"""


@pytest.fixture
def results(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict]:
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))  # the subprocess runs elsewhere
    pytester.makeconftest('pytest_plugins = ["conformance.report.plugin"]')
    pytester.makepyfile(test_suite=SUITE)
    out = pytester.path / "results.jsonl"
    run = pytester.runpytest_subprocess(f"--results-json={out}", "-p", "no:cacheprovider")
    run.assert_outcomes(failed=4)
    return {json.loads(line)["test"].split("::")[1]: json.loads(line) for line in out.read_text().splitlines()}


def verdicts(record: dict) -> dict[str, str]:
    return {c["id"]: c["verdict"] for c in record["checks"]}


def test_a_failed_check_does_not_stop_the_others(results):
    assert verdicts(results["test_soft"]) == {"ALLOC-1": "passed", "CTR-1": "failed", "STATUS-1": "passed"}
    assert "[CTR-1] failed: container main sees []" in results["test_soft"]["message"]


def test_a_stop_check_ends_the_test(results):
    assert verdicts(results["test_stop"]) == {"ALLOC-1": "failed"}
    assert "[ALLOC-1] pod never Running" in results["test_stop"]["message"]


def test_only_cited_ids_are_credited_but_every_failure_and_deviation_counts(results):
    assert verdicts(results["test_uncited_pass_not_credited_uncited_failure_kept"]) == {
        "ALLOC-1": "passed",
        "CLAIM-2": "failed",
        "ALLOC-2": "deviates",
    }


def test_oracle_findings_record_passes_and_failures(results):
    assert verdicts(results["test_findings"]) == {"NAME-1": "passed", "CTR-1": "failed"}


def test_a_claim_lacking_its_allocation_when_the_pod_was_scheduled_is_named():
    from conformance.lib.objects.special_claim import FINALIZER, incomplete_at_scheduling

    pod = {"metadata": {"uid": "pod-1"}, "status": {"extendedResourceClaimStatus": {"resourceClaimName": "c"}}}
    complete = {
        "metadata": {"name": "c", "finalizers": [FINALIZER]},
        "status": {"allocation": {"devices": {}}, "reservedFor": [{"uid": "pod-1"}]},
    }
    assert incomplete_at_scheduling(pod, [complete]) == []
    unallocated = {"metadata": {"name": "c", "finalizers": [FINALIZER]}, "status": {}}
    assert incomplete_at_scheduling(pod, [unallocated]) == [
        "claim c lacked an allocation",
        "claim c lacked a reservation for the pod (reservedFor [])",
    ]
    assert incomplete_at_scheduling(pod, []) == ["claim c did not exist yet (claims then: [])"]
    assert (
        "extendedResourceClaimStatus unset" in incomplete_at_scheduling({"metadata": {"uid": "p"}, "status": {}}, [])[0]
    )


def test_a_problem_seen_inside_a_scenario_also_fails_its_own_id():
    from conformance.lib.checks import Check, Checks, Findings

    recorded: list[Check] = []
    check = Checks({"UPGRADE-1"}, recorded.append)
    findings = Findings()
    findings.check(True, "STATUS-1", "")
    findings.check(False, "CTR-1", "container main sees GPU-2, allocated GPU-1")
    check.all(findings, as_id="UPGRADE-1")
    assert [(c.id, c.verdict) for c in recorded] == [("UPGRADE-1", "failed"), ("CTR-1", "failed")]
