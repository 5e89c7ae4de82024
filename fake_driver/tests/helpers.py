"""Test helpers: a fake API server, claim fixtures, deadline-bound waiting, a fake container,
readiness as the kubelet asks for it."""

from __future__ import annotations

import copy
import itertools
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from fake_driver.dra_plugin.kube_api import Object

PROBE = Path(__file__).resolve().parent.parent / "probe" / "fake-gpu-probe"


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def ready(port: int) -> bool:
    """What the pod's readinessProbe sees: GET /readyz on `port` answers 200 (an answer of 503,
    or nothing listening, is not ready)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as response:
            return response.status == 200
    except (urllib.error.HTTPError, ConnectionError):
        return False
    except urllib.error.URLError as err:
        if isinstance(err.reason, ConnectionError):
            return False
        raise


def free_port() -> int:
    """A port nothing listens on now, for a plugin process of a test to serve readiness on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class FakeKubeApi:
    """In-memory KubeApi with the behaviour the plugin relies on (generateName, 404 -> None)."""

    def __init__(self, node_uid: str = "node-uid-1"):
        self.node_uid = node_uid
        self.claims: dict[tuple[str, str], Object] = {}
        self.slices: dict[str, Object] = {}
        self.calls: list[str] = []
        self._names = itertools.count()

    def add_claim(self, claim: Object) -> None:
        meta = claim["metadata"]
        self.claims[(meta["namespace"], meta["name"])] = claim

    def get_resource_claim(self, namespace: str, name: str) -> Object | None:
        self.calls.append(f"get_resource_claim {namespace}/{name}")
        claim = self.claims.get((namespace, name))
        return copy.deepcopy(claim) if claim else None

    def get_node_uid(self, name: str) -> str:
        return self.node_uid

    def list_resource_slices(self, driver: str, node_name: str) -> list[Object]:
        return [
            copy.deepcopy(s)
            for s in self.slices.values()
            if s["spec"]["driver"] == driver and s["spec"].get("nodeName") == node_name
        ]

    def create_resource_slice(self, body: Object) -> Object:
        self.calls.append("create_resource_slice")
        stored = copy.deepcopy(body)
        stored["metadata"]["name"] = stored["metadata"].pop("generateName") + f"x{next(self._names)}"
        self.slices[stored["metadata"]["name"]] = stored
        return copy.deepcopy(stored)

    def replace_resource_slice(self, name: str, body: Object) -> Object:
        self.calls.append(f"replace_resource_slice {name}")
        assert name in self.slices, f"replace of missing slice {name}"
        self.slices[name] = copy.deepcopy(body)
        return copy.deepcopy(body)

    def delete_resource_slice(self, name: str) -> None:
        self.calls.append(f"delete_resource_slice {name}")
        self.slices.pop(name, None)


def allocated_claim(namespace: str, name: str, uid: str, results: Iterable[tuple[str, str, str, str]]) -> Object:
    """A ResourceClaim as the scheduler leaves it; results are (request, driver, pool, device)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"namespace": namespace, "name": name, "uid": uid},
        "spec": {"devices": {"requests": []}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": r, "driver": d, "pool": p, "device": dev} for r, d, p, dev in results]
                }
            }
        },
    }


def fake_container(root: Path, mounts: Iterable[tuple[str, str]]) -> Path:
    """Emulate the runtime's bind mounts: copy each (host_path, container_path) file under root.
    Returns the directory that plays /run/fake-gpu."""
    probe_root = root / "run" / "fake-gpu"
    probe_root.mkdir(parents=True, exist_ok=True)
    for host_path, container_path in mounts:
        assert container_path.startswith("/run/fake-gpu/"), container_path
        target = root / container_path.lstrip("/")
        target.write_bytes(Path(host_path).read_bytes())
    return probe_root


def run_probe(probe_root: Path, env: Mapping[str, str], shell: str = "sh") -> str:
    result = subprocess.run(
        [*shell.split(), str(PROBE)],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "FAKE_GPU_PROBE_ROOT": str(probe_root), **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return result.stdout
