"""Command line: python -m conformance.catalogue {check,markdown,spec-diff,spec-ids}."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conformance.catalogue import CATALOGUE_PATH, load
from conformance.catalogue.markdown import render
from conformance.catalogue.spec import FROZEN_PATH, compare, format_frozen, parse_spec, read_frozen

PROG = "python -m conformance.catalogue"  # its name in usage lines from a checkout (the installed tool passes its own)


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("--catalogue", type=Path, default=CATALOGUE_PATH, help="catalogue YAML (default: %(default)s)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("check", help="validate the catalogue and compare it with the frozen spec ID list")
    commands.add_parser("markdown", help="print the catalogue as Markdown (docs/requirements.md)")
    diff = commands.add_parser("spec-diff", help="compare the catalogue with the spec's section 3")
    diff.add_argument("spec", type=Path)
    ids = commands.add_parser("spec-ids", help="print the frozen ID list extracted from the spec")
    ids.add_argument("spec", type=Path)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except (OSError, ValueError) as err:  # unreadable files, invalid catalogue or spec
        print(err, file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.command == "spec-ids":
        sys.stdout.write(format_frozen(parse_spec(args.spec.read_text())))
        return 0
    catalogue = load(args.catalogue)
    if args.command == "markdown":
        sys.stdout.write(render(catalogue))
        return 0
    if args.command == "spec-diff":
        expected, against = parse_spec(args.spec.read_text()), args.spec
    else:
        expected, against = read_frozen(), FROZEN_PATH
    problems = compare(expected, catalogue)
    for problem in problems:
        print(f"{against}: {problem}", file=sys.stderr)
    if not problems:
        print(f"{args.catalogue}: {len(catalogue.requirements)} requirements, consistent with {against}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
