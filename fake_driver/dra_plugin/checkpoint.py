"""Which claims this node has prepared, kept on disk so a restarted plugin answers the same."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)
_FORMAT_VERSION = 1


@dataclass(frozen=True)
class Allocation:
    """One allocation result of a claim that this driver serves on this node."""

    request: str
    device: str


@dataclass(frozen=True)
class PreparedClaim:
    namespace: str
    name: str
    allocations: tuple[Allocation, ...]


class Checkpoint:
    def __init__(self, path: Path):
        self.path = path
        self.claims: dict[str, PreparedClaim] = self._load()

    def _load(self) -> dict[str, PreparedClaim]:
        if not self.path.exists():
            return {}
        try:
            document = json.loads(self.path.read_text())
            if document.get("version") != _FORMAT_VERSION:
                raise ValueError(f"unsupported version {document.get('version')!r}")
            return {
                uid: PreparedClaim(
                    namespace=entry["namespace"],
                    name=entry["name"],
                    allocations=tuple(Allocation(**a) for a in entry["allocations"]),
                )
                for uid, entry in document["claims"].items()
            }
        except (ValueError, KeyError, TypeError) as exc:
            # Refusing to start would take the node's GPUs down; the claims can be prepared again
            # from the API, and unprepare needs only the claim UID. Keep the bad file for analysis.
            aside = self.path.with_name(self.path.name + ".corrupt")
            os.replace(self.path, aside)
            log.error("checkpoint %s is unreadable (%s); moved to %s, starting empty", self.path, exc, aside)
            return {}

    def save(self) -> None:
        document = {
            "version": _FORMAT_VERSION,
            "claims": {uid: asdict(claim) for uid, claim in sorted(self.claims.items())},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        scratch = self.path.with_name(f".{self.path.name}.tmp")
        scratch.write_text(json.dumps(document, indent=2) + "\n")
        os.replace(scratch, self.path)
