"""What one conformance run is asked to do: `RunOptions`, from the command line (`parse`) or built
by a caller (the rigs, in-cluster), and back to a command line for a child run (`to_argv`)."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusters.paths import REPORTS_DIR
from clusters.shell import CommandError
from conformance.lib import profile as profiles
from conformance.lib.setup import driver_setup


class OptionsError(ValueError):
    """Options that contradict each other or name nothing: one line for the user."""


@dataclass(frozen=True)
class RunOptions:
    """Field names are the command line's options (--no-mixed is `no_mixed`). Paths are made
    absolute when the options are made: the suite's pytest runs in another directory."""

    profile: str | None = None  # comma-separated names or paths; required with kubeconfig
    install_fake_driver: bool = False
    kubeconfig: Path | None = None  # existing-cluster mode; None: kind clusters
    k8s_versions: tuple[str, ...] = ()  # kind mode; () = every pinned version
    feature_gates: str = ""
    parallel: int = 2
    jobs: int = 1
    max_clusters: int | None = None
    create_at_once: int | None = None
    one_cluster_at_a_time: bool = False
    no_serial: bool = False
    disruptive: bool = False  # existing-cluster mode only: always on for kind clusters, the suite's own
    no_mixed: bool = False
    no_faults: bool = False
    no_gate_cycle: bool = False
    no_upgrade: bool = False
    no_skew: bool = False
    timeout_scale: float = 1.0
    k: str = ""
    keep: bool = False
    keep_namespaces: bool = False
    out: Path = field(default=REPORTS_DIR)

    def __post_init__(self) -> None:
        for name in ("jobs", "max_clusters", "create_at_once", "parallel"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise OptionsError(f"--{name.replace('_', '-')} must be at least 1")
        if self.timeout_scale <= 0:
            raise OptionsError("--timeout-scale must be above 0")
        if self.kubeconfig and not self.profile:
            raise OptionsError("--kubeconfig needs --profile: the suite must be told which driver it certifies")
        object.__setattr__(self, "out", Path(self.out).absolute())
        if self.kubeconfig is not None:
            object.__setattr__(self, "kubeconfig", Path(self.kubeconfig).absolute())
        if self.kubeconfig is None:
            object.__setattr__(self, "disruptive", True)

    def but(self, **changes: Any) -> RunOptions:
        """A copy with some options changed (validated again, as any RunOptions)."""
        return dataclasses.replace(self, **changes)

    def to_argv(self) -> list[str]:
        """The command line that parses back to these options."""
        argv: list[str] = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            flag = ("-" if len(f.name) == 1 else "--") + f.name.replace("_", "-")
            if value == f.default:
                continue
            elif isinstance(value, bool):
                argv.append(flag)
            elif isinstance(value, tuple):
                argv += [flag, ",".join(value)]
            else:
                argv += [flag, str(value)]
        return argv


def parser(prog: str, description: str | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--profile",
        help="driver profile name (fixtures/profiles) or path; required with --kubeconfig. "
        "kind mode: comma-separated profiles of the fake driver, run one after the "
        "other on each cluster (default: fake-gpu)",
    )
    p.add_argument(
        "--install-fake-driver",
        action="store_true",
        help="with --kubeconfig: install the project's fake driver (a deploy: fake-driver profile) into "
        "that cluster to try the suite out; removed again at the end unless --keep",
    )
    p.add_argument("--kubeconfig", type=Path, help="run against this existing cluster; no kind cluster is made")
    p.add_argument(
        "--k8s-versions",
        default=(),
        type=lambda text: tuple(v.strip() for v in text.split(",") if v.strip()),
        help="kind mode: comma-separated versions (default: all pinned)",
    )
    p.add_argument("--feature-gates", default="", help="kind mode: gate overrides, e.g. DRAExtendedResource=false")
    p.add_argument("--parallel", type=int, default=2, help="xdist workers for the parallel stage (1 = none)")
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="kind mode: run this many versions at once, each in its own process and clusters",
    )
    p.add_argument(
        "--max-clusters",
        type=int,
        default=None,
        help="kind mode: kind clusters alive on this host at once, counting anyone's (default: measured "
        "from the host's cores and memory, printed at the start)",
    )
    p.add_argument(
        "--create-at-once",
        type=int,
        default=None,
        help="kind mode: clusters created at the same time (default: one per four cores)",
    )
    p.add_argument(
        "--one-cluster-at-a-time",
        action="store_true",
        help="kind mode: a version's clusters one after the other, not the in-place stages' cluster "
        "alongside the others (less memory and CPU at once, a longer run)",
    )
    p.add_argument("--no-serial", action="store_true", help="skip the serial stage")
    # Also --disruptive=true: hydrophone hands its --extra-args on only in --key=value form.
    p.add_argument(
        "--disruptive",
        nargs="?",
        const=True,
        default=False,
        type=_boolean,
        metavar="true|false",
        help="with --kubeconfig: also run the disruptive tests in the serial stage (the driver's pod on a "
        "node deleted while preparing, a node drained of the suite's pods and uncordoned); always "
        "on kind",
    )
    p.add_argument("--no-mixed", action="store_true", help="skip the mixed device-plugin/DRA stage")
    p.add_argument(
        "--no-faults",
        action="store_true",
        help="skip the fault stage (components and nodes killed and restarted under load)",
    )
    p.add_argument("--no-gate-cycle", action="store_true", help="skip the feature gate ON->OFF->ON stage")
    p.add_argument("--no-upgrade", action="store_true", help="skip the Kubernetes upgrade/downgrade stage")
    p.add_argument(
        "--no-skew",
        action="store_true",
        help="skip the main stages on a cluster whose kubelets are one pinned minor older (version skew)",
    )
    p.add_argument(
        "--timeout-scale",
        type=float,
        default=1.0,
        help="multiply every wait deadline: 2 for a slow cluster, 0.25 to fail fast on a broken one",
    )
    p.add_argument("-k", default="", help="pytest -k expression to select tests")
    p.add_argument("--keep", action="store_true", help="keep the kind clusters for debugging or reuse")
    p.add_argument(
        "--keep-namespaces",
        action="store_true",
        help="keep each test's namespace (its pods keep their devices: later tests may starve)",
    )
    p.add_argument("--out", type=Path, default=REPORTS_DIR, help="report directory")
    return p


def parse(argv: list[str], prog: str, description: str | None = None) -> RunOptions:
    """The options of a command line; a mistake ends in argparse's usage error (exit 2)."""
    p = parser(prog, description)
    args = p.parse_args(argv)
    try:
        return RunOptions(**vars(args))
    except OptionsError as err:
        p.error(str(err))
        raise  # p.error exits; this satisfies the type checker


def _boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text.lower() == "true"


def load_profiles(text: str) -> list[tuple[str, profiles.Profile]]:
    """Comma-separated profile names or paths -> (what the suite's pytest gets, profile), each
    loaded (every problem of each named at once); paths are made absolute, as pytest runs elsewhere."""
    args = [str(Path(a).absolute()) if Path(a).suffix else a for a in (t.strip() for t in text.split(",")) if a]
    if not args:
        raise CommandError("--profile names no profile")
    problems, chosen = [], []
    for arg in args:
        try:
            profile = profiles.load(arg)
        except profiles.ProfileError as err:
            problems.append(str(err))
            continue
        problems += [f"{profile.source}: {p}" for p in driver_setup.fake_driver_problems(profile)]
        chosen.append((arg, profile))
    if problems:
        raise profiles.ProfileError("\n".join(problems))
    names = [p.name for _, p in chosen]
    if len(set(names)) != len(names):
        raise CommandError(f"--profile names a profile twice: {', '.join(names)}")
    return chosen
