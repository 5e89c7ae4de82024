"""Pytest plugin: the `requirement` marker, the `check` fixture and a record of every outcome.

Loaded by the suite only. Each suite test names the catalogue IDs it can evaluate with
`@pytest.mark.requirement("ALLOC-1", ...)` and evaluates them with the `check` fixture
(conformance/lib/checks.py). The plugin refuses unknown IDs at collection, fails a test whose
checks failed once the test body has run (so every check of the test gets its verdict), and
writes one JSON line per test phase, with the checks it recorded, to the file given with
--results-json (works with xdist: checks travel as user properties to the controller).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.catalogue import requirement as lookup
from conformance.catalogue.model import UnknownRequirementError
from conformance.lib.checks import PROPERTY, ChargedTo, Check, Checks
from conformance.report.markers import MARKER, requirement_ids


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kep5004")
    group.addoption(
        "--results-json", type=Path, default=None, help="append one JSON line per test outcome to this file"
    )
    group.addoption(
        "--results-where",
        default="",
        help="where this stage ran, put before each test's name in the results (the same tests run on two clusters)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(*ids): catalogue requirement IDs the test checks")
    path = config.getoption("--results-json")
    # Only the process that receives every report writes: the xdist controller, or a plain run.
    if path is not None and not hasattr(config, "workerinput"):
        config.pluginmanager.register(ResultsWriter(path, config.getoption("--results-where")), "kep5004-results")


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


_CHECKS = pytest.StashKey[Checks]()


@pytest.fixture
def check(request: pytest.FixtureRequest) -> Checks:
    """Per-requirement checks of this test (see conformance/lib/checks.py)."""
    item = request.node
    checks = Checks(set(requirement_ids(item)), lambda c: item.user_properties.append((PROPERTY, c.to_json())))
    item.stash[_CHECKS] = checks
    return checks


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After the body ran: fail the test if any of its checks failed, naming each failed ID. A
    failure charged to an ID that escaped every check (a wait outside one) is recorded under it."""
    checks = item.stash.get(_CHECKS, None)
    try:
        result = yield
    except ChargedTo as err:
        if checks is not None:
            checks.that(err.rid, False, err.message)
        raise
    if checks and checks.failures:
        raise AssertionError("\n".join(c.render() for c in checks.failures))
    return result


# pytest types user property values as object; the ones this plugin adds (and reads) are text.
def recorded_checks(report: pytest.TestReport) -> list[Check]:
    return [Check.from_json(str(v)) for k, v in report.user_properties if k == PROPERTY]


def _message(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return report.longreprtext[-4000:] if report.failed else ""


class ResultsWriter:
    def __init__(self, path: Path, where: str = "") -> None:
        self.path, self.where = path, where
        self.written: dict[str, int] = {}  # test -> checks already written (properties accumulate per phase)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        checks = recorded_checks(report)
        new = checks[self.written.get(report.nodeid, 0) :]
        if report.when != "call" and report.passed and not new:
            return
        self.written[report.nodeid] = len(checks)
        ids = str(dict(report.user_properties).get("requirements", ""))
        record = {
            "test": f"[{self.where}] {report.nodeid}" if self.where else report.nodeid,
            "when": report.when,
            "outcome": report.outcome,
            "requirements": [i for i in ids.split(",") if i],
            "duration": round(report.duration, 2),
            "message": _message(report),
            "checks": [vars(c) for c in new],
        }
        # One write(2) on an O_APPEND descriptor: two stages may append to one file at once (the
        # in-place lane runs alongside), and a buffered file could split a long line in two writes.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(record) + "\n").encode())
        finally:
            os.close(fd)
