"""The catalogue's objects: known bugs, requirements, and what applies where.

Requirements are read against the per-minor gate table of kube.features."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from enum import StrEnum

from kube.features import VersionTable
from kube.versions import Minor, VersionRange, format_minor


class Gate(StrEnum):
    """The feature-gate state a requirement needs on the cluster under test."""

    ENABLED = "enabled"
    DISABLED = "disabled"
    ANY = "any"


class Judges(StrEnum):
    """Whose behaviour a requirement's verdict is about. A driver's certification is decided by
    the IDs that judge the driver (alone or with the cluster); the rest are the cluster's scorecard."""

    DRIVER = "driver"  # the driver alone (what it publishes, prepares, exposes)
    BOTH = "both"  # the driver together with the kubelet or control plane
    CLUSTER = "cluster"  # Kubernetes: API server, scheduler, controllers, kubelet, whatever the driver does

    @property
    def about_driver(self) -> bool:
        return self is not Judges.CLUSTER


class Status(StrEnum):
    CONFIRMED = "confirmed"
    UNCONFIRMED = "unconfirmed"  # still to be settled on a real cluster
    SETTLED = "settled"  # unconfirmed in the spec, answered by our clusters (docs/findings.md)


class UnknownRequirementError(LookupError):
    pass


@dataclass(frozen=True)
class Source:
    """Where a requirement comes from: the spec section and the upstream references it cites."""

    spec: str
    kep: str | None = None
    code: tuple[str, ...] = ()
    e2e: tuple[str, ...] = ()
    prs: tuple[int, ...] = ()
    issues: tuple[int, ...] = ()
    docs: tuple[str, ...] = ()


@dataclass(frozen=True)
class KnownBug:
    id: str
    versions: VersionRange
    summary: str
    fixed_in: Minor | None = None
    status: Status = Status.CONFIRMED
    prs: tuple[int, ...] = ()
    issues: tuple[int, ...] = ()

    @property
    def reference(self) -> str:
        """How a deviation names it: the ID and its upstream issues and PRs (related ones where
        no issue of its own was found)."""
        refs = ", ".join(f"kubernetes/kubernetes#{n}" for n in (*self.issues, *self.prs))
        return f"{self.id} ({refs or 'no upstream issue found'})"


@dataclass(frozen=True)
class Requirement:
    id: str
    area: str
    title: str
    text: str
    versions: VersionRange
    gate: Gate
    source: Source
    status: Status
    topology: str
    table: VersionTable = field(repr=False, compare=False)
    question: str | None = None
    settled: str | None = None  # the answer our clusters gave to `question`
    by_version: tuple[tuple[VersionRange, str], ...] = ()
    serial: bool = False
    informational: bool = False  # describes behaviour but is no pass/fail check
    judges: Judges = Judges.CLUSTER
    # Shown only where the driver's DeviceClass maps an explicit extended resource name: a device
    # plugin can serve only such a name, and some checks need the explicit and the implicit name.
    needs_explicit_name: bool = False
    bugs: tuple[str, ...] = ()
    related: tuple[str, ...] = ()

    def expected(self, version: Minor) -> str | None:
        """The recorded outcome for `version` where it differs between versions, else None."""
        return next((outcome for versions, outcome in self.by_version if version in versions), None)

    def applies_to(self, server_version: Minor, gate_enabled: bool | None) -> tuple[bool, str]:
        """Whether the requirement holds on this server, and why (or why not).

        `gate_enabled=None` means the gate was left at the version's default.
        """
        where = format_minor(server_version)
        if server_version not in self.versions:
            outcome = self.expected(server_version)
            recorded = f"; recorded for {where}: {outcome}" if outcome else ""
            return False, f"{self.id} covers Kubernetes {self.versions}, the server is {where}{recorded}"
        gate_on = self.table.gate_on(server_version, gate_enabled)
        state = "on" if gate_on else "off"
        if self.gate is Gate.ANY or gate_on == (self.gate is Gate.ENABLED):
            return True, f"{self.id} applies to {where} with {self.table.feature_gate} {state}"
        need = "on" if self.gate is Gate.ENABLED else "off"
        default = " (the version's default)" if gate_enabled is None else ""
        return False, f"{self.id} needs {self.table.feature_gate} {need}, it is {state} on {where}{default}"


@dataclass(frozen=True)
class Catalogue:
    gate_components: tuple[str, ...]
    areas: dict[str, str]
    topologies: dict[str, str]
    table: VersionTable
    bugs: tuple[KnownBug, ...]
    requirements: dict[str, Requirement]  # by ID, in catalogue order
    # Areas whose requirements are the suite's own, beyond the spec's section 3 (what the spec's
    # promises mean under faults): their IDs are not the spec's.
    suite_areas: frozenset[str] = frozenset()

    def from_spec(self) -> list[str]:
        """IDs of the requirements restated from the spec, in catalogue order."""
        return [rid for rid, req in self.requirements.items() if req.area not in self.suite_areas]

    def requirement(self, req_id: str) -> Requirement:
        try:
            return self.requirements[req_id]
        except KeyError:
            close = difflib.get_close_matches(req_id, self.requirements, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownRequirementError(
                f"requirement {req_id!r} is not in the catalogue (conformance/catalogue/requirements.yaml){hint}"
            ) from None

    def bug(self, bug_id: str) -> KnownBug:
        found = next((b for b in self.bugs if b.id == bug_id), None)
        if found is None:
            raise UnknownRequirementError(f"known bug {bug_id!r} is not in the catalogue")
        return found

    def select(
        self, area: str | None = None, topology: str | None = None, serial: bool | None = None
    ) -> list[Requirement]:
        """Requirements matching every given criterion, in catalogue order."""
        for value, known, kind in ((area, self.areas, "area"), (topology, self.topologies, "topology")):
            if value is not None and value not in known:
                raise ValueError(f"unknown {kind} {value!r} (known: {', '.join(known)})")
        return [
            req
            for req in self.requirements.values()
            if area in (None, req.area) and topology in (None, req.topology) and serial in (None, req.serial)
        ]
