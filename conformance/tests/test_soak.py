"""make soak's table: flaky, always failing and never failing tests told apart (no cluster)."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.rigs.soak import outcomes, table


def _run(out: Path, i: int, results: dict[str, str]) -> None:
    path = out / f"run-{i}" / "existing" / "results.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps({"test": t, "outcome": o}) + "\n" for t, o in results.items()))


def test_flaky_broken_and_missing_runs(tmp_path: Path) -> None:
    _run(tmp_path, 1, {"a": "passed", "b": "failed", "c": "passed", "d": "skipped"})
    _run(tmp_path, 2, {"a": "passed", "b": "failed", "c": "failed", "d": "skipped"})
    _run(tmp_path, 3, {"a": "passed", "b": "failed", "d": "skipped"})  # c not reported: missing
    seen = outcomes(tmp_path, 3)
    assert seen["c"] == ["passed", "failed", "missing"]
    text, failing = table(seen)
    assert failing == 2  # b always, c twice (once failed, once missing)
    assert "| c | 1 | 2 (runs 2, 3) | FLAKY |" in text and "| b | 0 | 3 (runs 1, 2, 3) | broken |" in text
    assert "| d |" not in text  # skipped every time is not a failure
