"""Kubernetes minor versions ("1.35") and inclusive ranges of them, as written in the catalogue."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kube.features import Minor, format_minor

_MINOR = re.compile(r"(\d+)\.(\d+)")


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
