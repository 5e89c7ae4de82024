"""`python -m conformance.report.submission REPORT_DIR DEST [--profile P]`: a certification
submission in the shape CNCF's k8s-conformance repository takes, from the report of a real run.

DEST gets PRODUCT.yaml (vendor, name, version and links from the profile's `product:` section;
the driver's name where it says nothing), README.md (what was certified, the driver verdict
and the command that reproduces the run), e2e.log (one line per test outcome, in the order the
run recorded them, then every requirement's verdict), junit_01.xml (the run's one JUnit) and
summary.md. Nothing is invented: a field the profile does not give is left out.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from conformance.lib import profile as profiles
from conformance.report import junit
from conformance.report.command import wrote
from conformance.report.summary import read, read_records

PROG = "python -m conformance.report.submission"  # its name in usage lines from a checkout (the installed tool passes its own)

FILES = ("PRODUCT.yaml", "README.md", "e2e.log", "junit_01.xml", "summary.md")


class SubmissionError(ValueError):
    pass


def product(profile: profiles.Profile) -> dict[str, str]:
    return {"name": profile.driver, "type": "dra-driver", **profile.product}


def e2e_log(records: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    lines = [
        f"{r['outcome'].upper()} {r['test']} ({r['when']}, {r['duration']} s) requirements: "
        f"{', '.join(r['requirements'])}"
        for r in records
    ]
    lines.append(f"driver verdict: {summary['driver']['verdict']}")
    lines += [f"{v['id']}: {v['verdict']}" for v in summary["requirements"]]
    return "\n".join(lines) + "\n"


def readme(context: dict[str, Any], summary: dict[str, Any], command: str) -> str:
    driver = summary["driver"]
    counts = ", ".join(f"{k} {n}" for k, n in summary["counts"].items() if n)
    return f"""# {context.get("driver", "?")}: KEP-5004 conformance

Driver verdict: **{driver["verdict"]}** (from the {len(driver["ids"])} requirements that judge the driver).
Kubernetes {context.get("server", "?")}, kubelets {", ".join(context.get("kubelets", [])) or "?"}, profile
{context.get("profile", "?")}, run started {context.get("started", "?")}, {context.get("wall_clock_s", "?")} s.
All requirements: {counts}.

## Reproduce

```sh
{command}
```

`summary.md` has every requirement's verdict with its reasons, `junit_01.xml` every test with its
requirement IDs and checks as properties, `e2e.log` one line per test outcome.
"""


def write(report: Path, dest: Path, profile: profiles.Profile | None = None) -> list[Path]:
    try:
        summary = read(report)
    except (OSError, ValueError) as err:
        raise SubmissionError(f"{report} holds no readable summary.json of a run: {err}") from None
    if "driver" not in summary:
        raise SubmissionError(f"{report}/summary.json predates driver verdicts: run the suite again")
    context = summary["context"]
    profile = profile or profiles.load(context["profile"])
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "PRODUCT.yaml").write_text(yaml.safe_dump(product(profile), sort_keys=False))
    command = (
        f"kep5004-conformance run --kubeconfig KUBECONFIG --profile {profile.source.name}"
        if context.get("target") == "existing"
        else f'make conformance ARGS="--k8s-versions {context.get("server", "?").lstrip("v")} --profile {profile.name}"'
    )
    (dest / "README.md").write_text(readme(context, summary, command))
    (dest / "e2e.log").write_text(e2e_log(read_records(report / "results.jsonl"), summary))
    junit.merge(report, dest / "junit_01.xml")
    shutil.copyfile(report / "summary.md", dest / "summary.md")
    return [dest / name for name in FILES]


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    p = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("report", type=Path, help="a run's report directory (summary.json, results.jsonl, junit-*.xml)")
    p.add_argument("dest", type=Path, help="the submission directory to write")
    p.add_argument("--profile", default=None, help="the driver's profile (default: the one the run names)")
    args = p.parse_args(argv)
    return wrote(
        "submission",
        lambda: write(args.report, args.dest, profiles.load(args.profile) if args.profile else None),
        (SubmissionError, profiles.ProfileError),
    )


if __name__ == "__main__":
    sys.exit(main())
