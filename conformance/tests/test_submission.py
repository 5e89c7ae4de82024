"""A certification submission from a run's report (no cluster: the report is written here)."""

from __future__ import annotations

import json

import yaml

from conformance.report import submission, summary


def test_a_run_s_report_becomes_a_submission_in_the_k8s_conformance_shape(tmp_path):
    report = tmp_path / "existing"
    report.mkdir()
    record = {
        "test": "t::a",
        "when": "call",
        "outcome": "passed",
        "requirements": ["CTR-1"],
        "duration": 1.0,
        "message": "",
        "checks": [{"id": "CTR-1", "verdict": "passed", "message": "", "reference": ""}],
    }
    (report / "results.jsonl").write_text(json.dumps(record) + "\n")
    summary.write(
        [record],
        report,
        {"server": "v1.37.2", "target": "existing", "profile": "example-gpu", "driver": "gpu.example.com"},
    )
    written = submission.write(report, tmp_path / "submission")
    assert [w.name for w in written] == list(submission.FILES) and all(w.exists() for w in written)
    assert yaml.safe_load(written[0].read_text()) == {"name": "gpu.example.com", "type": "dra-driver"}
    assert "kep5004-conformance run --kubeconfig KUBECONFIG --profile example-gpu.yaml" in written[1].read_text()
    assert written[2].read_text().startswith("PASSED t::a (call, 1.0 s) requirements: CTR-1\ndriver verdict: ")


def test_a_directory_without_a_run_is_one_error_line(tmp_path, capsys):
    assert submission.main([str(tmp_path), str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith("submission: error: ") and not (tmp_path / "out").exists()


def test_bundles_of_runs_made_apart_merge_into_one_coverage_table_and_junit(tmp_path):
    import tarfile
    import xml.etree.ElementTree as ET

    from conformance.report import merge

    bundles = []
    for i, (server, profile) in enumerate((("v1.36.3", "fake-gpu"), ("v1.36.3", "example-gpu"))):
        report = tmp_path / f"machine-{i}" / "kep5004-dra-136"  # two cells name their report alike
        report.mkdir(parents=True)
        summary.write([], report, {"server": server, "profile": profile, "target": report.name})
        (report / "junit-parallel.xml").write_text('<testsuite name="pytest" tests="0"/>')
        bundle = report.with_suffix(".tar.gz")
        with tarfile.open(bundle, "w:gz") as tar:
            tar.add(report, arcname=report.name)
        bundles.append(bundle)
    coverage_md, junit_xml, page = merge.merge(tmp_path / "merged", bundles)  # Allure from make report-tools
    assert page == tmp_path / "merged" / "html" / "index.html"
    assert "v1.36.3 (fake-gpu) | v1.36.3 (example-gpu)" in coverage_md.read_text()
    assert [s.get("name") for s in ET.parse(junit_xml).getroot()] == [
        "v1.36.3 (fake-gpu): kep5004 parallel",
        "v1.36.3 (example-gpu): kep5004 parallel",
    ]
    assert merge.main([str(tmp_path / "out"), str(tmp_path / "missing.tar.gz")]) == 2
