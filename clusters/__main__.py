"""`python -m clusters up|down|list|logs`: cluster lifecycle from the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clusters import lifecycle
from clusters.images import ImagesMissingError
from clusters.lease import ClusterInUseError
from clusters.shell import CommandError
from clusters.topology import TOPOLOGIES, ClusterSpec, TopologyError, parse_gates
from clusters.versions import resolve
from kube.versions import UnknownVersionError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clusters")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="create or reuse a cluster")
    up.add_argument("--topology", default="dra", choices=sorted(TOPOLOGIES))
    up.add_argument("--version", help="Kubernetes version, e.g. 1.36 or v1.37.2 (default: the pinned default)")
    up.add_argument("--feature-gates", default="", help="gate overrides, e.g. DRAExtendedResource=false")
    up.add_argument(
        "--kubelet-version",
        help="the workers' Kubernetes, 1-3 minors older than --version (version skew; pinned versions only)",
    )
    up.add_argument(
        "--purpose",
        default="",
        help="a word in the cluster's name (kep5004-PURPOSE-dra-137), so that it can live beside a run's own",
    )
    down = sub.add_parser("down", help="delete clusters made by this project")
    down.add_argument("names", nargs="*")
    down.add_argument("--all", action="store_true")
    sub.add_parser("list", help="list clusters made by this project")
    logs = sub.add_parser("logs", help="export a cluster's logs")
    logs.add_argument("name")
    logs.add_argument("dest", type=Path)
    args = parser.parse_args(argv)

    try:
        if args.command == "up":
            cluster = lifecycle.ensure(
                ClusterSpec(
                    args.topology,
                    resolve(args.version),
                    gates=parse_gates(args.feature_gates),
                    purpose=args.purpose,
                    kubelet_version=resolve(args.kubelet_version) if args.kubelet_version else None,
                )
            )
            print(f"{cluster.name}: KUBECONFIG={cluster.kubeconfig}")
        elif args.command == "down":
            names = [n for n in lifecycle.existing_clusters() if n.startswith("kep5004-")] if args.all else args.names
            in_use = []
            for name in names:
                try:
                    lifecycle.delete(name)
                    print(f"deleted {name}")
                except ClusterInUseError as err:  # the others can still go
                    in_use.append(str(err))
            if in_use:
                raise ClusterInUseError("; ".join(in_use))
        elif args.command == "list":
            print("\n".join(n for n in lifecycle.existing_clusters() if n.startswith("kep5004-")))
        else:
            print(lifecycle.export_logs(args.name, args.dest))
    except (UnknownVersionError, TopologyError, ImagesMissingError, CommandError, TimeoutError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
