"""What several report directories (one run's versions and profiles, or runs made on separate
machines) make together: coverage.md (requirement x run), junit.xml (every run's suites, each
named after its run) and one HTML report of them all."""

from __future__ import annotations

from pathlib import Path

from conformance.report import coverage, html, junit, summary

NAME = "KEP-5004 conformance"


def run_name(report: Path) -> str:
    """A report directory as its run: server version and profile."""
    context = summary.read(report)["context"]
    return f"{context.get('server', report.name)} ({context.get('profile', '?')})"


def write(out: Path, reports: list[Path]) -> list[Path]:
    """The combined files over those of `reports` that have a summary; the HTML report only
    where Allure is installed (html.allure_bin)."""
    found = [r for r in reports if (r / summary.FILE).exists()]
    out.mkdir(parents=True, exist_ok=True)
    (out / "coverage.md").write_text(coverage.table([summary.read(r) for r in found]))
    written = [out / "coverage.md", junit.merge_reports(found, out / "junit.xml", run_name)]
    page = html.write(found, out / html.HTML, NAME) if found else None
    return written + ([page] if page else [])
