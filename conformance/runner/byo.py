"""`python -m conformance.runner.byo DIR`: bring your own workloads.

Applies every manifest in DIR to the cluster unmodified (only the namespace is set, one
fresh namespace per file), and reports per pod whether it was served through DRA, which
special claim and devices it got, and whether each container's probe saw exactly them.
Exit status 0 when every workload was served and every probe matched.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from conformance.lib.objects.special_claim import allocated_devices, special_claim
from conformance.lib.objects.workloads import apply_manifest, manifest_problems, pods_of, probe_container
from conformance.lib.oracles.devices import device_ids, expected_per_container, merge, user_claim_devices
from conformance.lib.profile import Profile, ProfileError, load
from conformance.runner.errors import guarded, user_error
from kube.api import Api, Obj
from kube.waits import WaitTimeout, wait_for

PROG = "python -m conformance.runner.byo"  # its name in usage lines from a checkout (the installed tool passes its own)


class ContainerResult(TypedDict):
    """The device ids a container should see, those its probe showed, and whether they are the same."""

    expected: list[str]
    seen: list[str]
    ok: bool


@dataclass
class PodResult:
    pod: str
    phase: str
    via_dra: bool
    claim: str | None = None
    devices: list[str] = field(default_factory=list)
    containers: dict[str, ContainerResult] = field(default_factory=dict)  # by container name

    @property
    def ok(self) -> bool:
        return self.phase in ("Running", "Succeeded") and all(c["ok"] for c in self.containers.values())


def examine(api: Api, profile: Profile, pod: Obj, ids: dict[tuple[str, str], str]) -> PodResult:
    result = PodResult(pod["metadata"]["name"], (pod.get("status") or {}).get("phase", ""), False)
    claim = special_claim(api, pod)
    expected: dict[str, list[str]] = {}
    if claim is not None:
        result.via_dra, result.claim = True, claim["metadata"]["name"]
        result.devices = [ids.get(d, f"{d[0]}/{d[1]}") for d in allocated_devices(claim)]
        expected = expected_per_container(pod, claim, ids, profile.probe)
    expected = merge(expected, user_claim_devices(api, profile, pod, ids))
    spec = pod["spec"]
    for c in [*(spec.get("initContainers") or []), *spec["containers"]]:
        try:
            seen = probe_container(api, profile, pod, c["name"]).device_ids
        except Exception as err:  # a container that cannot be probed is reported, not fatal
            seen = [f"probe failed: {err}"]
        want = expected.get(c["name"], [])
        result.containers[c["name"]] = {"expected": want, "seen": seen, "ok": seen == want}
    return result


def run_file(api: Api, profile: Profile, path: Path, timeout: float, keep: bool) -> list[PodResult]:
    ns = f"byo-{uuid.uuid4().hex[:8]}"
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    try:
        objs = apply_manifest(api, path, ns)
        try:
            wait_for(
                lambda: (
                    (ps := pods_of(api, ns, objs))
                    and all((p.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed") for p in ps)
                ),
                timeout=timeout,
                what=f"the pods of {path.name} to run",
                interval=2,
            )
        except WaitTimeout as err:
            print(f"  {path.name}: {err}", file=sys.stderr)
        ids = device_ids(api, profile)
        return [examine(api, profile, p, ids) for p in pods_of(api, ns, objs)]
    finally:
        if not keep:
            api.delete("v1", "Namespace", ns)


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("directory", type=Path)
    ap.add_argument("--kubeconfig", type=Path, default=os.environ.get("KUBECONFIG"))
    ap.add_argument("--profile", default="fake-gpu")
    ap.add_argument("--timeout", type=float, default=180)
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    files = sorted(p for p in args.directory.glob("*.y*ml")) if args.directory.is_dir() else []
    if not files:
        print(f"error: no .yaml manifests in {args.directory}", file=sys.stderr)
        return 2
    if not args.kubeconfig:
        print("error: no cluster: pass --kubeconfig or set KUBECONFIG", file=sys.stderr)
        return 2
    problems = [problem for path in files for problem in manifest_problems(path)]
    try:
        profile = load(args.profile)
    except ProfileError as err:
        problems.append(str(err))
    if problems:  # all of them at once, and nothing created
        print("\n".join(f"error: {problem}" for problem in problems), file=sys.stderr)
        return 2
    try:  # no cluster to talk to: say why in a line, as the installed tool does, not in a traceback
        api = Api(Path(args.kubeconfig))
        api.server_version()
    except Exception as err:
        message = user_error(err, str(args.kubeconfig))
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2
    report: dict[str, list[dict[str, Any]]] = {}
    ok = True
    for path in files:
        results = run_file(api, profile, path, args.timeout, args.keep)
        report[path.name] = [asdict(r) | {"ok": r.ok} for r in results]
        ok &= bool(results) and all(r.ok for r in results)
        for r in results or [PodResult("(no pod)", "", False)]:
            how = f"DRA claim {r.claim} devices {r.devices}" if r.via_dra else "not via DRA"
            print(f"{'OK  ' if r.ok else 'FAIL'} {path.name}: pod {r.pod} {r.phase or '-'}; {how}")
            for name, c in r.containers.items():
                print(f"       {name}: saw {c['seen']}" + ("" if c["ok"] else f", expected {c['expected']}"))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], PROG))
