"""The HTML report people open: Allure's (Allure 3, from npm, run offline), one self-contained
index.html made from the suite's Allure results (each test with its checks and, on failure, its
diagnostics) plus, written here from summary.json, one result per requirement (its verdict, why,
the tests that judged it) and one for the driver verdict, so that the page says what summary.md
says. Allure is installed by `make report-tools` into the cache (the versions pinned in
conformance/report/allure/package-lock.json); without it no HTML is written, and the run says so.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from clusters.paths import cache_root
from conformance.lib.checks import DEVIATES, ERROR, FAILED, NOT_APPLICABLE, NOT_TESTED, OBSERVED, PASSED
from conformance.report import summary
from conformance.report.summary import CERTIFIED, CERTIFIED_IMPLICIT, NOT_CERTIFIED

PACKAGE = Path(__file__).parent / "allure"  # package.json and package-lock.json: what `make report-tools` installs
ALLURE_VERSION = json.loads((PACKAGE / "package.json").read_text())["dependencies"]["allure"]
RESULTS = "allure"  # the suite's Allure results in a report directory
REQUIREMENT_RESULTS = "allure-requirements"  # the results written here, beside them
HTML = "html"

# A verdict as Allure's statuses show it. `deviates` is Kubernetes contradicting the spec: never
# green; `observed` and the two "not" words are no pass either.
STATUS = {
    PASSED: "passed",
    FAILED: "failed",
    DEVIATES: "failed",
    ERROR: "broken",
    OBSERVED: "unknown",
    NOT_TESTED: "skipped",
    NOT_APPLICABLE: "skipped",
}
DRIVER_STATUS = {CERTIFIED: "passed", CERTIFIED_IMPLICIT: "passed", NOT_CERTIFIED: "failed"}  # else incomplete


def allure_bin() -> Path:
    return cache_root() / "tools" / f"allure-{ALLURE_VERSION}" / "node_modules" / ".bin" / "allure"


def _result(name: str, status: str, target: str, suite: str, description: str, started_ms: int) -> dict[str, Any]:
    return {
        "uuid": str(uuid.uuid4()),
        "historyId": f"{target}/{name}",
        "name": name,
        "fullName": f"{target}: {name}",
        "status": status,
        # Shown in the page itself as the result's error (the description is in a frame of its own).
        "statusDetails": {"message": description} if status != "passed" else {},
        "description": description,
        "start": started_ms,
        "stop": started_ms,
        "labels": [
            {"name": "parentSuite", "value": target},
            {"name": "suite", "value": suite},
        ],
    }


def requirement_results(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Allure results for a report's summary.json: the driver verdict, then each requirement,
    under the report's target, the driver's requirements apart from the Kubernetes scorecard."""
    context, driver = report["context"], report["driver"]
    target = context.get("target", "run")
    started = context.get("started")
    started_ms = int(datetime.fromisoformat(started).timestamp() * 1000) if started else 0
    driver_suite = f"Driver verdict: {driver['verdict']}"
    open_ids = "\n".join(f"- {o['id']} {o['verdict']}: {'; '.join(o['why'])}" for o in driver["open"])
    verdict = _result(
        f"Driver verdict: {driver['verdict']}",
        DRIVER_STATUS.get(driver["verdict"], "unknown"),
        target,
        driver_suite,
        f"Driver verdict: {driver['verdict']} ({context.get('driver', '?')}, profile {context.get('profile', '?')}), "
        f"from the {len(driver['ids'])} requirements that judge the driver."
        + (f"\n\nNot passed:\n{open_ids}" if open_ids else ""),
        started_ms,
    )
    results = [verdict]
    for r in report["requirements"]:
        lines = [f"{r['id']} {r['verdict']}: {r['title']}"]
        lines += [f"- {why}" for why in r["reasons"]]
        lines += [f"Caused by: {', '.join(r['caused_by'])}"] if r.get("caused_by") else []
        lines += [f"Reference: {ref}" for ref in r.get("references", [])]
        lines += [f"Judged by: {test}" for test in r["tests"]]
        suite = driver_suite if r["id"] in driver["ids"] else "Kubernetes scorecard"
        result = _result(f"{r['id']} {r['title']}", STATUS[r["verdict"]], target, suite, "\n".join(lines), started_ms)
        result["labels"].append({"name": "tag", "value": r["verdict"]})
        results.append(result)
    return results


def _results_of_run(results: Path, into: Path, target: str) -> None:
    """A copy of one run's Allure results whose tests are that run's: grouped under its target
    (as its requirements are) and told apart from the same tests of other runs, which Allure
    would otherwise show as retries of one another."""
    into.mkdir(parents=True)
    for path in results.iterdir():
        if not path.name.endswith("-result.json"):
            shutil.copy(path, into / path.name)  # attachments and containers, as they are
            continue
        result = json.loads(path.read_text())
        for key in ("historyId", "testCaseId"):
            if key in result:
                result[key] = f"{target}/{result[key]}"
        labels = [label for label in result.get("labels", []) if label.get("name") != "parentSuite"]
        result["labels"] = [{"name": "parentSuite", "value": target}, *labels]
        (into / path.name).write_text(json.dumps(result))


def write(reports: list[Path], dest: Path, name: str) -> Path | None:
    """dest/index.html from these report directories (their summary.json and Allure results);
    None, having written nothing, when Allure is not installed or there is nothing to show."""
    allure = allure_bin()
    found = [r for r in reports if (r / summary.FILE).exists()]
    if not allure.exists() or not found:
        return None
    staging = dest.parent / f".{dest.name}-results"
    shutil.rmtree(staging, ignore_errors=True)
    for i, report in enumerate(found):
        written = report / REQUIREMENT_RESULTS
        shutil.rmtree(written, ignore_errors=True)
        written.mkdir()
        run = summary.read(report)
        for result in requirement_results(run):
            (written / f"{result['uuid']}-result.json").write_text(json.dumps(result))
        if (report / RESULTS).is_dir():
            _results_of_run(report / RESULTS, staging / str(i), run["context"].get("target", report.name))
    config = dest.parent / f".{dest.name}-allurerc.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    # One file that opens from disk: the report's data inside the page, not fetched beside it.
    config.write_text(json.dumps({"name": name, "plugins": {"awesome": {"options": {"singleFile": True}}}}))
    shutil.rmtree(dest, ignore_errors=True)
    dirs = [str(r / REQUIREMENT_RESULTS) for r in found] + [str(d) for d in sorted(staging.glob("*"))]
    try:
        subprocess.run(
            [str(allure), "generate", *dirs, "--config", str(config), "--output", str(dest)],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        config.unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
    page = dest / "index.html"
    page.write_text(without_analytics(page.read_text()))
    return page


# Allure's page loads Google's analytics script (a script tag and its inline configuration, no
# option turns them off in 3.18.0): the report must open without reaching any outside address.
ANALYTICS = re.compile(
    r'<script async src="https://www\.googletagmanager\.com/[^"]*"></script>\s*<script>.*?</script>', re.S
)


def without_analytics(page: str) -> str:
    cleaned = ANALYTICS.sub("", page)
    if "googletagmanager" in cleaned:
        raise RuntimeError("the Allure page still names googletagmanager after its analytics were cut out")
    return cleaned


def install() -> Path:
    """Allure into the cache, exactly the versions of the lock file (npm ci); nothing when there."""
    allure = allure_bin()
    if allure.exists():
        return allure
    prefix = allure.parents[2]
    prefix.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(PACKAGE / name, prefix / name)
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--prefix", str(prefix)], check=True, timeout=900)
    return allure


if __name__ == "__main__":  # make report-tools
    print(install())
