"""The KEP-5004 requirement catalogue: IDs, normative texts, versions and sources.

Tests cite requirements with `requirement("ALLOC-1")` and ask whether one holds on the
cluster under test with `requirement(...).applies_to((1, 36), gate_enabled=True)`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from conformance.catalogue.loader import CatalogueError, load
from conformance.catalogue.model import (
    Catalogue,
    Gate,
    KnownBug,
    Requirement,
    Source,
    Status,
    UnknownRequirementError,
)
from kube.features import VersionInfo, VersionTable
from kube.versions import Minor, VersionRange, format_minor, parse_minor

CATALOGUE_PATH = Path(__file__).with_name("requirements.yaml")

__all__ = [
    "CATALOGUE_PATH",
    "Catalogue",
    "CatalogueError",
    "Gate",
    "KnownBug",
    "Minor",
    "Requirement",
    "Source",
    "Status",
    "UnknownRequirementError",
    "VersionInfo",
    "VersionRange",
    "VersionTable",
    "catalogue",
    "format_minor",
    "load",
    "parse_minor",
    "requirement",
    "select",
]


@cache
def catalogue() -> Catalogue:
    """The project's catalogue, read and validated once per process."""
    return load(CATALOGUE_PATH)


def requirement(req_id: str) -> Requirement:
    """The requirement with this ID; UnknownRequirementError names close IDs if there is none."""
    return catalogue().requirement(req_id)


def select(area: str | None = None, topology: str | None = None, serial: bool | None = None) -> list[Requirement]:
    return catalogue().select(area=area, topology=topology, serial=serial)
