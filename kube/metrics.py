"""Samples read from a component's /metrics page (the Prometheus text format)."""

from __future__ import annotations

import re

_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(text: str, metric: str) -> list[tuple[dict[str, str], float]]:
    """Every sample of `metric`: its labels and value (comments and other metrics skipped)."""
    found = []
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and m.group("name") == metric:
            labels = {
                k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _LABEL.findall(m.group("labels") or "")
            }
            found.append((labels, float(m.group("value"))))
    return found


def value(text: str, metric: str, **labels: str) -> float | None:
    """The sum of `metric`'s samples carrying `labels` (others may carry more); None without any."""
    matching = [v for have, v in samples(text, metric) if all(have.get(k) == want for k, want in labels.items())]
    return sum(matching) if matching else None
