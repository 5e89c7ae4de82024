"""The `requirement` marker by which suite tests cite catalogue IDs."""

from __future__ import annotations

import pytest

MARKER = "requirement"


def requirement_ids(item: pytest.Item) -> list[str]:
    return [rid for m in item.iter_markers(MARKER) for rid in m.args]
