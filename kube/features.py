"""The feature gates this project is about and how each Kubernetes minor treats them.

Plain data, kept as Kubernetes keeps its gates in pkg/features: the requirement catalogue, the
cluster tooling and the runner all read the same table (spec section 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from kube.versions import Minor, format_minor

# KEP-5004's gate, consulted by kube-apiserver, kube-scheduler, kube-controller-manager and kubelet.
DRAExtendedResource = "DRAExtendedResource"

GATE_STAGES = ("alpha", "beta", "GA")


@dataclass(frozen=True)
class VersionInfo:
    """One row of the version table: the gate and the API in one Kubernetes minor."""

    minor: Minor
    gate_stage: str
    gate_default: bool
    gate_locked: bool
    dra_gate: str  # how the DynamicResourceAllocation gate stands in that minor
    api_versions: tuple[str, ...]  # resource.k8s.io versions that carry extendedResourceName
    field_doc: str | None = None  # the stage the field's API documentation gives
    notes: str | None = None

    def __post_init__(self) -> None:
        if self.gate_stage not in GATE_STAGES:
            raise ValueError(
                f"{format_minor(self.minor)}: gate stage {self.gate_stage!r} is not one of {', '.join(GATE_STAGES)}"
            )


@dataclass(frozen=True)
class VersionTable:
    """Gate history per minor; the last row also stands for every later minor."""

    feature_gate: str
    rows: tuple[VersionInfo, ...]

    def __post_init__(self) -> None:
        minors = [row.minor for row in self.rows]
        if not minors:
            raise ValueError(f"the version table of {self.feature_gate} is empty")
        # row_for relies on the order.
        if minors != sorted(set(minors)):
            raise ValueError(f"the version table of {self.feature_gate}: minors must be unique and in increasing order")

    def row_for(self, version: Minor) -> VersionInfo | None:
        earlier = [row for row in self.rows if row.minor <= version]
        return earlier[-1] if earlier else None

    def switchable_as(self, version: Minor) -> Minor | None:
        """The minor whose behaviour components of `version` must emulate for the gate to be
        switchable: `version` itself where it is not locked, else the newest earlier minor where
        it was not (None if there is none)."""
        unlocked = [row.minor for row in self.rows if row.minor <= version and not row.gate_locked]
        row = self.row_for(version)
        return version if row is not None and not row.gate_locked else (unlocked[-1] if unlocked else None)

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


# Every minor in the table serves the field in all three resource.k8s.io versions.
_RESOURCE_APIS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2")

_NOTES: dict[Minor, str] = {
    (1, 34): "First release carrying the gate. Implicit names, cleanup on pod completion, init-container reuse, "
    "zero-allocatable migration, scoring and the quota adjustments arrive only in 1.35.",
    (1, 35): "Second alpha: beta was postponed to 1.36 over API skew concerns (PR #135048), so the gate has to be "
    "switched on in all four components. Unconfirmed whether the gate already declares its dependency on "
    "DynamicResourceAllocation in this release.",
    (1, 36): "On by default and the newest minor in which it can still be switched off; kubelet admission of "
    "implicit names is fixed here.",
    (1, 37): "Locked on; only components emulating 1.36 or older accept the gate set to false (the upstream "
    "gate-cycle test relies on that).",
    (1, 38): "Development line (master after v1.37.0-beta.0) as seen by the spec; removal of the gate is planned "
    "for 1.40.",
}

VERSIONS = VersionTable(
    DRAExtendedResource,
    tuple(
        VersionInfo(minor, stage, default, locked, dra_gate, _RESOURCE_APIS, field_doc, _NOTES[minor])
        for minor, stage, default, locked, dra_gate, field_doc in (
            # minor, gate stage, on by default, locked, DynamicResourceAllocation gate, field doc
            ((1, 34), "alpha", False, False, "GA, on by default, can be disabled", "alpha"),
            ((1, 35), "alpha", False, False, "GA, locked on", "alpha"),
            ((1, 36), "beta", True, False, "GA, locked on", "beta"),
            ((1, 37), "GA", True, True, "GA, locked on", "no stage remark"),
            ((1, 38), "GA", True, True, "GA, locked on, removal planned for 1.38", None),
        )
    ),
)
