"""`python -m conformance.report.merge OUT BUNDLE.tar.gz...`: one result from runs made apart.

The nightly matrix runs each Kubernetes version (and profile) on a machine of its own; each run
leaves its report directories as results bundles (`reports/<target>.tar.gz`; two cells may name
theirs alike). This unpacks the i-th bundle into OUT/<i>/<target>/ and writes, over all of them, OUT/coverage.md (requirement x run ->
verdict, each run's driver verdict on the first row), OUT/junit.xml (every run's suites,
each named after its run) and OUT/html/index.html (where Allure is installed). The same works by hand: `make conformance ARGS="--k8s-versions X"` on
N machines, then this command over the bundles they left.
"""

from __future__ import annotations

import argparse
import sys
import tarfile
from pathlib import Path

from conformance.report import combined, summary
from conformance.report.command import wrote

PROG = (
    "python -m conformance.report.merge"  # its name in usage lines from a checkout (the installed tool passes its own)
)


class MergeError(ValueError):
    pass


def unpack(bundle: Path, out: Path) -> Path:
    """The report directory a bundle holds, unpacked under `out` (refusing paths that leave it)."""
    try:
        with tarfile.open(bundle) as tar:
            tops = {Path(m.name).parts[0] for m in tar.getmembers() if m.name}
            if len(tops) != 1:
                raise MergeError(f"{bundle}: a results bundle holds one report directory, this one {sorted(tops)}")
            tar.extractall(out, filter="data")
    except (OSError, tarfile.TarError) as err:
        raise MergeError(f"{bundle}: not a readable results bundle: {err}") from None
    report = out / tops.pop()
    if not (report / summary.FILE).is_file():
        raise MergeError(f"{bundle}: its report has no {summary.FILE}")
    return report


def merge(out: Path, bundles: list[Path]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    return combined.write(out, [unpack(b, out / str(i)) for i, b in enumerate(bundles, 1)])


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="where the unpacked reports, coverage.md and junit.xml go")
    p.add_argument("bundles", type=Path, nargs="+", help="results bundles (<target>.tar.gz) of runs")
    args = p.parse_args(argv)
    return wrote("merge", lambda: merge(args.out, args.bundles), (MergeError,))


if __name__ == "__main__":
    sys.exit(main())
