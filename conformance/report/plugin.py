"""Pytest plugin: the `requirement` marker and a machine-readable record of every outcome.

Loaded by the suite only. Each suite test cites catalogue IDs with `@pytest.mark.requirement("ALLOC-1", ...)`. The
plugin refuses unknown IDs at collection, and writes one JSON line per test phase to the
file given with --results-json (works with xdist: reports reach the controller).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.catalogue import requirement as lookup
from conformance.catalogue.model import UnknownRequirementError

from conformance.report.markers import MARKER, requirement_ids


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("kep5004").addoption("--results-json", type=Path, default=None,
                                         help="append one JSON line per test outcome to this file")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(*ids): catalogue requirement IDs the test checks")
    path = config.getoption("--results-json")
    # Only the process that receives every report writes: the xdist controller, or a plain run.
    if path is not None and not hasattr(config, "workerinput"):
        config.pluginmanager.register(ResultsWriter(path), "kep5004-results")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problems = []
    for item in items:
        ids = requirement_ids(item)
        if not ids:
            problems.append(f"{item.nodeid}: cites no requirement")
        for rid in ids:
            try:
                lookup(rid)
            except UnknownRequirementError as err:
                problems.append(f"{item.nodeid}: {err}")
        item.user_properties.append(("requirements", ",".join(ids)))
    if problems:
        raise pytest.UsageError("bad requirement markers:\n" + "\n".join(problems))


def _message(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return report.longreprtext[-4000:] if report.failed else ""


class ResultsWriter:
    def __init__(self, path: Path) -> None:
        self.path = path

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and report.passed:
            return
        ids = dict(report.user_properties).get("requirements", "")
        record = {"test": report.nodeid, "when": report.when, "outcome": report.outcome,
                  "requirements": [i for i in ids.split(",") if i], "duration": round(report.duration, 2),
                  "message": _message(report)}
        with open(self.path, "a") as out:
            out.write(json.dumps(record) + "\n")
