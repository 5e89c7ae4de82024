"""`python -m conformance.report.coverage SUMMARY.json...`: requirement x version -> verdict, as Markdown.

Reads the summary.json of several runs (one per Kubernetes version, or per profile) and prints
one table, so a reader sees at a glance what was checked where and with what outcome.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from conformance.report.summary import COLUMNS, FIRST_PROFILE_ONLY

SHORT = {
    "passed": "pass",
    "failed": "**FAIL**",
    "deviates": "deviates",
    "observed": "observed",
    "not applicable": "n/a",
    "error": "**error**",
    "not tested": "-",
}


def _cell(r: dict[str, Any]) -> str:
    elsewhere = next((why for why in r.get("reasons", []) if why.startswith(FIRST_PROFILE_ONLY)), None)
    if r["verdict"] == "not tested" and elsewhere:  # e.g. "- (fake-gpu)": that report has the verdict
        return f"- ({elsewhere[len(FIRST_PROFILE_ONLY) :].split(':')[0].strip()})"
    verdict: str = r["verdict"]
    return SHORT.get(verdict, verdict)


def table(summaries: list[dict[str, Any]]) -> str:
    heads = [f"{s['context'].get('server', '?')} ({s['context'].get('profile', '?')})" for s in summaries]
    rows: dict[str, list[str]] = {}
    for i, s in enumerate(summaries):
        for r in s["requirements"]:
            rows.setdefault(r["id"], [r["title"], *[""] * len(summaries)])[1 + i] = _cell(r)
    counts = [" / ".join(f"{s['counts'].get(k, 0)} {k}" for k in COLUMNS if s["counts"].get(k)) for s in summaries]
    # The driver's verdict heads each column; its rows carry the cluster's scorecard after it.
    driver = [f"**{s['driver']['verdict']}**" if "driver" in s else "?" for s in summaries]
    lines = [
        "| ID | requirement | " + " | ".join(heads) + " |",
        "|---|---|" + "---|" * len(heads),
        "| driver | driver verdict (from the requirements that judge the driver) | " + " | ".join(driver) + " |",
        *(f"| {rid} | {title} | " + " | ".join(cells) + " |" for rid, (title, *cells) in rows.items()),
        "",
        *(f"- {h}: {c}" for h, c in zip(heads, counts)),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str], prog: str = "python -m conformance.report.coverage") -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        summaries = [json.loads(Path(p).read_text()) for p in argv]
    except (OSError, ValueError) as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(table(summaries))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
