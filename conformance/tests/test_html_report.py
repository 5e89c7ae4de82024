"""A run's HTML report, opened as a person would: in a real headless browser (Debian's Chromium
driven by Playwright), offline, it shows the driver verdict, a failed requirement's evidence and
the failed test's diagnostics (no cluster needed; Allure from `make report-tools`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, sync_playwright

from conformance.report import html, summary

CHROMIUM = Path("/usr/bin/chromium")
# Headless, and nothing of its own on the network: this machine's is closed, and the report must not need one.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
EVIDENCE = "container main sees ['GPU-7'], expected ['GPU-3']"
FAILING_TEST = """
import allure

def test_each_container_sees_its_devices():
    allure.attach("Warning FailedPrepareDynamicResources pod/p", name="events.yaml",
                  attachment_type=allure.attachment_type.TEXT)
    assert False, "[CTR-1] failed"
"""


@pytest.fixture(scope="module")
def report_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML report of a run in which CTR-1 failed, its test with diagnostics attached."""
    for needed, how in ((html.allure_bin(), "make report-tools"), (CHROMIUM, "make browser")):
        if not needed.exists():
            pytest.fail(f"{needed} is missing: {how}")
    where = tmp_path_factory.mktemp("run")
    out = where / "kep5004-dra-137"
    (where / "test_devices.py").write_text(FAILING_TEST)
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-c", "/dev/null", "-p", "no:cacheprovider"]
        + [f"--alluredir={out / html.RESULTS}", "test_devices.py"],
        cwd=where,
        capture_output=True,
        timeout=120,
    )
    failed = {
        "test": "test_devices.py::test_each_container_sees_its_devices",
        "when": "call",
        "outcome": "failed",
        "requirements": ["CTR-1"],
        "duration": 1.0,
        "message": "[CTR-1] failed",
        "checks": [{"id": "CTR-1", "verdict": "failed", "message": EVIDENCE, "reference": ""}],
    }
    context = {
        "target": out.name,
        "server": "v1.37.2",
        "profile": "fake-gpu",
        "driver": "gpu.nvidia.com",
        "explicit_name": True,
        "started": "2026-12-07T04:00:00Z",
    }
    summary.write([failed], out, context)
    page = html.write([out], where / "html", "KEP-5004 conformance")
    assert page is not None
    return page


@pytest.fixture
def browser_page(report_page: Path) -> Iterator[Page]:
    """The report in the browser; any request for an outside address is refused, and fails the test."""
    outside: list[str] = []

    def refuse(route: Route) -> None:
        outside.append(route.request.url)
        route.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        # Every step's deadline, not a measure: a loaded 2-core host renders the page slowly.
        page.set_default_timeout(120_000)
        page.route(re.compile(r"^(https?|wss?)://"), refuse)
        page.goto(report_page.as_uri())
        yield page
        browser.close()
    assert not outside, f"the report asked for outside addresses: {outside}"


def shown(page: Page, text: str) -> None:
    page.get_by_text(text).first.wait_for()


def open_result(page: Page, name: str) -> None:
    """A result of the tree, found as a person would: by the report's search (the tree shows only part of itself)."""
    page.get_by_placeholder("Search tests").fill(name)
    shown(page, name)
    page.get_by_text(name).first.click()


def test_the_report_opens_offline_on_the_driver_verdict(browser_page: Page) -> None:
    shown(browser_page, "Driver verdict: not certified")
    shown(browser_page, "Kubernetes scorecard")


def test_a_failed_requirement_shows_its_evidence(browser_page: Page) -> None:
    open_result(browser_page, "CTR-1 Devices reach only their own container")
    shown(browser_page, EVIDENCE)
    shown(browser_page, "Judged by: test_devices.py::test_each_container_sees_its_devices")


def test_the_failed_test_carries_its_diagnostics(browser_page: Page) -> None:
    open_result(browser_page, "test_each_container_sees_its_devices")
    browser_page.get_by_text("Attachments").first.click()
    shown(browser_page, "events.yaml")


def test_only_a_passed_requirement_and_a_certified_driver_are_green(tmp_path: Path) -> None:
    def record(rid: str, verdict: str) -> dict[str, object]:
        return {
            "test": f"t::{rid}",
            "when": "call",
            "outcome": "passed",
            "requirements": [rid],
            "duration": 1.0,
            "message": "",
            "checks": [{"id": rid, "verdict": verdict, "message": verdict, "reference": ""}],
        }

    records = [record("CTR-1", "passed"), record("NAME-3", "deviates"), record("SCORE-2", "observed")]
    summary.write(records, tmp_path, {"target": "t", "server": "v1.37.2", "explicit_name": True})
    results = html.requirement_results(summary.read(tmp_path))
    status = {r["name"].split(" ")[0]: r["status"] for r in results}
    assert (status["CTR-1"], status["NAME-3"], status["SCORE-2"], status["API-1"]) == (
        "passed",
        "failed",
        "unknown",
        "skipped",
    )
    assert results[0]["name"] == "Driver verdict: incomplete" and results[0]["status"] == "unknown"


def test_the_same_test_of_two_runs_stays_two_results_under_their_runs(tmp_path: Path) -> None:
    """Allure folds results of one historyId into retries: each run's tests get their run's."""
    result = {"name": "t", "historyId": "h", "testCaseId": "c", "labels": [{"name": "parentSuite", "value": "x"}]}
    for target in ("kep5004-dra-136", "kep5004-dra-137"):
        (tmp_path / target).mkdir()
        (tmp_path / target / "r-result.json").write_text(json.dumps(result))
        (tmp_path / target / "a-attachment.txt").write_text("events")
        html._results_of_run(tmp_path / target, tmp_path / "staged" / target, target)
    staged = [
        json.loads((tmp_path / "staged" / t / "r-result.json").read_text())
        for t in ("kep5004-dra-136", "kep5004-dra-137")
    ]
    assert [r["historyId"] for r in staged] == ["kep5004-dra-136/h", "kep5004-dra-137/h"]
    assert staged[0]["labels"] == [{"name": "parentSuite", "value": "kep5004-dra-136"}]
    assert (tmp_path / "staged" / "kep5004-dra-137" / "a-attachment.txt").read_text() == "events"
