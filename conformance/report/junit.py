"""The run's JUnit files: one per stage (pytest's own, or one error case for a stage that broke
before its tests), and their merge into one document for the whole run, `junit.xml` next to
them (in the in-cluster results `junit_01.xml`, where conformance tooling looks). Each test
case carries its requirement IDs and checks as properties (conformance/report/plugin.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

PREFIX = "junit-"


def stage_file(out: Path, stage: str) -> Path:
    return out / f"{PREFIX}{stage.replace(' ', '-')}.xml"


def write_error(path: Path, stage: str, reason: str) -> None:
    """A stage that broke before any test (a cluster, a driver): one error case naming why."""
    suite = ET.Element("testsuite", name=f"kep5004 {stage}", tests="1", errors="1", failures="0", skipped="0")
    case = ET.SubElement(suite, "testcase", classname="kep5004.run", name=stage)
    ET.SubElement(case, "error", message=reason.splitlines()[0][:500] if reason else "error").text = reason
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def merge(out: Path, dest: Path) -> Path:
    """Every stage's JUnit in `out` as one <testsuites> document, each suite named after its stage."""
    merged = ET.Element("testsuites", name="kep5004 conformance")
    for path in sorted(out.glob(f"{PREFIX}*.xml")):  # none when the run made no report
        root = ET.parse(path).getroot()
        for suite in root.findall("testsuite") if root.tag == "testsuites" else [root]:
            if not suite.get("name", "").startswith("kep5004 "):
                suite.set("name", f"kep5004 {path.stem.removeprefix(PREFIX)}")
            merged.append(suite)
    ET.ElementTree(merged).write(dest, encoding="utf-8", xml_declaration=True)
    return dest


def merge_reports(reports: list[Path], dest: Path, suite_name: Callable[[Path], str]) -> Path:
    """Several report directories' runs as one document, each suite named after its run
    (`suite_name` of the report directory) and its stage."""
    merged = ET.Element("testsuites", name="kep5004 conformance")
    for report in reports:
        run = report / "junit.xml"
        for suite in ET.parse(run if run.exists() else merge(report, run)).getroot().findall("testsuite"):
            suite.set("name", f"{suite_name(report)}: {suite.get('name')}")
            merged.append(suite)
    ET.ElementTree(merged).write(dest, encoding="utf-8", xml_declaration=True)
    return dest
