"""The requirement IDs of the behaviour spec (section 3) and the frozen copy kept beside the catalogue.

The spec lives outside the repository, so tests compare the catalogue with the frozen list
(spec_ids.txt); `python -m conformance.catalogue spec-diff PATH` compares it with the spec itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from conformance.catalogue.model import Catalogue, Status

FROZEN_PATH = Path(__file__).with_name("spec_ids.txt")
UNCONFIRMED = "UNCONFIRMED"

_SECTION_3 = re.compile(r"^## 3\.[^\n]*\n(.*?)(?=^## |\Z)", re.M | re.S)
_ITEM_START = re.compile(r"^\* \*\*([A-Z]+-[0-9]+[a-z]?)\*\*", re.M)
# An item runs until the next bullet or heading.
_ITEM_END = re.compile(r"^(?:\* |#)", re.M)


@dataclass(frozen=True)
class SpecItem:
    id: str
    unconfirmed: bool


def parse_spec(text: str) -> list[SpecItem]:
    """Section 3 items in spec order; an item counts as unconfirmed if its text carries the mark."""
    section = _SECTION_3.search(text)
    if not section:
        raise ValueError("no section '## 3.' found in the spec")
    body = section[1]
    items = []
    for start in _ITEM_START.finditer(body):
        end = _ITEM_END.search(body, start.end())
        item_text = body[start.start() : end.start() if end else len(body)]
        items.append(SpecItem(start[1], UNCONFIRMED in item_text))
    if not items:
        raise ValueError("section 3 of the spec has no '* **ID**' items")
    return items


def format_frozen(items: list[SpecItem]) -> str:
    lines = [
        "# Requirement IDs of spec section 3, in spec order; UNCONFIRMED mirrors the spec's mark.",
        "# Regenerate: python -m conformance.catalogue spec-ids PATH > conformance/catalogue/spec_ids.txt",
    ]
    lines += [f"{item.id} {UNCONFIRMED}" if item.unconfirmed else item.id for item in items]
    return "\n".join(lines) + "\n"


def read_frozen(path: Path = FROZEN_PATH) -> list[SpecItem]:
    items = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            req_id, *mark = line.split()
            if mark not in ([], [UNCONFIRMED]):
                raise ValueError(f"{path}: cannot read line {line!r}")
            items.append(SpecItem(req_id, bool(mark)))
    return items


def compare(expected: list[SpecItem], catalogue: Catalogue) -> list[str]:
    """Differences between the spec's items and the catalogue: IDs, their order, and status."""
    ids = [item.id for item in expected]
    have = catalogue.from_spec()
    problems = [f"{req_id}: in the spec, missing from the catalogue" for req_id in ids if req_id not in have]
    problems += [f"{req_id}: in the catalogue, not in the spec" for req_id in have if req_id not in ids]
    if not problems and ids != have:
        # Same IDs, so the lists differ in order or by a repeated ID.
        index = next((i for i, (want, got) in enumerate(zip(ids, have)) if want != got), min(len(ids), len(have)))
        problems.append(f"IDs are ordered or repeated differently from the spec from position {index + 1} on")
    for item in expected:
        req = catalogue.requirements.get(item.id)
        # What the spec leaves unconfirmed stays so in the catalogue until our clusters settle it.
        if req and item.unconfirmed != (req.status is not Status.CONFIRMED):
            want = "unconfirmed (or settled)" if item.unconfirmed else Status.CONFIRMED.value
            problems.append(f"{item.id}: the spec makes it {want}, the catalogue says {req.status.value}")
    return problems
