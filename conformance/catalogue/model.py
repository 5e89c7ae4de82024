"""The catalogue's objects: version table, known bugs, requirements, and what applies where."""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from enum import StrEnum

from conformance.catalogue.versions import Minor, VersionRange, format_minor


class Gate(StrEnum):
    """The feature-gate state a requirement needs on the cluster under test."""

    ENABLED = "enabled"
    DISABLED = "disabled"
    ANY = "any"


class Status(StrEnum):
    CONFIRMED = "confirmed"
    UNCONFIRMED = "unconfirmed"  # still to be settled on a real cluster


class UnknownRequirementError(LookupError):
    pass


@dataclass(frozen=True)
class VersionInfo:
    """One row of the version table: the gate and the API in one Kubernetes minor."""

    minor: Minor
    gate_stage: str
    gate_default: bool
    gate_locked: bool
    dra_gate: str
    api_versions: tuple[str, ...]
    field_doc: str | None = None
    notes: str | None = None


@dataclass(frozen=True)
class VersionTable:
    """Gate history per minor; the last row also stands for every later minor."""

    feature_gate: str
    rows: tuple[VersionInfo, ...]

    def row_for(self, version: Minor) -> VersionInfo | None:
        earlier = [row for row in self.rows if row.minor <= version]
        return earlier[-1] if earlier else None

    def rows_within(self, versions: VersionRange) -> list[VersionInfo]:
        """The rows that govern some minor of `versions`."""
        first = self.row_for(versions.min)
        return [row for row in self.rows if row is first or row.minor in versions]

    def gate_on(self, version: Minor, gate_enabled: bool | None) -> bool:
        """Effective gate state; None means "left at the version's default"."""
        row = self.row_for(version)
        if row is None:
            raise ValueError(f"{self.feature_gate} does not exist in Kubernetes {format_minor(version)}")
        if gate_enabled is None:
            return row.gate_default
        if row.gate_locked and gate_enabled != row.gate_default:
            raise ValueError(
                f"{self.feature_gate} is locked to {row.gate_default} in {format_minor(version)}; "
                "for a cluster that emulates an older version, pass the emulated version"
            )
        return gate_enabled


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
    by_version: tuple[tuple[VersionRange, str], ...] = ()
    serial: bool = False
    informational: bool = False  # describes behaviour but is no pass/fail check
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

    def requirement(self, req_id: str) -> Requirement:
        try:
            return self.requirements[req_id]
        except KeyError:
            close = difflib.get_close_matches(req_id, self.requirements, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownRequirementError(
                f"requirement {req_id!r} is not in the catalogue (conformance/catalogue/requirements.yaml){hint}"
            ) from None

    def select(self, area: str | None = None, topology: str | None = None,
               serial: bool | None = None) -> list[Requirement]:
        """Requirements matching every given criterion, in catalogue order."""
        for value, known, kind in ((area, self.areas, "area"), (topology, self.topologies, "topology")):
            if value is not None and value not in known:
                raise ValueError(f"unknown {kind} {value!r} (known: {', '.join(known)})")
        return [
            req for req in self.requirements.values()
            if area in (None, req.area) and topology in (None, req.topology) and serial in (None, req.serial)
        ]
