"""Kubernetes versions, in one place: a release ("v1.37.2", also as a server reports it), a
minor ("1.37") and inclusive ranges of minors as the catalogue writes them."""

from __future__ import annotations

import re
from dataclasses import dataclass

Minor = tuple[int, int]

_MINOR = re.compile(r"(\d+)\.(\d+)")


def format_minor(version: Minor) -> str:
    return f"{version[0]}.{version[1]}"


def parse_minor(text: object) -> Minor:
    # YAML reads an unquoted 1.30 as the float 1.3, so anything but a string is refused.
    if not isinstance(text, str):
        raise ValueError(f'version {text!r} must be a quoted string such as "1.35"')
    match = _MINOR.fullmatch(text)
    if not match:
        raise ValueError(f"version {text!r} is not of the form MAJOR.MINOR")
    return int(match[1]), int(match[2])


@dataclass(frozen=True)
class VersionRange:
    """Minors from `min` to `max` inclusive; `max=None` means no upper bound."""

    min: Minor
    max: Minor | None = None

    def __post_init__(self) -> None:
        if self.max is not None and self.max < self.min:
            raise ValueError(f"range ends ({format_minor(self.max)}) before it starts ({format_minor(self.min)})")

    @classmethod
    def parse(cls, text: object) -> VersionRange:
        """ "1.34" (one minor), "1.35+" (open-ended) or "1.35-1.37" (inclusive)."""
        if isinstance(text, str) and text.endswith("+"):
            return cls(parse_minor(text[:-1]))
        if isinstance(text, str) and "-" in text:
            low, _, high = text.partition("-")
            return cls(parse_minor(low), parse_minor(high))
        minor = parse_minor(text)
        return cls(minor, minor)

    def __contains__(self, version: Minor) -> bool:
        return self.min <= version and (self.max is None or version <= self.max)

    def overlaps(self, other: VersionRange) -> bool:
        return other.min in self or self.min in other

    def __str__(self) -> str:
        if self.max is None:
            return f"{format_minor(self.min)}+"
        if self.max == self.min:
            return format_minor(self.min)
        return f"{format_minor(self.min)}-{format_minor(self.max)}"


class UnknownVersionError(ValueError):
    pass


@dataclass(frozen=True, order=True)
class KubeVersion:
    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> "KubeVersion":
        m = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", text.strip())
        if not m:
            raise UnknownVersionError(f"not a Kubernetes release version: {text!r}")
        return cls(*(int(g) for g in m.groups()))

    @classmethod
    def of_server(cls, git_version: str) -> "KubeVersion":
        """The release a server reports as its gitVersion, whatever a distribution appends to it
        ("v1.37.2+k3s1", "v1.36.3-gke.1200")."""
        return cls.parse(re.split(r"[+-]", git_version.strip(), maxsplit=1)[0])

    @property
    def tag(self) -> str:
        return f"v{self.major}.{self.minor}.{self.patch}"

    @property
    def short(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def as_minor(self) -> Minor:
        return self.major, self.minor
