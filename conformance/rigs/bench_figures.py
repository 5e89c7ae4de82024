"""make bench's figures: per pod from the watch's stamps, per batch their medians, over the rounds
the minimum, median and maximum of each batch figure and of its ratio to the device plugin's in
the same round; printed side by side and plotted. No figure is asserted on."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BASE = "device-plugin"  # what the ratios are against
# Per pod, in milliseconds: from the method's zero to bound, bound to Running, zero to Running;
# per batch: pods bound per second, first binding to last.
FIGURES = ("to_scheduled_ms", "scheduled_to_running_ms", "end_to_end_ms", "pods_bound_per_s")


@dataclass(frozen=True)
class PodTimes:
    zero: float  # held: the batch's first binding (the scheduler let go); created: the pod's creation
    bound: float | None
    running: float | None
    failed: str | None = None


@dataclass(frozen=True)
class Batch:
    method: str
    mechanism: str
    size: int
    round: int
    pods: list[PodTimes] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        return [p.failed for p in self.pods if p.failed]

    def figure(self, name: str) -> float | None:
        """The batch's median of a per-pod figure, or its throughput; None when no pod gave one."""
        bound = [p for p in self.pods if p.bound is not None]
        ran = [p for p in bound if p.running is not None]
        per_pod = {
            "to_scheduled_ms": [(p.bound or 0) - p.zero for p in bound],
            "scheduled_to_running_ms": [(p.running or 0) - (p.bound or 0) for p in ran],
            "end_to_end_ms": [(p.running or 0) - p.zero for p in ran],
        }
        if name == "pods_bound_per_s":
            times = sorted(p.bound or 0 for p in bound)
            return len(times) / max(times[-1] - times[0], 1e-3) if len(times) > 1 else None
        values = per_pod[name]
        return statistics.median(values) * 1000 if values else None


def spread(values: Iterable[float | None]) -> dict[str, float] | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return {"min": min(present), "median": statistics.median(present), "max": max(present), "rounds": len(present)}


def summarise(batches: list[Batch]) -> dict[str, Any]:
    """method -> size -> mechanism -> figure -> spread over rounds, and the same for each
    mechanism's ratio to the device plugin's figure of the same round (throughput inverted, so
    that above 1 always means slower than the device plugin)."""
    out: dict[str, Any] = {"figures": {}, "ratios": {}}
    # In the order the first round ran them (the device plugin first): the table reads as the run went.
    keys = list(dict.fromkeys((b.method, b.size, b.mechanism) for b in sorted(batches, key=lambda b: b.round)))
    by = {(b.method, b.size, b.mechanism, b.round): b for b in batches}
    rounds = sorted({b.round for b in batches})
    for method, size, mechanism in keys:
        figures = out["figures"].setdefault(method, {}).setdefault(str(size), {}).setdefault(mechanism, {})
        ratios = out["ratios"].setdefault(method, {}).setdefault(str(size), {}).setdefault(mechanism, {})
        for name in FIGURES:
            per_round = [
                by[(method, size, mechanism, r)].figure(name) for r in rounds if (method, size, mechanism, r) in by
            ]
            figures[name] = spread(per_round)
            ratios[name] = spread(_ratio(by, method, size, mechanism, r, name) for r in rounds)
    return out


def _ratio(
    by: dict[tuple[str, int, str, int], Batch], method: str, size: int, mechanism: str, r: int, name: str
) -> float | None:
    mine, base = by.get((method, size, mechanism, r)), by.get((method, size, BASE, r))
    if mine is None or base is None:
        return None
    a, b = mine.figure(name), base.figure(name)
    if a is None or b is None or a == 0 or b == 0:
        return None
    return b / a if name == "pods_bound_per_s" else a / b


def cell(s: dict[str, float] | None, digits: int = 0) -> str:
    if s is None:
        return "-"
    return f"{s['median']:.{digits}f} [{s['min']:.{digits}f}-{s['max']:.{digits}f}]"


def table(summary: dict[str, Any]) -> str:
    """One line per method, batch size and figure: each mechanism's median [min-max] over the
    rounds, then each one's ratio to the device plugin, median [min-max] over the rounds."""
    lines = []
    for method, sizes in summary["figures"].items():
        for size, mechanisms in sizes.items():
            names = list(mechanisms)
            others = [m for m in names if m != BASE]
            lines.append(
                f"\n{method}, {size} pod(s) per batch: "
                + " | ".join(names)
                + " | "
                + " | ".join(f"{m}/{BASE}" for m in others)
            )
            for figure in FIGURES:
                digits = 1 if figure == "pods_bound_per_s" else 0
                cells = [cell(mechanisms[m][figure], digits) for m in names]
                cells += [cell(summary["ratios"][method][size][m][figure], 2) for m in others]
                lines.append(f"  {figure:24s} " + " | ".join(cells))
    return "\n".join(lines).lstrip("\n") + "\n"


def plot(summary: dict[str, Any], out: Path) -> list[Path]:
    """bench-ratio.png: each mechanism's end-to-end ratio to the device plugin per batch size and
    method (median, bars from min to max over the rounds); bench-latency.png: the end-to-end
    medians per batch size, per method and mechanism."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    from matplotlib import pyplot as plt

    written = []
    methods = list(summary["figures"])
    for name, source, ylabel in (
        ("bench-ratio.png", "ratios", f"end-to-end / {BASE}'s (same round)"),
        ("bench-latency.png", "figures", "end-to-end, median of a batch (ms)"),
    ):
        fig, axes = plt.subplots(1, len(methods), figsize=(6 * len(methods), 4), squeeze=False)
        for ax, method in zip(axes[0], methods):
            sizes = list(summary[source][method])
            for mechanism in summary[source][method][sizes[0]]:
                if source == "ratios" and mechanism == BASE:
                    continue
                cells = [summary[source][method][s][mechanism]["end_to_end_ms"] for s in sizes]
                xs = [int(s) for s, c in zip(sizes, cells) if c]
                med = [c["median"] for c in cells if c]
                low = [c["median"] - c["min"] for c in cells if c]
                high = [c["max"] - c["median"] for c in cells if c]
                ax.errorbar(xs, med, yerr=[low, high], marker="o", capsize=3, label=mechanism)
            ax.set(xscale="log", xlabel="pods per batch", ylabel=ylabel, title=f"pods {method}")
            ax.legend()
        written.append(out / name)
        fig.savefig(written[-1], dpi=110, bbox_inches="tight")
        plt.close(fig)
    return written
