"""Per-requirement checks: what a test evaluated, for which catalogue ID, with what outcome.

A test states each requirement it checks where it checks it:

    check.that("STATUS-1", claim_name == status_name, f"claim {claim_name}, status {status_name}")
    with check("ALLOC-1"):                 # an AssertionError or a timed-out wait inside fails ALLOC-1
        pod = pods.wait_running(...)
    with check("ALLOC-1", stop=True): ...  # the same, and the test cannot go on without it

A failed check fails its own ID and the test, but the test's later checks still run and keep
their verdicts (unless the check was `stop=True`). Only evaluated checks reach the summary: a
branch that never checked an ID credits nothing. A test may evaluate only the IDs its
`requirement` marker names; a check of another ID counts when it fails or deviates (a defect,
known upstream or not, is reported wherever it is seen) and is not credited when it holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from conformance.catalogue import catalogue
from kube.versions import Minor

PASSED = "passed"
FAILED = "failed"
DEVIATES = "deviates"  # the cluster contradicts the spec through a known upstream bug
OBSERVED = "observed"  # informational: what was seen, no pass/fail
NOT_APPLICABLE = "not applicable"  # the catalogue's version range or a gate the run set (summary only)
ERROR = "error"  # a test citing the ID failed or broke outside this ID's checks
NOT_TESTED = "not tested"  # always with a reason: a clause the profile or cluster cannot show
# Worst first: the order in which one ID's outcomes across tests decide its verdict. A clause not
# tested keeps the ID from `passed`; observations alone never make it `passed`.
PRECEDENCE = (FAILED, ERROR, DEVIATES, NOT_TESTED, PASSED, OBSERVED, NOT_APPLICABLE)

PROPERTY = "check"  # user_properties key: survives xdist and lands in JUnit as a property


@dataclass(frozen=True)
class Check:
    id: str
    verdict: str
    message: str = ""
    reference: str = ""  # upstream issue/PR of a deviation

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "Check":
        return cls(**json.loads(text))

    def render(self) -> str:
        ref = f" (upstream: {self.reference})" if self.reference else ""
        return f"[{self.id}] {self.verdict}{ref}: {self.message}"


@dataclass
class Findings:
    """Checks made by an oracle (passed and failed), for a test to record in one go."""

    checks: list[Check] = field(default_factory=list)

    def check(self, ok: bool, requirement: str, message: str) -> bool:
        self.checks.append(Check(requirement, PASSED if ok else FAILED, "" if ok else message))
        return ok

    def not_tested(self, requirement: str, reason: str) -> None:
        """A clause of `requirement` this oracle cannot judge here (see Checks.not_tested)."""
        self.checks.append(Check(requirement, NOT_TESTED, reason))

    @property
    def problems(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == FAILED]

    def __bool__(self) -> bool:
        """True when something failed (an oracle's findings are its problems)."""
        return bool(self.problems)

    def render(self) -> str:
        return "\n".join(f"[{c.id}] {c.message}" for c in self.problems)


class ChargedTo(AssertionError):
    """A failure seen inside another requirement's check that belongs to `rid` (e.g. a pod that
    never ran because the driver could not prepare it, seen while NAME-1 waited for it): the check
    records it under `rid` and stops the test; the waiting ID is left unjudged."""

    def __init__(self, rid: str, message: str) -> None:
        super().__init__(f"[{rid}] {message}")
        self.rid, self.message = rid, message


class CheckStopped(AssertionError):
    """A `stop=True` check failed: the test cannot go on (its message names the ID)."""


class Checks:
    """The recorder a test receives as the `check` fixture."""

    def __init__(self, allowed: set[str], sink: Callable[[Check], None]) -> None:
        self.allowed = allowed  # the IDs the test's marker names
        self._sink = sink
        self.recorded: list[Check] = []

    def _record(self, c: Check) -> None:
        if c.id not in self.allowed and c.verdict not in (FAILED, DEVIATES):
            return  # not this test's to credit (see module doc)
        self.recorded.append(c)
        self._sink(c)

    def that(self, rid: str, ok: bool, message: str) -> bool:
        """Record `rid` as passed or failed; the message is what a failure shows."""
        self._record(Check(rid, PASSED if ok else FAILED, "" if ok else message))
        return ok

    @contextmanager
    def __call__(self, rid: str, *, stop: bool = False, observed: Callable[[], str] | None = None) -> Iterator[None]:
        """Evaluate `rid` with the assertions (and waits) inside the block.

        observed: shown after a failure's message (e.g. the pod and claim as seen then)."""
        try:
            yield
        except ChargedTo as err:
            self._record(Check(err.rid, FAILED, err.message + (f"\n{observed()}" if observed else "")))
            raise CheckStopped(str(err)) from None
        except AssertionError as err:
            text = str(err) + (f"\n{observed()}" if observed else "")
            self._record(Check(rid, FAILED, text))
            if stop:
                raise CheckStopped(f"[{rid}] {text}") from None
        else:
            self._record(Check(rid, PASSED))

    def all(
        self,
        findings: Findings,
        *,
        stop: bool = False,
        observed: Callable[[], str] | None = None,
        as_id: str | None = None,
    ) -> bool:
        """Record every check an oracle made; returns True when all held.

        as_id: record them as one check of this ID instead (an oracle reused inside another
        requirement, e.g. "pods survive the upgrade unchanged", where any problem fails that one);
        each problem also fails its own ID, so that e.g. a container seeing a device it was not
        given is charged to CTR-1 wherever it is seen, not only to the scenario that saw it."""
        shown = (lambda text: f"{text}\n{observed()}") if observed else (lambda text: text)
        if as_id is not None:
            self.that(as_id, not findings, shown(findings.render()) if findings else "")
            for c in findings.problems:
                if c.id != as_id:
                    self._record(Check(c.id, c.verdict, shown(c.message)))
        else:
            for c in findings.checks:
                self._record(c if c.verdict != FAILED else Check(c.id, c.verdict, shown(c.message)))
        if findings and stop:
            raise CheckStopped(findings.render())
        return not findings

    def deviates(self, rid: str, reference: str, observed: str) -> None:
        """The cluster contradicts the spec for `rid` through a known upstream bug (`reference`)."""
        self._record(Check(rid, DEVIATES, observed, reference))

    def known_bug(self, rid: str, bug_id: str, minor: Minor, observed: str) -> None:
        """`observed` contradicts the spec for `rid` in the way known upstream bug `bug_id` does:
        a deviation on the versions the catalogue records it for, a failure anywhere else."""
        bug = catalogue().bug(bug_id)
        if minor in bug.versions:
            self.deviates(rid, bug.reference, observed)
        else:
            self.that(rid, False, f"{observed}; known bug {bug.id} is recorded for Kubernetes {bug.versions} only")

    def observe(self, rid: str, what: str) -> None:
        """An informational result: what was seen (no pass/fail)."""
        self._record(Check(rid, OBSERVED, what))

    def not_tested(self, rid: str, reason: str) -> None:
        """A clause of `rid` that this cluster or profile cannot show: the ID is not `passed` here,
        whatever else held. (Versions and gates are the catalogue's: the summary applies them.)"""
        self._record(Check(rid, NOT_TESTED, reason))

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.recorded if c.verdict == FAILED]
