"""`python -m conformance.vendor_check`: a vendor's certification run, rehearsed on kind.

On a kind cluster of the default version, the fake driver is installed by hand as a profile
describes it (`kubectl apply`, as a vendor installs its driver), then the suite certifies it
four ways and the results are compared:

1. out of the cluster with a restricted ServiceAccount's kubeconfig (exactly the permissions
   the suite checks for): it must pass and leave no object behind (listed before and after);
2. the same with one permission taken away: it must refuse to start, naming it, exit 2;
3. in the cluster, as the Job of `conformance.incluster manifest`, results fetched with
   `conformance.incluster fetch`;
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
from conformance.cli import guarded
from conformance import incluster
from conformance.invocation import prog
from conformance.lib import driver_setup, profile as profiles
from kube.api import Api

# The driver certified: the fake driver's second personality, installed by hand.
PROFILE_PATH = profiles.PROFILES_DIR / "example-gpu.yaml"
# What the suite may create, listed before and after a run (kind, API version, namespaced).
LISTED = (("Namespace", "v1", False), ("DeviceClass", "resource.k8s.io/v1", False),
          ("ResourceClaim", "resource.k8s.io/v1", True), ("ResourceQuota", "v1", True), ("Pod", "v1", True),
          ("Deployment", "apps/v1", True), ("Job", "batch/v1", True), ("StatefulSet", "apps/v1", True))


def log(message: str) -> None:
    print(f"[vendor-check] {message}", file=sys.stderr, flush=True)


def listing(api: Api) -> dict[str, list[str]]:
    return {kind: sorted(f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}".lstrip("/")
                         for o in api.list(version, kind)) for kind, version, _ in LISTED}


def left_behind(before: dict[str, list[str]], after: dict[str, list[str]], driver_namespace: str | None
                ) -> dict[str, list[str]]:
    """What exists after the run and did not before, leaving out the driver's own namespace: the
    driver-update test rolls its DaemonSets on purpose, so their pods get new names."""
    def outside(name: str) -> bool:
        return not (driver_namespace and name.startswith(f"{driver_namespace}/"))
    new = {kind: sorted(n for n in set(after[kind]) - set(before.get(kind, [])) if outside(n)) for kind in after}
    return {kind: names for kind, names in new.items() if names}


def restricted_kubeconfig(cluster: lifecycle.Cluster, namespace: str, dest: Path,
                          drop: str | None = None) -> Path:
    """A kubeconfig of ServiceAccount `kep5004-conformance` in `namespace`, bound to the suite's
    ClusterRole (without the rule for resource `drop`, to show a missing permission refused)."""
    objs = [o for o in incluster.manifest(PROFILE_PATH, "unused", namespace) if o["kind"] not in ("Job", "ConfigMap")]
    for o in objs:
        if o["kind"] == "ClusterRole" and drop:
            o["rules"] = [r for r in o["rules"] if drop not in r.get("resources", [])]
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objs))
    token = cluster.kubectl("create", "token", incluster.NAME, "-n", namespace, "--duration=3h").strip()
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    admin["users"] = [{"name": "restricted", "user": {"token": token}}]
    admin["contexts"] = [{"name": "restricted", "context": {"cluster": admin["clusters"][0]["name"], "user": "restricted"}}]
    admin["current-context"] = "restricted"
    dest.write_text(yaml.safe_dump(admin))
    return dest


def run_suite(kubeconfig: Path, out: Path) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "conformance.run", "--kubeconfig", str(kubeconfig), "--profile",
           str(PROFILE_PATH), "--out", str(out)]
    log(" ".join(cmd[1:]))
    done = subprocess.run(cmd, cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(done.stderr[-3000:])
    return done.returncode, done.stderr


def verdicts_of(summary: Path) -> dict[str, str]:
    return {r["id"]: r["verdict"] for r in json.loads(summary.read_text())["requirements"]}


def verdicts_in_log(text: str) -> dict[str, str]:
    line = next((l for l in text.splitlines() if l.startswith(incluster.VERDICTS_PREFIX)), None)
    return json.loads(line.split(" ", 1)[1]) if line else {}


def in_cluster_job(cluster: lifecycle.Cluster, image: str, out: Path) -> tuple[int, dict[str, str]]:
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(incluster.manifest(PROFILE_PATH, image)))
    tarball = out / incluster.TARBALL
    code = incluster.fetch(Api(cluster.kubeconfig), incluster.NAME, tarball, timeout=3600)
    with tarfile.open(tarball) as tar:
        tar.extractall(out / "job", filter="data")
    cluster.kubectl("delete", "namespace", incluster.NAME, "--wait=true")
    cluster.kubectl("delete", "clusterrole,clusterrolebinding", "-l", f"app.kubernetes.io/name={incluster.NAME}")
    return code, verdicts_of(out / "job" / "existing" / "summary.json")


def hydrophone_run(cluster: lifecycle.Cluster, image: str, out: Path) -> tuple[int, dict[str, str]]:
    binary = subprocess.run(["bash", str(REPO_ROOT / "clusters/toolchain/build-hydrophone.sh")], check=True,
                            stdout=subprocess.PIPE, text=True).stdout.strip()
    dest = out / "hydrophone"
    dest.mkdir(parents=True, exist_ok=True)
    # The output container only needs sh, cat and `sleep infinity`: the suite image has them.
    cmd = [binary, f"--kubeconfig={cluster.kubeconfig}", f"--conformance-image={image}", f"--busybox-image={image}",
           f"--output-dir={dest}", f"--extra-args=--profile={PROFILE_PATH.stem}",
           "--disable-progress-status"]
    log(" ".join(cmd))
    with (dest / "hydrophone.log").open("w") as output:
        code = subprocess.run(cmd, stdout=output, stderr=subprocess.STDOUT).returncode
    return code, verdicts_in_log((dest / "e2e.log").read_text() if (dest / "e2e.log").exists() else "")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog("conformance.vendor_check"), description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keep", action="store_true", help="keep the kind cluster")
    p.add_argument("--out", type=Path, default=REPORTS_DIR / "vendor-check")
    args = p.parse_args(argv)
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    images = BuiltImages.load()
    profile = profiles.load(str(PROFILE_PATH))
    cluster = lifecycle.ensure(ClusterSpec("dra", default_version()), images)
    results: dict[str, object] = {}
    try:
        cluster.load_images(images.suite)
        log(f"installing the driver by hand as profile {profile.name}")
        driver_setup.deploy_fake_driver(cluster.kubectl, profile, images.driver)
        admin = Api(cluster.kubeconfig)
        driver_setup.wait_published(admin, profile)

        refused_cfg = restricted_kubeconfig(cluster, "kep5004-refused", args.out / "refused.kubeconfig",
                                            drop="deviceclasses")
        code, err = run_suite(refused_cfg, args.out / "refused")
        results["missing permission"] = {"exit": code, "message": next(
            (l for l in err.splitlines() if "lack" in l), err.strip().splitlines()[-1:])}
        cluster.kubectl("delete", "namespace", "kep5004-refused", "--wait=true")
        cluster.kubectl("delete", "clusterrole,clusterrolebinding", f"{incluster.NAME}:kep5004-refused")

        restricted = restricted_kubeconfig(cluster, "kep5004-restricted", args.out / "restricted.kubeconfig")
        before = listing(admin)
        code, _ = run_suite(restricted, args.out / "out-of-cluster")
        after = listing(admin)
        leftovers = left_behind(before, after, profile.driver_namespace)
        outside = verdicts_of(args.out / "out-of-cluster" / "existing" / "summary.json")
        results["out of cluster (restricted SA)"] = {"exit": code, "left behind": leftovers,
                                                     "before": before, "after": after}
        cluster.kubectl("delete", "namespace", "kep5004-restricted", "--wait=true")
        cluster.kubectl("delete", "clusterrole,clusterrolebinding", f"{incluster.NAME}:kep5004-restricted")

        job_code, job = in_cluster_job(cluster, images.suite, args.out)
        results["in-cluster Job"] = {"exit": job_code, "same verdicts": job == outside,
                                     "differences": {k: (outside.get(k), job.get(k)) for k in set(job) | set(outside)
                                                     if job.get(k) != outside.get(k)}}
        hp_code, hp = hydrophone_run(cluster, images.suite, args.out)
        results["hydrophone"] = {"exit": hp_code, "same verdicts": hp == outside,
                                 "differences": {k: (outside.get(k), hp.get(k)) for k in set(hp) | set(outside)
                                                 if hp.get(k) != outside.get(k)}}
        results["verdict counts"] = {v: list(outside.values()).count(v) for v in sorted(set(outside.values()))}
    finally:
        (args.out / "results.json").write_text(json.dumps(results, indent=1))
        if not args.keep:
            lifecycle.delete(cluster.name)
    ok = (results.get("missing permission", {}).get("exit") == 2
          and results.get("out of cluster (restricted SA)", {}).get("exit") == 0
          and not results["out of cluster (restricted SA)"]["left behind"]
          and results.get("in-cluster Job", {}).get("same verdicts")
          and results.get("hydrophone", {}).get("same verdicts"))
    summary = {k: {f: v for f, v in r.items() if f not in ("before", "after")} if isinstance(r, dict) else r
               for k, r in results.items()}
    print(json.dumps(summary, indent=1))
    log(f"{'PASSED' if ok else 'FAILED'}; details in {args.out / 'results.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(guarded(main, sys.argv[1:], prog("conformance.vendor_check")))
