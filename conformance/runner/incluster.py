"""`python -m conformance.runner.incluster`: the suite as a workload of the cluster it certifies.

    manifest --profile P [--image IMG] [--namespace NS]  Namespace, ServiceAccount, ClusterRole and
                                                         binding (exactly the permissions the suite
                                                         checks for), the profile as a ConfigMap, Job
    sonobuoy-plugin --profile P [--image IMG]            the same image as a sonobuoy plugin
    fetch [--namespace NS] [--kubeconfig F] [--out F]    wait for the Job, copy its results tarball out
    entrypoint                                           what the image runs (the Job, hydrophone, sonobuoy)
    hold                                                 the Job's second container: keeps the results
                                                         until `fetch` took them

One image serves three drivers, so its entrypoint follows the contract of the Kubernetes
conformance image as hydrophone and sonobuoy drive it: results go to $SONOBUOY_RESULTS_DIR, else
$RESULTS_DIR, else /tmp/results: e2e.log (everything the run printed, opening with the
"Will run N of M specs" line hydrophone's progress display expects), junit_01.xml (the stages'
JUnit merged), kep5004-results.tar.gz (the whole report: summaries, JUnit, Allure, diagnostics)
and `done` holding the tarball's path; stdout ends with every requirement's verdict on one
`KEP5004-VERDICTS {json}` line and the "Ginkgo ran 1 suite" line by which hydrophone knows a run
ended. E2E_FOCUS (other than the conformance default) selects tests as
pytest -k does, E2E_SKIP deselects, E2E_EXTRA_ARGS are passed to `conformance.runner` (e.g.
--profile=example-gpu). Credentials are the pod's ServiceAccount.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shlex
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any, Literal

import yaml

from clusters.paths import REPO_ROOT
from clusters.shell import CommandError
from conformance.lib import profile as profiles
from conformance.lib.setup import permissions
from conformance.report import junit, summary
from conformance.runner import stages
from conformance.runner.errors import guarded
from conformance.runner.options import RunOptions, parse
from kube.api import Api, Obj
from kube.waits import wait_for

PROG = "python -m conformance.runner.incluster"  # its name in usage lines from a checkout (the installed tool passes its own)

NAME = "kep5004-conformance"
PROFILE_MOUNT = Path("/etc/kep5004")
RESULTS_MOUNT = Path("/tmp/results")
TARBALL = "kep5004-results.tar.gz"
SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
NOBODY = 65534  # what hydrophone runs the conformance image as; the Job does the same
CONFORMANCE_FOCUS = r"\[Conformance\]"  # hydrophone's default focus: "everything" here
VERDICTS_PREFIX = "KEP5004-VERDICTS"  # the log line with every requirement's verdict as JSON


def log(message: str) -> None:
    print(f"[incluster] {message}", file=sys.stderr, flush=True)


# --- manifests -----------------------------------------------------------------------------


def manifest(profile_path: Path, image: str, namespace: str = NAME, disruptive: bool = False) -> list[Obj]:
    """Everything `kubectl apply -f -` needs to run the suite in the cluster against `profile_path`;
    `disruptive`: the disruptive tests too, and the permissions they need."""
    profile = profiles.load(str(profile_path))  # refuse a bad profile before anything is applied
    meta = {"name": NAME, "namespace": namespace, "labels": {"app.kubernetes.io/name": NAME}}
    security = {
        "runAsUser": NOBODY,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    mounts = [{"name": "results", "mountPath": str(RESULTS_MOUNT)}]
    suite = {
        "name": "suite",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "securityContext": security,
        "env": [
            {"name": "KEP5004_PROFILE", "value": str(PROFILE_MOUNT / "profile.yaml")},
            *([{"name": "E2E_EXTRA_ARGS", "value": "--disruptive"}] if disruptive else []),
        ],
        "volumeMounts": [*mounts, {"name": "profile", "mountPath": str(PROFILE_MOUNT), "readOnly": True}],
    }
    holder = {
        "name": "results",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "securityContext": security,
        "command": ["python3", "-m", "conformance.runner.incluster", "hold"],
        "volumeMounts": mounts,
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": meta["labels"]}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{NAME}:{namespace}", "labels": meta["labels"]},
            "rules": permissions.cluster_role_rules(permissions.granted(profile, disruptive)),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{NAME}:{namespace}", "labels": meta["labels"]},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{NAME}:{namespace}"},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {**meta, "name": f"{NAME}-profile"},
            "data": {"profile.yaml": profile.source.read_text()},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": meta,
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "metadata": {"labels": meta["labels"]},
                    "spec": {
                        "serviceAccountName": NAME,
                        "restartPolicy": "Never",
                        "containers": [suite, holder],
                        "volumes": [
                            {"name": "results", "emptyDir": {}},
                            {"name": "profile", "configMap": {"name": f"{NAME}-profile"}},
                        ],
                    },
                },
            },
        },
    ]


SONOBUOY_CONFIG_DIR = Path("/tmp/sonobuoy/config")  # where sonobuoy mounts a plugin's config-map


def sonobuoy_plugin(profile_path: Path, image: str) -> dict[str, Any]:
    """A sonobuoy plugin definition running the same image (its fields: docs/certification.md)."""
    profile = profiles.load(str(profile_path))
    return {
        "sonobuoy-config": {
            "driver": "Job",
            "plugin-name": NAME,
            "result-format": "junit",
            "result-files": ["junit_01.xml"],
            "description": f"KEP-5004 conformance of DRA driver {profile.driver} (profile {profile.name})",
        },
        "config-map": {"profile.yaml": profile.source.read_text()},
        "spec": {
            "name": "plugin",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "env": [{"name": "KEP5004_PROFILE", "value": str(SONOBUOY_CONFIG_DIR / "profile.yaml")}],
        },
    }


# --- what the image runs -------------------------------------------------------------------


def results_dir(env: dict[str, str]) -> Path:
    return Path(env.get("SONOBUOY_RESULTS_DIR") or env.get("RESULTS_DIR") or RESULTS_MOUNT)


def service_account_kubeconfig(env: dict[str, str], dest: Path) -> Path:
    """A kubeconfig for the pod's own ServiceAccount (the token file is re-read as it rotates)."""
    host, port = env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "in-cluster",
        "clusters": [
            {"name": "in-cluster", "cluster": {"server": server, "certificate-authority": str(SA_DIR / "ca.crt")}}
        ],
        "users": [{"name": "sa", "user": {"tokenFile": str(SA_DIR / "token")}}],
        "contexts": [{"name": "in-cluster", "context": {"cluster": "in-cluster", "user": "sa"}}],
    }
    dest.write_text(yaml.safe_dump(config))
    return dest


def selection(env: dict[str, str]) -> str:
    """E2E_FOCUS / E2E_SKIP as one pytest -k expression ("" = every test)."""
    focus, skip = env.get("E2E_FOCUS", "").strip(), env.get("E2E_SKIP", "").strip()
    parts = [f"({focus})"] if focus and focus != CONFORMANCE_FOCUS else []
    parts += [f"not ({skip})"] if skip else []
    return " and ".join(parts)


def run_options(env: dict[str, str], kubeconfig: Path, out: Path) -> RunOptions:
    """The run the Job makes: its ServiceAccount's kubeconfig, the mounted profile (unless
    E2E_EXTRA_ARGS names one), the E2E_FOCUS/E2E_SKIP selection; E2E_EXTRA_ARGS (the runner's
    options, as hydrophone hands them on) win over the rest."""
    args = ["--kubeconfig", str(kubeconfig), "--out", str(out)]
    args += ["--profile", env.get("KEP5004_PROFILE") or str(PROFILE_MOUNT / "profile.yaml")]
    if expression := selection(env):
        args += ["-k", expression]
    return parse(args + shlex.split(env.get("E2E_EXTRA_ARGS", "")), "E2E_EXTRA_ARGS")


def count_tests(options: RunOptions) -> int:
    """How many tests of the main stages the run will select, for the "Will run N of M specs" line
    (collection only; the mixed stage's tests, run where device-plugin nodes exist, are not counted)."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--profile={options.profile}",
        *stages.MAIN_PATHS,
        *(["-k", options.k] if options.k else []),
    ]
    output = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True).stdout
    found = re.search(r"(\d+)(?: tests?)? (?:selected|collected)", output)
    return int(found.group(1)) if found else 0


def entrypoint(env: dict[str, str] | None = None) -> int:
    env = dict(os.environ if env is None else env)
    results = results_dir(env)
    results.mkdir(parents=True, exist_ok=True)
    work = Path(env.get("KEP5004_CACHE", "/tmp/kep5004-cache"))
    work.mkdir(parents=True, exist_ok=True)
    out = work / "reports"
    options = run_options(env, service_account_kubeconfig(env, work / "kubeconfig"), out)
    started = time.monotonic()
    total = count_tests(options)
    with (results / "e2e.log").open("w") as e2e:
        e2e.write(f"Will run {total} of {total} specs\n")
        e2e.flush()
        cmd = [sys.executable, "-m", "conformance.runner", *options.to_argv()]
        print(f"[incluster] {shlex.join(cmd)}", flush=True)
        with subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as run:
            assert run.stdout is not None  # stdout=PIPE
            for line in run.stdout:
                sys.stdout.write(line)
                e2e.write(line)
                e2e.flush()
        code = run.returncode
    report = out / "existing"
    # The closing lines go into e2e.log too (hydrophone brings back that file, not the container
    # log), before the tarball and `done`, which runners take as "the results are complete".
    closing = []
    if (report / summary.FILE).is_file():  # every verdict, for runners that bring back only the log (hydrophone)
        verdicts = summary.verdict_of_each(summary.read(report))
        closing.append(f"{VERDICTS_PREFIX} {json.dumps(verdicts, sort_keys=True)}")
    closing += [
        f"Ginkgo ran 1 suite in {time.monotonic() - started:.1f}s",
        f"Test Suite {'Passed' if code == 0 else 'Failed'} (conformance.runner exit {code})",
    ]
    with (results / "e2e.log").open("a") as e2e:
        e2e.write("\n".join(closing) + "\n")
    junit.merge(report, results / "junit_01.xml")  # without a report (a bad profile), the log says why
    tarball = results / TARBALL
    with tarfile.open(tarball, "w:gz") as tar:
        for name in ("e2e.log", "junit_01.xml"):  # where runners of the conformance image look
            tar.add(results / name, arcname=name)
        if report.is_dir():
            tar.add(report, arcname="existing")
    (results / "done").write_text(str(tarball))
    # Last: hydrophone stops following the log, and fetches, once it sees the "Ginkgo ran" line.
    print("\n".join(closing), flush=True)
    return code


def hold(seconds: float = 3600) -> int:
    """Keep the results until they were fetched (or `seconds` after they were written)."""
    results = results_dir(dict(os.environ))
    while not (results / "done").exists():
        time.sleep(2)
    deadline = time.monotonic() + seconds
    while not (results / "fetched").exists() and time.monotonic() < deadline:
        time.sleep(2)
    return 0


# --- getting the results out ---------------------------------------------------------------


def fetch(api: Api, namespace: str, dest: Path, timeout: float, prog: str = PROG) -> int:
    """Wait until the Job's suite wrote its results, copy the tarball to `dest`, let the Job end;
    returns the suite's exit code."""

    def pod() -> Obj | None:
        found = api.list("v1", "Pod", namespace, label_selector=f"job-name={NAME}")
        return found[0] if found else None

    def done() -> str | Literal[False]:
        p = pod()
        if p is None:
            return False
        states = {s["name"]: s.get("state") or {} for s in (p.get("status") or {}).get("containerStatuses") or []}
        if "terminated" in states.get("results", {}):
            # The container that holds the results ended: they can never come (e.g. the image
            # cannot start the suite). Say why now rather than wait out the timeout.
            logs = {c: api.logs(namespace, p["metadata"]["name"], c)[-1500:] for c in ("suite", "results")}
            raise CommandError(
                f"job {namespace}/{NAME} ended without results: containers {states}; last output: {logs}"
            )
        running = "running" in states.get("results", {})
        return (
            running
            and api.exec(
                namespace,
                p["metadata"]["name"],
                ["sh", "-c", f"cat {RESULTS_MOUNT}/done 2>/dev/null || true"],
                "results",
            ).strip()
        )

    if api.get("batch/v1", "Job", NAME, namespace) is None:
        raise CommandError(f"no Job {namespace}/{NAME}: apply `{prog} manifest` first (or pass --namespace)")
    log(f"waiting for the suite in namespace {namespace} (up to {timeout:.0f} s)")
    tarball = wait_for(
        done,
        timeout=timeout,
        interval=10,
        what=f"job {namespace}/{NAME} to write its results",
        describe=lambda: str(((pod() or {}).get("status") or {}).get("containerStatuses")),
    )
    found = pod()
    assert found is not None, "done() found it"
    name = found["metadata"]["name"]
    encoded = api.exec(
        namespace,
        name,
        [
            "python3",
            "-c",
            f"import base64,sys; sys.stdout.write(base64.b64encode(open({tarball!r},'rb').read()).decode())",
        ],
        "results",
    )
    dest.write_bytes(base64.b64decode(encoded))
    api.exec(namespace, name, ["touch", f"{RESULTS_MOUNT}/fetched"], "results")
    with tarfile.open(dest) as tar:
        names = tar.getnames()
    log(f"results: {dest} ({dest.stat().st_size} bytes, {len(names)} entries)")

    def suite_exit() -> tuple[int] | Literal[False]:
        """(its exit code,) once the suite container ended: a tuple, so that exit code 0 is truthy."""
        state = next(
            (
                s.get("state") or {}
                for s in (pod() or {}).get("status", {}).get("containerStatuses") or []
                if s["name"] == "suite"
            ),
            {},
        )
        code: int | None = state.get("terminated", {}).get("exitCode")
        return code is not None and (code,)

    return wait_for(
        suite_exit,
        timeout=60,
        interval=2,
        what="the suite container's exit code",
    )[0]


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    p = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = p.add_subparsers(dest="command", required=True)
    m = commands.add_parser("manifest", help="print the objects that run the suite in a cluster")
    m.add_argument("--profile", required=True, type=Path, help="the driver's profile (copied into a ConfigMap)")
    m.add_argument("--image", default="", help="the suite image (default: the one `make images` built)")
    m.add_argument("--namespace", default=NAME)
    m.add_argument(
        "--disruptive",
        action="store_true",
        help="also run the disruptive tests, with the permissions they need (eviction, cordon)",
    )
    f = commands.add_parser("fetch", help="wait for the Job and copy its results tarball out")
    f.add_argument("--namespace", default=NAME)
    f.add_argument("--kubeconfig", type=Path, default=None)
    f.add_argument("--out", type=Path, default=Path(TARBALL))
    f.add_argument("--timeout", type=float, default=3600)
    sp = commands.add_parser("sonobuoy-plugin", help="print a sonobuoy plugin definition running the suite image")
    sp.add_argument("--profile", required=True, type=Path)
    sp.add_argument("--image", default="")
    commands.add_parser("entrypoint", help="run the suite inside the cluster (the image's entrypoint)")
    commands.add_parser("hold", help="keep the results until fetched (the Job's second container)")
    args = p.parse_args(argv)
    if args.command in ("manifest", "sonobuoy-plugin"):
        path = args.profile if args.profile.suffix else profiles.PROFILES_DIR / f"{args.profile}.yaml"
        image = args.image or suite_image()
        docs = (
            manifest(path, image, args.namespace, args.disruptive)
            if args.command == "manifest"
            else [sonobuoy_plugin(path, image)]
        )
        sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False))
        return 0
    if args.command == "fetch":
        try:
            return fetch(Api(args.kubeconfig), args.namespace, args.out, args.timeout, prog)
        except CommandError as err:
            log(f"error: {err}")
            return 2
    return entrypoint() if args.command == "entrypoint" else hold()


def suite_image() -> str:
    from clusters.images import BuiltImages

    return BuiltImages.load().suite


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], PROG))
