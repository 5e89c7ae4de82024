"""The report directories of a run: one per profile and Kubernetes version (or existing
cluster), each with its stages' record, its context, and at the end summary, JUnit and bundle."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusters.topology import ClusterSpec
from conformance.lib import profile as profiles
from conformance.report import combined, html, junit, summary
from kube.versions import KubeVersion


def log(message: str) -> None:
    print(f"[conformance] {message}", file=sys.stderr, flush=True)


@dataclass
class Report:
    """One report directory: a profile's verdicts on one cluster version (or existing cluster)."""

    profile: profiles.Profile
    profile_arg: str  # as given (name or absolute path), passed on to the suite's pytest
    out: Path
    context: dict[str, Any]
    started: float
    preflight_file: Path | None = None  # the latest preflight, given to the suite
    wait_scale: float = 1.0  # how loaded the host was when this report's cluster was made (capacity.wait_scale)


class StageLog:
    """stages.jsonl of one report directory: each stage's exit code, time, or why it never ran."""

    def __init__(self, out: Path) -> None:
        self.path = out / "stages.jsonl"

    def add(self, stage: str, seconds: float, exit: int | None = None, error: str | None = None) -> None:
        entry: dict[str, object] = {"stage": stage, "seconds": round(seconds)}
        entry.update({"exit": exit} if error is None else {"error": error})
        with self.path.open("a") as f:
            f.write(json.dumps(entry) + "\n")

    @contextmanager
    def step(self, stage: str, out: Path) -> Iterator[None]:
        """A step before the tests (cluster, driver): a failure or an interrupt is recorded as the
        stage's error, with a JUnit error case so that CI dashboards show it, and re-raised."""
        start = time.monotonic()
        try:
            yield
        except BaseException as err:
            reason = "interrupted" if isinstance(err, KeyboardInterrupt) else f"{type(err).__name__}: {err}"
            self.add(stage, time.monotonic() - start, error=reason)
            junit.write_error(junit.stage_file(out, stage), stage, reason)
            raise


def finish(report: Report) -> dict[str, int]:
    """Summary, context and bundle of one report, from whatever ran (also after an error or interrupt)."""
    out, context = report.out, report.context
    context["wall_clock_s"] = round(time.monotonic() - report.started)
    stages = out / "stages.jsonl"
    context["stages"] = [json.loads(line) for line in stages.read_text().splitlines()] if stages.exists() else []
    counts = summary.write(summary.read_records(out / "results.jsonl"), out, context)
    junit.merge(out, out / "junit.xml")  # the whole run in one file
    (out / "context.json").write_text(json.dumps(context, indent=2))
    write_html([out], out / html.HTML, context["target"])
    bundle = out.with_suffix(".tar.gz")
    with tarfile.open(bundle, "w:gz") as tar:
        tar.add(out, arcname=out.name)
    log(f"{context['target']}: {counts} in {context['wall_clock_s']} s; summary {out / 'summary.md'}; bundle {bundle}")
    return counts


def fresh(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for stale in (
        "results.jsonl",
        "stages.jsonl",
        "junit.xml",
        *(p.name for p in out.glob(f"{junit.PREFIX}*.xml")),
        *(p.name for p in out.glob("preflight-*.json")),
    ):
        (out / stale).unlink(missing_ok=True)
    return out


def base_context(target: str, profile: profiles.Profile, server: str, gate_enabled: bool | None) -> dict[str, Any]:
    """What the report says even when no cluster ever answered."""
    return {
        "target": target,
        "server": server,
        "profile": profile.name,
        "driver": profile.driver,
        "explicit_name": profile.explicit_name is not None,
        "gate_enabled": gate_enabled,
        "preflight": [],
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def report_name(spec: ClusterSpec, profile: profiles.Profile, first: bool) -> str:
    """The first profile's report keeps the cluster's name; the others add their profile's."""
    return spec.name if first else f"{spec.name}-{profile.name}"


def report_dirs(
    out: Path, version: KubeVersion, gates: dict[str, bool], chosen: list[tuple[str, profiles.Profile]]
) -> list[Path]:
    """The report directories of one version, one per profile."""
    main = ClusterSpec("dra", version, gates=gates)
    return [out / report_name(main, profile, i == 0) for i, (_, profile) in enumerate(chosen)]


def write_combined(out: Path, reports: list[Path]) -> None:
    """The run's combined files over its report directories: coverage.md, junit.xml, html/."""
    _say_if_no_allure(out / html.HTML)
    try:
        written = combined.write(out, reports)
    except (OSError, subprocess.SubprocessError) as err:  # each report's own files are written all the same
        log(f"the run's combined report in {out} is incomplete: {' '.join(str(err).split())[:300]}")
        return
    log("the whole run: " + ", ".join(str(w) for w in written))


def write_html(reports: list[Path], dest: Path, name: str) -> None:
    if _say_if_no_allure(dest):
        return
    try:
        page = html.write(reports, dest, name)
    except (OSError, subprocess.SubprocessError) as err:  # the verdicts are in summary.md all the same
        log(f"no HTML report {dest}: {' '.join(str(err).split())[:300]}")
        return
    if page is not None:
        log(f"HTML report {page}")


def _say_if_no_allure(dest: Path) -> bool:
    missing = not html.allure_bin().exists()
    if missing:
        log(f"no HTML report {dest}: Allure is not installed (make report-tools)")
    return missing
