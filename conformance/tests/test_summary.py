"""Verdicts come from evaluated checks only, per ID, on the server's version."""

from __future__ import annotations

import json

from conformance.report import summary
from conformance.report.summary import verdicts

V137 = {"server": "v1.37.2"}


def record(
    test: str, outcome: str, ids: list[str], checks: list[tuple] = (), message: str = "", when: str = "call"
) -> dict:
    return {
        "test": test,
        "when": when,
        "outcome": outcome,
        "requirements": ids,
        "duration": 1.0,
        "message": message,
        "checks": [
            {
                "id": c[0],
                "verdict": c[1],
                "message": c[2] if len(c) > 2 else "",
                "reference": c[3] if len(c) > 3 else "",
            }
            for c in checks
        ],
    }


def by_id(records: list[dict], context: dict = V137) -> dict[str, summary.Verdict]:
    return {v.id: v for v in verdicts(records, context)}


def test_a_cited_id_that_was_never_checked_is_not_credited():
    # The test passed, cites QUOTA-3 and ALLOC-1, but its branch only checked ALLOC-1.
    got = by_id([record("t::quota", "passed", ["ALLOC-1", "QUOTA-3"], [("ALLOC-1", "passed")])])
    assert got["ALLOC-1"].verdict == "passed"
    assert got["QUOTA-3"].verdict == "not tested"


def test_a_failure_anywhere_outweighs_passes_elsewhere():
    got = by_id(
        [
            record("t::a", "passed", ["CTR-1"], [("CTR-1", "passed")]),
            record("t::b", "failed", ["CTR-1"], [("CTR-1", "failed", "wrong device")]),
        ]
    )
    assert got["CTR-1"].verdict == "failed" and got["CTR-1"].tests == ["t::a", "t::b"]


def test_a_deviation_is_neither_passed_nor_failed_and_names_upstream():
    got = by_id(
        [
            record(
                "t::gate",
                "passed",
                ["GATE-2"],
                [("GATE-2", "deviates", "implicit-name pod stopped", "kubernetes/kubernetes#1")],
            )
        ],
        {"server": "v1.36.3"},
    )
    assert got["GATE-2"].verdict == "deviates"
    assert got["GATE-2"].references == ["kubernetes/kubernetes#1"]


def test_an_observation_is_reported_as_observed():
    got = by_id([record("t::mig", "passed", ["MIXED-3"], [("MIXED-3", "observed", "double-booked: no")])])
    assert got["MIXED-3"].verdict == "observed" and got["MIXED-3"].reasons == ["t::mig: double-booked: no"]


def test_version_applicability_comes_from_the_catalogue():
    # API-9 starts at 1.37: a check of it on 1.36 cannot make it pass there.
    got = by_id([record("t::h", "passed", ["API-9"], [("API-9", "passed")])], {"server": "v1.36.3"})
    assert got["API-9"].verdict == "not applicable" and "1.37" in got["API-9"].reasons[0]


def test_a_failed_check_is_never_hidden_by_applicability():
    got = by_id([record("t::g", "failed", ["GATE-1"], [("GATE-1", "failed", "boom")])])
    assert got["GATE-1"].verdict == "failed"


def test_write_counts_every_verdict_and_shows_stage_errors(tmp_path):
    context = {
        **V137,
        "target": "kep5004-dra-1-37",
        "stages": [{"stage": "create dra", "error": "kind failed"}],
        "preflight": [{"name": "deviceclass", "verdict": "failed", "detail": "no extendedResourceName"}],
    }
    counts = summary.write([record("t::a", "passed", ["ALLOC-1"], [("ALLOC-1", "passed")])], tmp_path, context)
    assert counts["passed"] == 1 and sum(counts.values()) == len(
        json.loads((tmp_path / "summary.json").read_text())["requirements"]
    )
    text = (tmp_path / "summary.md").read_text()
    assert "create dra ? s (error: kind failed)" in text
    assert "preflight deviceclass: failed (no extendedResourceName)" in text


def test_coverage_table_has_a_column_per_run(tmp_path):
    from conformance.report.coverage import table

    runs = []
    for server in ("v1.36.3", "v1.37.2"):
        summary.write(
            [record("t::a", "passed", ["ALLOC-1"], [("ALLOC-1", "passed")])],
            tmp_path,
            {"server": server, "profile": "fake-gpu"},
        )
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


def test_a_failed_check_fails_its_id_and_the_test_s_other_ids_are_not_credited():
    got = by_id(
        [
            record(
                "t::ctr",
                "failed",
                ["ALLOC-1", "CTR-1", "STATUS-1"],
                [("ALLOC-1", "passed"), ("CTR-1", "failed", "container main sees []"), ("STATUS-1", "passed")],
                message="[CTR-1] failed: container main sees []",
            )
        ]
    )
    assert got["CTR-1"].verdict == "failed" and got["CTR-1"].reasons == ["t::ctr: container main sees []"]
    for rid in ("ALLOC-1", "STATUS-1"):
        assert got[rid].verdict == "error" and got[rid].caused_by == ["CTR-1"]
        assert got[rid].reasons == [f"t::ctr: t::ctr failed at CTR-1: its checks of {rid} cannot be credited"]


def test_a_test_that_broke_after_its_checks_held_leaves_no_id_passed():
    """Measured on a full run: the machine-restart fault test failed on a 60 s wait for the CNI
    config outside any check, after FAULT-5's checks had held; FAULT-5 read `passed`."""
    got = by_id(
        [
            record(
                "t::restart",
                "failed",
                ["FAULT-5"],
                [("FAULT-5", "passed")],
                message="Traceback...\nWaitTimeout: no CNI config after 60 s",
            )
        ]
    )
    assert got["FAULT-5"].verdict == "error" and got["FAULT-5"].caused_by == []
    assert got["FAULT-5"].reasons == ["t::restart: t::restart (call) broke: WaitTimeout: no CNI config after 60 s"]


def test_a_broken_test_keeps_its_id_from_being_credited_by_passes_elsewhere():
    """Seen on a restricted ServiceAccount: the driver-update test was forbidden to list DaemonSets
    before it checked KUBELET-1, which other tests passed. KUBELET-1 is then not `passed`."""
    got = by_id(
        [
            record("t::claim", "passed", ["KUBELET-1"], [("KUBELET-1", "passed")]),
            record("t::update", "failed", ["KUBELET-1"], message="ApiException: (403) daemonsets is forbidden"),
        ]
    )
    assert got["KUBELET-1"].verdict == "error"
    assert got["KUBELET-1"].reasons == [
        "t::update: t::update (call) broke: ApiException: (403) daemonsets is forbidden"
    ]
    failed = by_id(
        [
            record("t::a", "failed", ["CTR-1"], [("CTR-1", "failed", "wrong device")]),
            record("t::b", "failed", ["CTR-1"], message="ApiException: 500"),
        ]
    )
    assert failed["CTR-1"].verdict == "failed"  # a failure still outranks an error


def test_a_broken_test_s_reason_is_its_exception_not_where_it_was_raised():
    report = (
        "    raise ProbeError(...)\nE   conformance.lib.objects.workloads.ProbeError: probe 'p' in ns/x exited 1: (no output)\n"
        "\nconformance/lib/objects/workloads.py:112: ProbeError"
    )
    got = by_id([record("t::x", "failed", ["CLAIM-6"], message=report)])
    assert got["CLAIM-6"].reasons == [
        "t::x: t::x (call) broke: conformance.lib.objects.workloads.ProbeError: probe 'p' in ns/x exited 1: (no output)"
    ]


def test_a_teardown_that_breaks_is_charged_to_the_test_s_ids():
    got = by_id(
        [
            record("t::x", "passed", ["NAME-1"], [("NAME-1", "passed")]),
            record("t::x", "failed", ["NAME-1"], message="namespace not deleted", when="teardown"),
        ]
    )
    assert got["NAME-1"].verdict == "error" and "(teardown) broke: namespace not deleted" in got["NAME-1"].reasons[0]


def test_a_gate_off_requirement_is_not_tested_unless_the_gate_cycle_checked_it():
    checked = by_id([record("t::g", "passed", ["GATE-1"], [("GATE-1", "passed")])], {"server": "v1.36.3"})
    unchecked = by_id([], {"server": "v1.36.3"})
    assert checked["GATE-1"].verdict == "passed"
    assert unchecked["GATE-1"].verdict == "not tested"
    assert (
        "needs DRAExtendedResource off" in unchecked["GATE-1"].reasons[0]
        and "gate-cycle" in unchecked["GATE-1"].reasons[0]
    )
    # A gate the run set: requirements needing the other state do not apply.
    off = by_id([], {"server": "v1.36.3", "gate_enabled": False})
    assert off["NAME-1"].verdict == "not applicable"


def test_a_skipped_test_is_not_tested_with_its_reason():
    got = by_id(
        [record("t::p", "skipped", ["SCORE-1"], message="not tested: needs a kind cluster on this host", when="setup")]
    )
    assert got["SCORE-1"].verdict == "not tested" and got["SCORE-1"].reasons == ["needs a kind cluster on this host"]


def test_a_stage_that_did_not_run_is_the_reason_its_ids_are_not_tested():
    got = by_id([], {**V137, "stages": [{"stage": "parallel", "exit": 0}]})
    assert got["MIXED-1"].reasons == ["the mixed stage, which checks it, did not run here"]


def test_a_stage_that_ended_early_is_the_reason_its_unreported_ids_are_not_tested():
    stages = [{"stage": "parallel", "exit": 1}, {"stage": "mixed", "exit": 130, "error": "interrupted"}]
    got = by_id([], {**V137, "stages": stages})
    assert got["KEP-5"].reasons == [
        "the mixed stage, which checks it, ended early (interrupted) before a test of it reported"
    ]
    # a stage whose tests failed ran to its end: only the interrupted one is named
    assert got["ALLOC-1"].reasons == ["no test of it reported; stages that ended early: mixed (interrupted)"]


def test_a_clause_not_tested_keeps_an_otherwise_held_id_from_passed():
    got = by_id(
        [
            record(
                "t::claim",
                "passed",
                ["KUBELET-1"],
                [("KUBELET-1", "passed"), ("KUBELET-1", "not tested", "unprepare not checked: no nodeState")],
            )
        ]
    )
    assert got["KUBELET-1"].verdict == "not tested"
    assert got["KUBELET-1"].reasons == ["t::claim: unprepare not checked: no nodeState"]


def test_an_informational_requirement_is_observed_never_passed():
    got = by_id(
        [record("t::m", "passed", ["MIXED-4"], [("MIXED-4", "passed"), ("MIXED-4", "observed", "3 of 4 on DRA")])]
    )
    assert got["MIXED-4"].verdict == "observed" and got["MIXED-4"].reasons == ["t::m: 3 of 4 on DRA"]


def test_observations_stay_where_the_id_passed():
    got = by_id(
        [record("t::c", "passed", ["ALLOC-5"], [("ALLOC-5", "passed"), ("ALLOC-5", "observed", "requests named x-0")])]
    )
    assert got["ALLOC-5"].verdict in ("passed", "observed")
    assert any("requests named x-0" in r for r in got["ALLOC-5"].reasons)


def test_a_stage_that_ended_non_zero_is_on_the_counts_line(tmp_path):
    context = {
        **V137,
        "target": "t",
        # -k selected nothing in the parallel stage (pytest's 5): clean, as the runner counts it.
        "stages": [{"stage": "parallel", "exit": 5, "seconds": 1}, {"stage": "faults", "exit": 1, "seconds": 3}],
    }
    summary.write([record("t::a", "passed", ["ALLOC-1"], [("ALLOC-1", "passed")])], tmp_path, context)
    first = next(
        line for line in (tmp_path / "summary.md").read_text().splitlines() if line.startswith("All requirements:")
    )
    assert "failed: 0" in first and first.endswith("stages not clean: faults")
    assert json.loads((tmp_path / "summary.json").read_text())["stages_not_clean"] == ["faults"]


def _all(verdict: str, **overrides: str) -> list[summary.Verdict]:
    from conformance.catalogue import catalogue

    return [summary.Verdict(rid, "", overrides.get(rid.replace("-", "_"), verdict)) for rid in catalogue().requirements]


def test_the_driver_verdict_comes_from_the_requirements_that_judge_the_driver_only():
    assert summary.driver_verdict(_all("passed"))["verdict"] == "certified"
    # A Kubernetes failure is on the cluster's scorecard, not the driver's.
    assert summary.driver_verdict(_all("passed", NAME_1="failed"))["verdict"] == "certified"
    assert summary.driver_verdict(_all("passed", NAME_1="deviates", GATE_2="deviates"))["verdict"] == "certified"
    failed = summary.driver_verdict(_all("passed", CTR_1="failed", FAULT_5="not tested"))
    assert failed["verdict"] == "not certified" and [o["id"] for o in failed["open"]] == ["CTR-1", "FAULT-5"]
    incomplete = summary.driver_verdict(_all("passed", KUBELET_1="not tested"))
    assert incomplete["verdict"] == "incomplete" and incomplete["open"][0]["why"] == ["no test evaluated it"]


def test_summary_opens_with_the_driver_verdict_and_lists_what_kept_it_open(tmp_path):
    summary.write(
        [record("t::c", "failed", ["CTR-1"], [("CTR-1", "failed", "container main sees []")])],
        tmp_path,
        {**V137, "target": "t", "driver": "gpu.example.com", "profile": "p"},
    )
    lines = (tmp_path / "summary.md").read_text().splitlines()
    assert lines[2].startswith("**Driver verdict: not certified** (gpu.example.com, profile p;")
    assert "- CTR-1 failed: t::c: container main sees []" in lines
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["driver"]["verdict"] == "not certified" and doc["kubernetes"]["counts"]["failed"] == 0


def test_the_run_s_junit_is_every_stage_s_in_one_document_named_by_stage(tmp_path):
    import xml.etree.ElementTree as ET

    from conformance.report import junit

    (tmp_path / "junit-parallel.xml").write_text(
        '<testsuites><testsuite name="pytest" tests="1"><testcase name="t"><properties>'
        '<property name="requirements" value="ALLOC-1"/></properties></testcase></testsuite></testsuites>'
    )
    junit.write_error(junit.stage_file(tmp_path, "dra cluster"), "dra cluster", "CommandError: kind failed")
    root = ET.parse(junit.merge(tmp_path, tmp_path / "junit.xml")).getroot()
    assert [s.get("name") for s in root.findall("testsuite")] == ["kep5004 dra cluster", "kep5004 parallel"]
    assert root.find(".//property[@name='requirements']").get("value") == "ALLOC-1"


def test_one_reason_shared_by_several_tests_is_said_once_naming_them():
    got = by_id(
        [
            record(f"t::p{i}", "passed", ["CTR-1"], [("CTR-1", "not tested", "the probe names requests")])
            for i in range(3)
        ]
    )
    assert got["CTR-1"].verdict == "not tested"
    assert got["CTR-1"].reasons == ["t::p0, t::p1, t::p2: the probe names requests"]


def test_a_driver_installed_without_an_explicit_name_is_certified_for_the_implicit_name_only():
    mixed_untested = _all("passed", MIXED_1="not tested", MIXED_3="not tested", KUBELET_5="not tested")
    scoped = summary.driver_verdict(mixed_untested, explicit_name=False)
    assert scoped["verdict"] == "certified for the implicit name only"
    assert [o["id"] for o in scoped["open"]] == ["KUBELET-5", "MIXED-1", "MIXED-3"]  # still listed, not tested
    # ... not where the driver's class maps an explicit name (then the mixed stage can run),
    assert summary.driver_verdict(mixed_untested)["verdict"] == "incomplete"
    # ... and not where anything else is open too.
    other = _all("passed", MIXED_1="not tested", KUBELET_1="not tested")
    assert summary.driver_verdict(other, explicit_name=False)["verdict"] == "incomplete"


def test_a_failed_check_is_summed_up_by_its_statement_not_by_the_objects_shown_after_it():
    message = 'pod p stopped after switching the gate back on; seen: {\n "phase": "Succeeded"\n}'
    got = by_id([record("t::g", "failed", ["GATE-3"], [("GATE-3", "failed", message)])])
    assert got["GATE-3"].reasons == ["t::g: pod p stopped after switching the gate back on; seen: {"]
