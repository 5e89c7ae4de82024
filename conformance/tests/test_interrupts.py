"""The interrupt script's reading of a run's summaries."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.rigs.interrupts import interrupted_stage


def summary(out: Path, report: str, stages: list[dict]) -> None:
    (out / report).mkdir(parents=True)
    (out / report / "summary.json").write_text(json.dumps({"context": {"stages": stages}}))


def test_every_report_of_the_run_must_mark_where_it_was_cut(tmp_path: Path) -> None:
    summary(tmp_path, "kep5004-dra-136", [{"stage": "dra cluster", "error": "interrupted"}])
    summary(tmp_path, "kep5004-dra-137", [{"stage": "parallel", "exit": -2}])
    assert interrupted_stage(tmp_path) == "kep5004-dra-136: dra cluster; kep5004-dra-137: parallel"


def test_a_report_that_marks_nothing_fails_the_trial(tmp_path: Path) -> None:
    summary(tmp_path, "kep5004-dra-136", [{"stage": "dra cluster", "error": "interrupted"}])
    summary(tmp_path, "kep5004-dra-137", [{"stage": "parallel", "exit": 0}])
    assert interrupted_stage(tmp_path) is None
    assert interrupted_stage(tmp_path / "none") is None


def test_a_run_stopped_with_two_lanes_at_work_must_mark_both_stages(tmp_path: Path) -> None:
    summary(
        tmp_path,
        "kep5004-dra-137",
        [{"stage": "parallel", "error": "interrupted"}, {"stage": "mixed", "error": "interrupted"}],
    )
    assert interrupted_stage(tmp_path, lanes=2) == "kep5004-dra-137: parallel, mixed"
    summary(tmp_path, "kep5004-dra-136", [{"stage": "parallel", "error": "interrupted"}, {"stage": "mixed", "exit": 0}])
    assert interrupted_stage(tmp_path, lanes=2) is None
