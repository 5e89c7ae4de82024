"""`python -m conformance.rigs.vendor_check`: a vendor's certification run, rehearsed on kind.

On a kind cluster of the default version, a driver is installed by hand (`kubectl apply`, as a
vendor installs its own): by default Kubernetes' own DRA test driver (the kubelet plugin of
test/e2e/dra/test-driver, built from the published k8s.io/kubernetes module; a driver no one in
this project wrote), or `--driver example-gpu`, the fake driver's second personality. The suite
then certifies it four ways, the disruptive tests included, and the results are compared:

1. out of the cluster with a restricted ServiceAccount's kubeconfig (exactly the permissions
   the suite checks for): it must fail exactly the driver's known defects (KNOWN_DEFECTS; none
   for the fake driver), nothing else, and leave no object behind (listed before and after);
2. the same with one permission taken away: it must refuse to start, naming it, exit 2;
3. in the cluster, as the Job of `conformance.runner.incluster manifest`, results fetched with
   `conformance.runner.incluster fetch`;
4. in the cluster, driven by hydrophone with the suite image as its conformance image.
The per-requirement verdicts of 1, 3 and 4 must be the same. Writes reports/vendor-check/.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

from clusters import lifecycle
from clusters.images import BuiltImages
from clusters.paths import REPO_ROOT, REPORTS_DIR
from clusters.topology import ClusterSpec
from clusters.versions import default_version
from conformance.lib import profile as profiles
from conformance.lib.setup import driver_setup
from conformance.report import summary
from conformance.runner import incluster
from conformance.runner.errors import guarded
from conformance.runner.options import RunOptions
from conformance.runner.stopping import signals_interrupt
from kube.api import Api

PROG = "python -m conformance.rigs.vendor_check"  # its name in usage lines (a make target of a checkout)

# The drivers a rehearsal installs by hand, each described by the shipped profile of its name.
DRIVERS = ("k8s-test-driver", "example-gpu")
# What the suite must find wrong with each driver (requirement -> the driver's defect), shown with
# evidence in docs/drivers/: a rehearsal passes when the suite fails exactly these IDs, nothing
# else fails or errs, and every way agrees. Anything else is a suite bug or a new finding.
KNOWN_DEFECTS = {
    "k8s-test-driver": {
        "KUBELET-1": "unprepare after a restart of the driver leaves the claim's CDI spec file on the node: "
        "what it prepared is remembered in memory only (docs/drivers/k8s-test-driver.md)",
        "FAULT-1": "the same, after its pod was deleted while preparing (docs/drivers/k8s-test-driver.md)",
    },
    "example-gpu": {},
}
# How fixtures/drivers/k8s-test-driver/install.yaml is applied: the nodes it serves carry this label.
TEST_DRIVER_INSTALL = REPO_ROOT / "fixtures" / "drivers" / "k8s-test-driver" / "install.yaml"
TEST_DRIVER_NODES = "dra.example.com/test-driver"
# What the suite may create, listed before and after a run (kind, API version, namespaced).
LISTED = (
    ("Namespace", "v1", False),
    ("DeviceClass", "resource.k8s.io/v1", False),
    ("ResourceClaim", "resource.k8s.io/v1", True),
    ("ResourceQuota", "v1", True),
    ("Pod", "v1", True),
    ("Deployment", "apps/v1", True),
    ("Job", "batch/v1", True),
    ("StatefulSet", "apps/v1", True),
)


def log(message: str) -> None:
    print(f"[vendor-check] {message}", file=sys.stderr, flush=True)


def listing(api: Api) -> dict[str, list[str]]:
    return {
        kind: sorted(
            f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}".lstrip("/") for o in api.list(version, kind)
        )
        for kind, version, _ in LISTED
    }


def left_behind(
    before: dict[str, list[str]], after: dict[str, list[str]], driver_namespace: str | None
) -> dict[str, list[str]]:
    """What exists after the run and did not before, leaving out the driver's own namespace: the
    driver-update test rolls its DaemonSets on purpose, so their pods get new names."""

    def outside(name: str) -> bool:
        return not (driver_namespace and name.startswith(f"{driver_namespace}/"))

    new = {kind: sorted(n for n in set(after[kind]) - set(before.get(kind, [])) if outside(n)) for kind in after}
    return {kind: names for kind, names in new.items() if names}


def install_by_hand(cluster: lifecycle.Cluster, profile: profiles.Profile, images: BuiltImages) -> None:
    """The driver as its own instructions install it, the suite not involved."""
    if profile.name == "example-gpu":
        driver_setup.deploy_fake_driver(cluster.kubectl, profile, images.driver)
        return
    image = subprocess.run(
        ["bash", str(REPO_ROOT / "clusters/images/k8s-test-driver.sh")], check=True, stdout=subprocess.PIPE, text=True
    ).stdout.strip()
    cluster.load_images(image)
    cluster.kubectl("label", "nodes", "-l", "!node-role.kubernetes.io/control-plane", f"{TEST_DRIVER_NODES}=true")
    cluster.kubectl("apply", "-f", "-", input=TEST_DRIVER_INSTALL.read_text().replace("${IMAGE}", image))


def restricted_kubeconfig(
    cluster: lifecycle.Cluster, profile_path: Path, namespace: str, dest: Path, drop: str | None = None
) -> Path:
    """A kubeconfig of ServiceAccount `kep5004-conformance` in `namespace`, bound to the suite's
    ClusterRole for a disruptive run (without the rule for resource `drop`, to show a missing
    permission refused)."""
    objs = [
        o
        for o in incluster.manifest(profile_path, "unused", namespace, disruptive=True)
        if o["kind"] not in ("Job", "ConfigMap")
    ]
    for o in objs:
        if o["kind"] == "ClusterRole" and drop:
            o["rules"] = [r for r in o["rules"] if drop not in r.get("resources", [])]
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objs))
    token = cluster.kubectl("create", "token", incluster.NAME, "-n", namespace, "--duration=3h").strip()
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    admin["users"] = [{"name": "restricted", "user": {"token": token}}]
    admin["contexts"] = [
        {"name": "restricted", "context": {"cluster": admin["clusters"][0]["name"], "user": "restricted"}}
    ]
    admin["current-context"] = "restricted"
    dest.write_text(yaml.safe_dump(admin))
    return dest


def run_suite(kubeconfig: Path, profile_path: Path, out: Path) -> tuple[int, str]:
    options = RunOptions(kubeconfig=kubeconfig, profile=str(profile_path), disruptive=True, out=out)
    cmd = [sys.executable, "-m", "conformance.runner", *options.to_argv()]
    log(" ".join(cmd[1:]))
    done = subprocess.run(cmd, cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(done.stderr[-3000:])
    return done.returncode, done.stderr


def compared(outside: dict[str, str], code: int, verdicts: dict[str, str]) -> dict[str, object]:
    """Another way's exit code and verdicts against those of the run from outside the cluster."""
    return {
        "exit": code,
        "same verdicts": verdicts == outside,
        "differences": {
            k: (outside.get(k), verdicts.get(k))
            for k in set(verdicts) | set(outside)
            if verdicts.get(k) != outside.get(k)
        },
    }


def verdicts_in_log(text: str) -> dict[str, str]:
    line = next((row for row in text.splitlines() if row.startswith(incluster.VERDICTS_PREFIX)), None)
    return json.loads(line.split(" ", 1)[1]) if line else {}


def in_cluster_job(cluster: lifecycle.Cluster, profile_path: Path, image: str, out: Path) -> tuple[int, dict[str, str]]:
    manifest = incluster.manifest(profile_path, image, disruptive=True)
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(manifest))
    tarball = out / incluster.TARBALL
    code = incluster.fetch(Api(cluster.kubeconfig), incluster.NAME, tarball, timeout=3600)
    with tarfile.open(tarball) as tar:
        tar.extractall(out / "job", filter="data")
    cluster.kubectl("delete", "namespace", incluster.NAME, "--wait=true")
    cluster.kubectl("delete", "clusterrole,clusterrolebinding", "-l", f"app.kubernetes.io/name={incluster.NAME}")
    return code, summary.verdict_of_each(summary.read(out / "job" / "existing"))


def hydrophone_run(
    cluster: lifecycle.Cluster, profile: profiles.Profile, image: str, out: Path
) -> tuple[int, dict[str, str]]:
    binary = subprocess.run(
        ["bash", str(REPO_ROOT / "clusters/toolchain/build-hydrophone.sh")],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    ).stdout.strip()
    dest = out / "hydrophone"
    dest.mkdir(parents=True, exist_ok=True)
    # The output container only needs sh, cat and `sleep infinity`: the suite image has them.
    cmd = [
        binary,
        f"--kubeconfig={cluster.kubeconfig}",
        f"--conformance-image={image}",
        f"--busybox-image={image}",
        f"--output-dir={dest}",
        f"--extra-args=--profile={profile.name},--disruptive=true",
        "--disable-progress-status",
    ]
    log(" ".join(cmd))
    with (dest / "hydrophone.log").open("w") as output:
        code = subprocess.run(cmd, stdout=output, stderr=subprocess.STDOUT).returncode
    return code, verdicts_in_log((dest / "e2e.log").read_text() if (dest / "e2e.log").exists() else "")


def against_known_defects(verdicts: dict[str, str], defects: dict[str, str]) -> dict[str, list[str]]:
    """How the verdicts differ from the driver's known defects (all lists empty: as expected)."""
    failed = {rid for rid, v in verdicts.items() if v == "failed"}
    return {
        "failed, not a known defect": sorted(failed - set(defects)),
        "known defect not found": sorted(set(defects) - failed),
        "error": sorted(rid for rid, v in verdicts.items() if v == "error"),
    }


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    p = argparse.ArgumentParser(
        prog=prog,
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--driver", choices=DRIVERS, default=DRIVERS[0], help="the driver installed by hand (default: %(default)s)"
    )
    p.add_argument("--keep", action="store_true", help="keep the kind cluster")
    p.add_argument("--out", type=Path, default=REPORTS_DIR / "vendor-check")
    args = p.parse_args(argv)
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    images = BuiltImages.load()
    profile_path = profiles.PROFILES_DIR / f"{args.driver}.yaml"
    profile = profiles.load(str(profile_path))
    spec = ClusterSpec(
        "dra", default_version(), purpose="vendor"
    )  # its own name: a run may use the default version beside it
    with signals_interrupt(), lifecycle.cluster(spec, images, keep=args.keep) as cluster:
        results: dict[str, object] = {}
        try:
            cluster.load_images(images.suite)
            log(f"installing the driver by hand, described by profile {profile.name}")
            install_by_hand(cluster, profile, images)
            admin = Api(cluster.kubeconfig)
            driver_setup.wait_published(admin, profile)

            refused_cfg = restricted_kubeconfig(
                cluster, profile_path, "kep5004-refused", args.out / "refused.kubeconfig", drop="deviceclasses"
            )
            code, err = run_suite(refused_cfg, profile_path, args.out / "refused")
            results["missing permission"] = {
                "exit": code,
                "message": next((row for row in err.splitlines() if "lack" in row), err.strip().splitlines()[-1:]),
            }
            cluster.kubectl("delete", "namespace", "kep5004-refused", "--wait=true")
            cluster.kubectl("delete", "clusterrole,clusterrolebinding", f"{incluster.NAME}:kep5004-refused")

            restricted = restricted_kubeconfig(
                cluster, profile_path, "kep5004-restricted", args.out / "restricted.kubeconfig"
            )
            before = listing(admin)
            code, _ = run_suite(restricted, profile_path, args.out / "out-of-cluster")
            after = listing(admin)
            leftovers = left_behind(before, after, profile.driver_namespace)
            outside = summary.verdict_of_each(summary.read(args.out / "out-of-cluster" / "existing"))
            results["out of cluster (restricted SA)"] = {
                "exit": code,
                "left behind": leftovers,
                "before": before,
                "after": after,
            }
            results["against known defects"] = against_known_defects(outside, KNOWN_DEFECTS[args.driver])
            cluster.kubectl("delete", "namespace", "kep5004-restricted", "--wait=true")
            cluster.kubectl("delete", "clusterrole,clusterrolebinding", f"{incluster.NAME}:kep5004-restricted")

            results["in-cluster Job"] = compared(
                outside, *in_cluster_job(cluster, profile_path, images.suite, args.out)
            )
            results["hydrophone"] = compared(outside, *hydrophone_run(cluster, profile, images.suite, args.out))
            results["verdict counts"] = {v: list(outside.values()).count(v) for v in sorted(set(outside.values()))}
        finally:
            (args.out / "results.json").write_text(json.dumps(results, indent=1))
    ok = (
        results.get("missing permission", {}).get("exit") == 2
        # a run that found a defect exits 1
        and results.get("out of cluster (restricted SA)", {}).get("exit") == (1 if KNOWN_DEFECTS[args.driver] else 0)
        and not any(results.get("against known defects", {"missing": [""]}).values())
        and not results["out of cluster (restricted SA)"]["left behind"]
        and results.get("in-cluster Job", {}).get("same verdicts")
        and results.get("hydrophone", {}).get("same verdicts")
    )
    shown = {
        k: {f: v for f, v in r.items() if f not in ("before", "after")} if isinstance(r, dict) else r
        for k, r in results.items()
    }
    print(json.dumps(shown, indent=1))
    log(f"{'PASSED' if ok else 'FAILED'}; details in {args.out / 'results.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], PROG))
