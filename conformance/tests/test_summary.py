"""Verdicts come from evaluated checks only, per ID, on the server's version."""
from __future__ import annotations

import json

from conformance.report import summary
from conformance.report.summary import verdicts

V137 = {"server": "v1.37.2"}


def record(test: str, outcome: str, ids: list[str], checks: list[tuple] = (), message: str = "",
           when: str = "call") -> dict:
    return {"test": test, "when": when, "outcome": outcome, "requirements": ids, "duration": 1.0,
            "message": message,
            "checks": [{"id": c[0], "verdict": c[1], "message": c[2] if len(c) > 2 else "",
                        "reference": c[3] if len(c) > 3 else ""} for c in checks]}


def by_id(records: list[dict], context: dict = V137) -> dict[str, summary.Verdict]:
    return {v.id: v for v in verdicts(records, context)}


def test_a_cited_id_that_was_never_checked_is_not_credited():
    # The test passed, cites QUOTA-3 and ALLOC-1, but its branch only checked ALLOC-1.
    got = by_id([record("t::quota", "passed", ["ALLOC-1", "QUOTA-3"], [("ALLOC-1", "passed")])])
    assert got["ALLOC-1"].verdict == "passed"
    assert got["QUOTA-3"].verdict == "not tested"


def test_one_failed_check_fails_only_its_own_id():
    got = by_id([record("t::ctr", "failed", ["ALLOC-1", "CTR-1", "STATUS-1"],
                        [("ALLOC-1", "passed"), ("CTR-1", "failed", "container main sees []"), ("STATUS-1", "passed")],
                        message="[CTR-1] failed: container main sees []")])
    assert (got["ALLOC-1"].verdict, got["CTR-1"].verdict, got["STATUS-1"].verdict) == ("passed", "failed", "passed")
    assert got["CTR-1"].reasons == ["t::ctr: container main sees []"]


def test_a_failure_anywhere_outweighs_passes_elsewhere():
    got = by_id([record("t::a", "passed", ["CTR-1"], [("CTR-1", "passed")]),
                 record("t::b", "failed", ["CTR-1"], [("CTR-1", "failed", "wrong device")])])
    assert got["CTR-1"].verdict == "failed" and got["CTR-1"].tests == ["t::a", "t::b"]


def test_a_deviation_is_neither_passed_nor_failed_and_names_upstream():
    got = by_id([record("t::gate", "passed", ["GATE-2"],
                        [("GATE-2", "deviates", "implicit-name pod stopped", "kubernetes/kubernetes#1")])],
                {"server": "v1.36.3"})
    assert got["GATE-2"].verdict == "deviates"
    assert got["GATE-2"].references == ["kubernetes/kubernetes#1"]


def test_an_observation_is_reported_as_observed():
    got = by_id([record("t::mig", "passed", ["MIXED-3"], [("MIXED-3", "observed", "double-booked: no")])])
    assert got["MIXED-3"].verdict == "observed" and got["MIXED-3"].reasons == ["t::mig: double-booked: no"]


def test_a_test_broken_before_its_checks_is_an_error_not_a_failure_of_every_cited_id():
    got = by_id([record("t::x", "failed", ["ALLOC-1", "CTR-1"], [("ALLOC-1", "passed")],
                        message="Traceback...\nApiException: 500")])
    assert got["ALLOC-1"].verdict == "passed"
    assert got["CTR-1"].verdict == "error"
    assert "ended before checking it: ApiException: 500" in got["CTR-1"].reasons[0]


def test_a_broken_test_keeps_its_id_from_being_credited_by_passes_elsewhere():
    """Seen on a restricted ServiceAccount: the driver-update test was forbidden to list DaemonSets
    before it checked KUBELET-1, which other tests passed. KUBELET-1 is then not `passed`."""
    got = by_id([record("t::claim", "passed", ["KUBELET-1"], [("KUBELET-1", "passed")]),
                 record("t::update", "failed", ["KUBELET-1"], message="ApiException: (403) daemonsets is forbidden")])
    assert got["KUBELET-1"].verdict == "error"
    assert got["KUBELET-1"].reasons == ["t::update (call) ended before checking it: ApiException: (403) daemonsets is forbidden"]
    failed = by_id([record("t::a", "failed", ["CTR-1"], [("CTR-1", "failed", "wrong device")]),
                    record("t::b", "failed", ["CTR-1"], message="ApiException: 500")])
    assert failed["CTR-1"].verdict == "failed"  # a failure still outranks an error


def test_ids_after_a_failed_stop_check_are_not_tested_not_errors():
    got = by_id([record("t::x", "failed", ["NAME-1", "CTR-1"], [("NAME-1", "failed", "pod never Running")])])
    assert got["NAME-1"].verdict == "failed"
    assert got["CTR-1"].verdict == "not tested" and "stopped at failed NAME-1" in got["CTR-1"].reasons[0]


def test_version_applicability_comes_from_the_catalogue():
    # API-9 starts at 1.37: a check of it on 1.36 cannot make it pass there.
    got = by_id([record("t::h", "passed", ["API-9"], [("API-9", "passed")])], {"server": "v1.36.3"})
    assert got["API-9"].verdict == "not applicable" and "1.37" in got["API-9"].reasons[0]


def test_a_gate_off_requirement_checked_by_the_gate_cycle_keeps_its_verdict():
    checked = by_id([record("t::g", "passed", ["GATE-1"], [("GATE-1", "passed")])], {"server": "v1.36.3"})
    unchecked = by_id([], {"server": "v1.36.3"})
    assert checked["GATE-1"].verdict == "passed"
    assert unchecked["GATE-1"].verdict == "not applicable" and "needs DRAExtendedResource off" in unchecked["GATE-1"].reasons[0]


def test_a_failed_check_is_never_hidden_by_applicability():
    got = by_id([record("t::g", "failed", ["GATE-1"], [("GATE-1", "failed", "boom")])])
    assert got["GATE-1"].verdict == "failed"


def test_skipped_for_a_reason_is_not_applicable_with_that_reason():
    got = by_id([record("t::p", "skipped", ["CTR-1"], message="not applicable: profile cannot ...", when="setup")])
    assert got["CTR-1"].verdict == "not applicable" and got["CTR-1"].reasons == ["not applicable: profile cannot ..."]


def test_write_counts_every_verdict_and_shows_stage_errors(tmp_path):
    context = {**V137, "target": "kep5004-dra-1-37", "stages": [{"stage": "create dra", "error": "kind failed"}],
               "preflight": [{"name": "deviceclass", "verdict": "failed", "detail": "no extendedResourceName"}]}
    counts = summary.write([record("t::a", "passed", ["ALLOC-1"], [("ALLOC-1", "passed")])], tmp_path, context)
    assert counts["passed"] == 1 and sum(counts.values()) == len(json.loads(
        (tmp_path / "summary.json").read_text())["requirements"])
    text = (tmp_path / "summary.md").read_text()
    assert "create dra ? s (error: kind failed)" in text
    assert "preflight deviceclass: failed (no extendedResourceName)" in text


def test_coverage_table_has_a_column_per_run(tmp_path):
    from conformance.report.coverage import table
    runs = []
    for server in ("v1.36.3", "v1.37.2"):
        summary.write([record("t::a", "passed", ["ALLOC-1"], [("ALLOC-1", "passed")])], tmp_path,
                      {"server": server, "profile": "fake-gpu"})
        runs.append(json.loads((tmp_path / "summary.json").read_text()))
    text = table(runs)
    assert "| ALLOC-1 | No overcommitment of devices | pass | pass |" in text
    assert "v1.36.3 (fake-gpu)" in text and "v1.37.2 (fake-gpu)" in text


def test_a_second_profile_says_which_profile_ran_the_in_place_scenarios():
    got = by_id([], {"server": "v1.36.3", "first_profile_only": "fake-gpu"})
    assert got["UPGRADE-1"].verdict == "not tested"
    assert got["UPGRADE-1"].reasons[0].startswith("checked in this run with profile fake-gpu")
    assert got["ALLOC-1"].reasons == []  # a stage of every profile: plainly not tested


def test_coverage_points_to_the_profile_that_has_the_verdict():
    from dataclasses import asdict

    from conformance.report.coverage import table
    context = {"server": "v1.36.3", "profile": "example-gpu", "first_profile_only": "fake-gpu"}
    summary_doc = {"context": context, "counts": {}, "requirements": [asdict(v) for v in verdicts([], context)]}
    text = table([summary_doc])
    assert "| UPGRADE-1 | Pods survive upgrade and downgrade | - (fake-gpu) |" in text
    assert "| ALLOC-1 | No overcommitment of devices | - |" in text
