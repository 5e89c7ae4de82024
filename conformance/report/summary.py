"""Per-requirement verdicts from the suite's outcome records, in JSON and Markdown."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from conformance.catalogue import catalogue

PASSED, FAILED, NOT_APPLICABLE, NOT_TESTED = "passed", "failed", "not applicable", "not tested"


@dataclass
class Verdict:
    id: str
    title: str
    verdict: str
    tests: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def verdicts(records: list[dict]) -> list[Verdict]:
    """A requirement fails if any citing test failed or errored, passes if one passed and none
    failed, is not applicable if every citing test was skipped for its version."""
    by_id: dict[str, list[dict]] = {}
    for r in records:
        for rid in r["requirements"]:
            by_id.setdefault(rid, []).append(r)
    out = []
    for req in catalogue().requirements.values():
        recs = by_id.get(req.id, [])
        outcomes = {r["outcome"] for r in recs}
        if "failed" in outcomes:
            verdict = FAILED
            reasons = [f"{r['test']} ({r['when']}): {r['message'].strip().splitlines()[-1] if r['message'].strip() else 'failed'}"
                       for r in recs if r["outcome"] == "failed"]
        elif "passed" in outcomes:
            verdict, reasons = PASSED, []
        elif recs:
            verdict, reasons = NOT_APPLICABLE, sorted({r["message"] for r in recs})
        else:
            verdict, reasons = NOT_TESTED, []
        out.append(Verdict(req.id, req.title, verdict, sorted({r["test"] for r in recs}), reasons))
    return out


def write(records: list[dict], out_dir: Path, context: dict) -> dict[str, int]:
    vs = verdicts(records)
    counts = {k: sum(v.verdict == k for v in vs) for k in (PASSED, FAILED, NOT_APPLICABLE, NOT_TESTED)}
    (out_dir / "summary.json").write_text(json.dumps(
        {"context": context, "counts": counts, "requirements": [asdict(v) for v in vs]}, indent=2))
    lines = [f"# KEP-5004 conformance: {context.get('target', '')}", "",
             " | ".join(f"{k}: {n}" for k, n in counts.items()), "",
             *([("stages: " + ", ".join(f"{st['stage']} {st['seconds']} s (exit {st['exit']})"
                                        for st in context["stages"])), ""] if context.get("stages") else []),
             "| ID | verdict | title | details |", "|---|---|---|---|"]
    for v in vs:
        detail = "<br>".join(x.replace("|", "\\|")[:300] for x in v.reasons) or ", ".join(v.tests)[:300]
        lines.append(f"| {v.id} | {v.verdict} | {v.title} | {detail} |")
    (out_dir / "summary.md").write_text("\n".join(lines) + "\n")
    return counts
