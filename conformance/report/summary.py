"""Per-requirement verdicts from the suite's outcome records, in JSON and Markdown.

Only evaluated checks decide a verdict (conformance/lib/checks.py): a test that cites an ID
but never checked it on this run credits nothing. Per ID, the worst outcome across tests
wins (failed, error, deviates, passed, observed); an ID the catalogue does not apply to the
server's version is `not applicable` with the catalogue's reason, unless a check of it failed;
one that needs another gate state is so only when no check of it ran (stages switch the gate).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from conformance.catalogue import catalogue
from conformance.lib.checks import (
    DEVIATES, ERROR, FAILED, NOT_APPLICABLE, NOT_TESTED, OBSERVED, PASSED, PRECEDENCE, Check,
)


@dataclass
class Verdict:
    id: str
    title: str
    verdict: str
    tests: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)  # upstream issues/PRs behind a deviation


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def _server_minor(context: dict) -> tuple[int, int] | None:
    server = str(context.get("server", "")).lstrip("v").split(".")
    return (int(server[0]), int(server[1])) if len(server) >= 2 and all(p.isdigit() for p in server[:2]) else None


def _evidence(records: list[dict]) -> tuple[dict[str, list[tuple[str, Check]]], dict[str, list[dict]]]:
    """ID -> (test, check) for every evaluated check; ID -> records of tests that cite the ID
    but ended (skipped, failed, errored) without evaluating it."""
    checks: dict[str, list[tuple[str, Check]]] = {}
    for r in records:
        for c in r.get("checks", []):
            checks.setdefault(c["id"], []).append((r["test"], Check(**c)))
    unevaluated: dict[str, list[dict]] = {}
    for r in records:
        if r["outcome"] == "passed":
            continue
        for rid in r["requirements"]:
            if not any(test == r["test"] for test, _ in checks.get(rid, [])):
                unevaluated.setdefault(rid, []).append(r)
    return checks, unevaluated


def _verdict_from_checks(found: list[tuple[str, Check]]) -> tuple[str, list[str], list[str]]:
    verdict = min((c.verdict for _, c in found), key=PRECEDENCE.index)
    chosen = [(t, c) for t, c in found if c.verdict == verdict]
    if verdict == PASSED:
        reasons = []
    else:
        reasons = sorted({f"{t}: {_last_line(c.message) if verdict == FAILED else c.message.strip()}" for t, c in chosen})
    return verdict, reasons, sorted({c.reference for _, c in chosen if c.reference})


# Scenarios the runner plays with the first profile of a run only (see its report for their verdicts).
IN_PLACE = ("gate-cycle", "upgrade")
FIRST_PROFILE_ONLY = "checked in this run with profile"


def verdicts(records: list[dict], context: dict | None = None) -> list[Verdict]:
    context = context or {}
    minor = _server_minor(context)
    checks, unevaluated = _evidence(records)
    out = []
    for req in catalogue().requirements.values():
        found = checks.get(req.id, [])
        tests = sorted({t for t, _ in found} | {r["test"] for r in unevaluated.get(req.id, [])})
        verdict, reasons, refs = NOT_TESTED, [], []
        applies, why = req.applies_to(minor, context.get("gate_enabled")) if minor else (True, "")
        if found:
            verdict, reasons, refs = _verdict_from_checks(found)
            # Another test of the same ID broke before checking it: what it would have found is
            # unknown, so the ID cannot be credited (error outranks deviates, passed, observed).
            broken = _broken(unevaluated.get(req.id, []), checks)
            if broken and PRECEDENCE.index(verdict) > PRECEDENCE.index(ERROR):
                verdict, reasons, refs = ERROR, broken, []
        # The gate state can change within a run (the gate-cycle stage switches it off): a gate
        # requirement evaluated on a version it covers keeps its verdict; the version range decides.
        evaluated_in_range = bool(found) and minor is not None and minor in req.versions
        if not applies and verdict != FAILED and not evaluated_in_range:
            verdict, reasons, refs = NOT_APPLICABLE, [why], []
        elif verdict == NOT_TESTED and req.id in unevaluated:
            verdict, reasons = _unevaluated(unevaluated[req.id], checks)
        elif verdict == NOT_TESTED and req.topology in IN_PLACE and context.get("first_profile_only"):
            reasons = [f"{FIRST_PROFILE_ONLY} {context['first_profile_only']}: the gate cycle and the upgrade change "
                       "Kubernetes in place, once per version"]
        out.append(Verdict(req.id, req.title, verdict, tests, reasons, refs))
    return out


def _unevaluated(records: list[dict], checks: dict[str, list[tuple[str, Check]]]) -> tuple[str, list[str]]:
    """Tests that cite the ID but ended without evaluating it: skipped for a reason (not
    applicable), stopped by a failed check of another ID (not tested: the failure is reported
    under that ID), or broken by something that is no check at all (error)."""
    broken = [r for r in records if r["outcome"] != "skipped"]
    if not broken:
        return NOT_APPLICABLE, sorted({r["message"] for r in records})
    errors = _broken(records, checks)
    if errors:
        return ERROR, errors
    return NOT_TESTED, sorted({f"{r['test']}: not reached, it stopped at failed {', '.join(_stopped_by(r['test'], checks))}"
                               for r in broken})


def _stopped_by(test: str, checks: dict[str, list[tuple[str, Check]]]) -> list[str]:
    return sorted({rid for rid, found in checks.items() for t, c in found if t == test and c.verdict == FAILED})


def _broken(records: list[dict], checks: dict[str, list[tuple[str, Check]]]) -> list[str]:
    """Why tests ended without evaluating the ID through something that is no check at all (an
    exception, a forbidden call, a fixture that broke); [] if none did."""
    return sorted({f"{r['test']} ({r['when']}) ended before checking it: {_last_line(r['message'])}"
                   for r in records if r["outcome"] != "skipped" and not _stopped_by(r["test"], checks)})


COLUMNS = (PASSED, FAILED, DEVIATES, OBSERVED, NOT_APPLICABLE, ERROR, NOT_TESTED)


def write(records: list[dict], out_dir: Path, context: dict) -> dict[str, int]:
    vs = verdicts(records, context)
    counts = {k: sum(v.verdict == k for v in vs) for k in COLUMNS}
    (out_dir / "summary.json").write_text(json.dumps(
        {"context": context, "counts": counts, "requirements": [asdict(v) for v in vs]}, indent=2))
    lines = [f"# KEP-5004 conformance: {context.get('target', '')}", "",
             " | ".join(f"{k}: {n}" for k, n in counts.items()), ""]
    if context.get("stages"):
        lines += ["stages: " + ", ".join(f"{st['stage']} {st.get('seconds', '?')} s ({_stage_state(st)})"
                                         for st in context["stages"]), ""]
    for p in context.get("preflight", []):
        lines.append(f"- preflight {p['name']}: {p['verdict']}" + (f" ({p['detail']})" if p.get("detail") else ""))
    if context.get("preflight"):
        lines.append("")
    lines += ["| ID | verdict | title | details |", "|---|---|---|---|"]
    for v in vs:
        details = [*v.reasons, *(f"upstream: {r}" for r in v.references)]
        detail = "<br>".join(x.replace("|", "\\|").replace("\n", " ")[:300] for x in details) or ", ".join(v.tests)[:300]
        lines.append(f"| {v.id} | {v.verdict} | {v.title} | {detail} |")
    (out_dir / "summary.md").write_text("\n".join(lines) + "\n")
    return counts


def _stage_state(stage: dict) -> str:
    return f"error: {stage['error']}" if stage.get("error") else f"exit {stage.get('exit')}"
