"""Per-requirement verdicts from the suite's outcome records, in JSON and Markdown.

The words mean one thing each:
- `passed`: every test citing the ID that ran ended with every check held, and at least one
  check of the ID was evaluated (a test that cites an ID but never checked it credits nothing);
- `failed`: a check of the ID failed (the test is named with what it observed);
- `error`: a test citing the ID failed or broke anywhere without a failed check of this ID (the
  test stopped at another ID's failure, a wait outside any check, a teardown): the ID cannot be
  credited by that test's checks that held before; `caused_by` names the failed IDs, if any;
- `deviates`: the cluster contradicts the spec through a known upstream bug (named);
- `observed`: informational requirements, and IDs with nothing but observations: never passed;
- `not applicable`: only the catalogue's version range or a gate the run set says so;
- `not tested`: with the reason: a clause the profile or cluster cannot show (a `not tested`
  check, which keeps an otherwise held ID from `passed`), a test skipped, a stage that did not run.
Per ID the worst outcome across tests wins, in PRECEDENCE order.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from conformance.catalogue import catalogue
from conformance.catalogue.model import Requirement
from conformance.lib.checks import (
    DEVIATES,
    ERROR,
    FAILED,
    NOT_APPLICABLE,
    NOT_TESTED,
    OBSERVED,
    PASSED,
    PRECEDENCE,
    Check,
)
from kube.versions import KubeVersion, Minor, UnknownVersionError


@dataclass
class Verdict:
    id: str
    title: str
    verdict: str
    tests: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)  # upstream issues/PRs behind a deviation
    caused_by: list[str] = field(default_factory=list)  # an error's failed IDs (in the same test)


def read_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def _first_line(text: str) -> str:
    """A failed check's statement: its first line (what follows is the objects observed)."""
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _cause(report: str) -> str:
    """What broke a test, from pytest's report: its first `E ` line (the exception and its message;
    the report's last line is only where it was raised), else the last line."""
    raised = [line[1:].strip() for line in report.splitlines() if line.startswith("E ")]
    return raised[0] if raised else _last_line(report)


def _server_minor(context: dict[str, Any]) -> Minor | None:
    try:
        server = KubeVersion.of_server(str(context.get("server", "")))
    except UnknownVersionError:  # no cluster ever answered: no version to apply
        return None
    return server.as_minor


@dataclass
class _Test:
    """Everything one test recorded over its phases."""

    name: str
    cites: set[str] = field(default_factory=set)
    checks: list[Check] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)  # records of phases that failed or broke
    skips: list[str] = field(default_factory=list)

    def failed_ids(self) -> list[str]:
        return sorted({c.id for c in self.checks if c.verdict == FAILED})


@dataclass(frozen=True)
class _Outcome:
    """One test's word on one ID."""

    test: str
    verdict: str
    message: str = ""
    reference: str = ""
    caused_by: tuple[str, ...] = ()


def _tests(records: list[dict[str, Any]]) -> list[_Test]:
    tests: dict[str, _Test] = {}
    for r in records:
        t = tests.setdefault(r["test"], _Test(r["test"]))
        t.cites.update(r["requirements"])
        t.checks += [Check(**c) for c in r.get("checks", [])]
        if r["outcome"] == "failed":
            t.failures.append(r)
        elif r["outcome"] == "skipped":
            t.skips.append(r["message"])
    return list(tests.values())


def _outcomes(test: _Test, rid: str) -> list[_Outcome]:
    """What `test` says of `rid`: its checks, or, where it failed or broke, a failure or an error."""
    own = [c for c in test.checks if c.id == rid]
    if test.failures and not any(c.verdict == FAILED for c in own) and rid in test.cites:
        failed = test.failed_ids()
        if failed:
            why = f"{test.name} failed at {', '.join(failed)}: its checks of {rid} cannot be credited"
        else:
            first = test.failures[0]
            why = f"{test.name} ({first['when']}) broke: {_cause(first['message'])}"
        return [_Outcome(test.name, ERROR, why, caused_by=tuple(failed))]
    return [_Outcome(test.name, c.verdict, c.message, c.reference) for c in own]


def _decide(req: Requirement, found: list[_Outcome]) -> Verdict:
    verdict = min((o.verdict for o in found), key=PRECEDENCE.index)
    if req.informational and verdict == PASSED:
        verdict = OBSERVED  # describes behaviour: what held is what was seen, not a pass
    chosen = [o for o in found if o.verdict == verdict or (verdict == OBSERVED and o.verdict == PASSED)]
    reasons = [
        (o.test, _first_line(o.message) if o.verdict == FAILED else o.message.strip())
        for o in chosen
        if o.message.strip() or o.verdict != PASSED
    ]
    # Observations and clauses not tested stay visible whatever decided the verdict.
    reasons += [
        (o.test, f"{o.verdict}: {o.message.strip()}")
        for o in found
        if o.verdict in (OBSERVED, NOT_TESTED) and o not in chosen
    ]
    return Verdict(
        req.id,
        req.title,
        verdict,
        sorted({o.test for o in found}),
        _grouped(reasons),
        sorted({o.reference for o in chosen if o.reference}),
        sorted({rid for o in chosen for rid in o.caused_by}),
    )


def _grouped(reasons: list[tuple[str, str]]) -> list[str]:
    """ "tests: reason" lines, one per distinct reason (six tests that cannot see devices for one
    cause say it once)."""
    tests: dict[str, set[str]] = {}
    for test, reason in reasons:
        tests.setdefault(reason, set()).add(test)
    return sorted(f"{', '.join(sorted(names))}: {reason}" for reason, names in tests.items())


# Scenarios the runner plays with the first profile of a run only (see its report for their verdicts).
IN_PLACE = ("gate-cycle", "upgrade", "faults")
FIRST_PROFILE_ONLY = "checked in this run with profile"
# Stages by the topology of the requirements they check (runner stage names).
STAGE_OF_TOPOLOGY = {
    "mixed": "mixed",
    "gate-cycle": "gate-cycle",
    "upgrade": "upgrade",
    "faults": "faults",
    "scoring": "serial",
}


def _why_untested(req: Requirement, context: dict[str, Any], skips: list[str]) -> list[str]:
    if skips:  # skip messages say "not tested: <why>"; the verdict already says the first part
        return sorted({s.removeprefix(f"{NOT_TESTED}: ") for s in skips})
    if req.topology in IN_PLACE and context.get("first_profile_only"):
        return [
            f"{FIRST_PROFILE_ONLY} {context['first_profile_only']}: the faults, the gate cycle and the upgrade "
            "change Kubernetes in place, once per version"
        ]
    stage = STAGE_OF_TOPOLOGY.get(req.topology)
    ran = {st["stage"] for st in context.get("stages", [])}
    if stage and context.get("stages") is not None and stage not in ran:
        return [f"the {stage} stage, which checks it, did not run here"]
    ended = _ended_early(context)
    if stage in ended:
        return [f"the {stage} stage, which checks it, ended early ({ended[stage]}) before a test of it reported"]
    if ended:  # the ID's stage is not known here: say which stages may have held its test
        return [
            "no test of it reported; stages that ended early: "
            + ", ".join(f"{name} ({why})" for name, why in ended.items())
        ]
    return []


def _ended_early(context: dict[str, Any]) -> dict[str, str]:
    """Stages of the run that stopped before their last test (interrupted, crashed, refused their
    arguments): name -> the error, or pytest's exit code. Failed tests (exit 1) end a stage in time."""
    return {
        st["stage"]: str(st.get("error") or f"exit {st.get('exit')}")
        for st in context.get("stages", [])
        if st.get("error") or st.get("exit", 0) not in (*CLEAN_EXITS, TESTS_FAILED)
    }


def verdicts(records: list[dict[str, Any]], context: dict[str, Any] | None = None) -> list[Verdict]:
    context = context or {}
    minor = _server_minor(context)
    tests = _tests(records)
    out = []
    for req in catalogue().requirements.values():
        found = [o for t in tests for o in _outcomes(t, req.id)]
        skips = [m for t in tests if req.id in t.cites and not any(o.test == t.name for o in found) for m in t.skips]
        if found:
            v = _decide(req, found)
        else:
            v = Verdict(
                req.id,
                req.title,
                NOT_TESTED,
                sorted({t.name for t in tests if req.id in t.cites}),
                _why_untested(req, context, skips),
            )
        if minor is not None:
            _apply_catalogue(req, minor, context, v, evaluated=bool(found))
        out.append(v)
    return out


def _apply_catalogue(req: Requirement, minor: Minor, context: dict[str, Any], v: Verdict, evaluated: bool) -> None:
    """`not applicable` from the catalogue alone: a version outside the requirement's range (a
    failed check still shows), or a gate state the run chose. A gate state the gate-cycle stage
    switches is no reason: unchecked there, the ID is not tested."""
    applies, why = req.applies_to(minor, context.get("gate_enabled"))
    if applies or v.verdict == FAILED:
        return
    if minor not in req.versions:
        v.verdict, v.reasons, v.references, v.caused_by = NOT_APPLICABLE, [why], [], []
    elif evaluated:
        return  # the gate was switched within the run (gate cycle): its checks keep their verdict
    elif req.topology == "gate-cycle":
        v.reasons = v.reasons or [f"{why}; the gate-cycle stage, which switches it, did not check it here"]
    else:
        v.verdict, v.reasons = NOT_APPLICABLE, [why]


COLUMNS = (PASSED, FAILED, DEVIATES, OBSERVED, NOT_APPLICABLE, ERROR, NOT_TESTED)
# pytest's exit codes of a stage that ran clean: 5 when -k selected none of its tests.
NOTHING_SELECTED = 5
CLEAN_EXITS = (0, NOTHING_SELECTED)
TESTS_FAILED = 1
CERTIFIED, NOT_CERTIFIED, INCOMPLETE = "certified", "not certified", "incomplete"
CERTIFIED_IMPLICIT = "certified for the implicit name only"


def driver_verdict(vs: list[Verdict], explicit_name: bool = True) -> dict[str, Any]:
    """The driver's verdict, from the IDs that judge the driver (catalogue `judges`): not certified
    when one failed; incomplete when one erred or was not tested (each listed with why);
    certified otherwise. A deviation is Kubernetes' bug (named), held against no driver.
    Installed without an explicit name (`explicit_name` False), what the catalogue says needs one
    cannot be shown: where nothing else is open, the driver is certified for the implicit name
    only, and those IDs stay listed as not tested."""
    about = [v for v in vs if catalogue().requirement(v.id).judges.about_driver]
    failed = [v for v in about if v.verdict == FAILED]
    unjudged = [v for v in about if v.verdict in (ERROR, NOT_TESTED)]
    beyond_install = [
        v
        for v in unjudged
        if v.verdict == NOT_TESTED and not explicit_name and catalogue().requirement(v.id).needs_explicit_name
    ]
    word = (
        NOT_CERTIFIED
        if failed
        else CERTIFIED_IMPLICIT
        if unjudged and unjudged == beyond_install
        else INCOMPLETE
        if unjudged
        else CERTIFIED
    )
    return {
        "verdict": word,
        "ids": [v.id for v in about],
        "counts": {k: sum(v.verdict == k for v in about) for k in COLUMNS},
        "open": [
            {"id": v.id, "verdict": v.verdict, "why": v.reasons or ["no test evaluated it"]}
            for v in [*failed, *unjudged]
        ],
    }


FILE = "summary.json"


def read(report: Path) -> dict[str, Any]:
    """The summary.json that `write` put in the report directory `report`."""
    summary: dict[str, Any] = json.loads((report / FILE).read_text())
    return summary


def verdict_of_each(summary: dict[str, Any]) -> dict[str, str]:
    """requirement ID -> its verdict, from what `read` returned."""
    return {r["id"]: r["verdict"] for r in summary["requirements"]}


def write(records: list[dict[str, Any]], out_dir: Path, context: dict[str, Any]) -> dict[str, int]:
    vs = verdicts(records, context)
    counts = {k: sum(v.verdict == k for v in vs) for k in COLUMNS}
    unclean = [
        st["stage"] for st in context.get("stages", []) if st.get("error") or st.get("exit", 0) not in CLEAN_EXITS
    ]
    driver = driver_verdict(vs, context.get("explicit_name", True))
    cluster = [v for v in vs if v.id not in driver["ids"]]
    kubernetes = {k: sum(v.verdict == k for v in cluster) for k in COLUMNS}
    (out_dir / FILE).write_text(
        json.dumps(
            {
                "context": context,
                "driver": driver,
                "kubernetes": {"counts": kubernetes},
                "counts": counts,
                "stages_not_clean": unclean,
                "requirements": [asdict(v) for v in vs],
            },
            indent=2,
        )
    )
    lines = [
        f"# KEP-5004 conformance: {context.get('target', '')}",
        "",
        f"**Driver verdict: {driver['verdict']}** ({context.get('driver', '?')}, profile {context.get('profile', '?')}; "
        f"from the {len(driver['ids'])} requirements that judge the driver: "
        + ", ".join(f"{k} {n}" for k, n in driver["counts"].items() if n)
        + ")",
        "",
    ]
    lines += [
        f"- {o['id']} {o['verdict']}: " + "; ".join(w.replace("\n", " ")[:300] for w in o["why"])
        for o in driver["open"]
    ]
    lines += [
        "",
        "Kubernetes scorecard (requirements about the cluster whatever the driver does): "
        + " | ".join(f"{k}: {n}" for k, n in kubernetes.items()),
        "",
        # A stage that ended non-zero is on the counts line, so that it never reads as a clean run.
        "All requirements: "
        + " | ".join(
            [
                *(f"{k}: {n}" for k, n in counts.items()),
                *([f"stages not clean: {', '.join(unclean)}"] if unclean else []),
            ]
        ),
        "",
    ]
    if context.get("stages"):
        lines += [
            "stages: "
            + ", ".join(f"{st['stage']} {st.get('seconds', '?')} s ({_stage_state(st)})" for st in context["stages"]),
            "",
        ]
    for p in context.get("preflight", []):
        lines.append(f"- preflight {p['name']}: {p['verdict']}" + (f" ({p['detail']})" if p.get("detail") else ""))
    if context.get("preflight"):
        lines.append("")
    lines += ["| ID | verdict | title | details |", "|---|---|---|---|"]
    for v in vs:
        details = [*v.reasons, *(f"upstream: {r}" for r in v.references)]
        detail = (
            "<br>".join(x.replace("|", "\\|").replace("\n", " ")[:300] for x in details) or ", ".join(v.tests)[:300]
        )
        lines.append(f"| {v.id} | {v.verdict} | {v.title} | {detail} |")
    (out_dir / "summary.md").write_text("\n".join(lines) + "\n")
    return counts


def _stage_state(stage: dict[str, Any]) -> str:
    return f"error: {stage['error']}" if stage.get("error") else f"exit {stage.get('exit')}"
