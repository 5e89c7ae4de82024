"""Images go into workers from archives saved once per image id (no cluster needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusters import image_archives
from clusters.host import HostFacts
from clusters.topology import ClusterSpec, render
from kube.versions import KubeVersion

DRIVER = "kep5004/fake-gpu-driver:d1711741ed1a3fe5"
DRIVER_ID = "sha256:7b33d15da505b42837bb6ccce1092748b639bfda4c2add9fd5fdb246ceda43e2"
CONFIG_V3 = """version = 3
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
"""
CONFIG_V2 = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "fuse-overlayfs"
"""


class FakeNode:
    """A node whose containerd has the images in `present` (tag -> id); an import gives it the
    tag its archive was saved with, as `ctr images import` does."""

    def __init__(self, name: str, present: dict[str, str] | None = None, cri_lag: int = 0):
        self.name = name
        self.present = dict(present or {})
        self.imported: list[str] = []
        self.dumps = 0
        self.cri_lag = cri_lag  # looks after an import that do not see it yet
        self.unseen = 0

    def sh(self, script: str, input: str | None = None, timeout: float = 600) -> str:
        if script.startswith("crictl inspecti"):
            tag = script.split()[4]
            if self.unseen:
                self.unseen -= 1
                return ""
            return json.dumps({"status": {"id": self.present[tag]}}) if tag in self.present else ""
        if script == "containerd config dump":
            self.dumps += 1
            return CONFIG_V3
        if script.startswith("ctr "):
            self.imported.append(script)
            archive = image_archives.archives_dir() / Path(script.split()[-2]).name
            self.present.update(json.loads(archive.read_text()))
            self.unseen = self.cri_lag
            return ""
        raise AssertionError(f"unexpected command on {self.name}: {script}")


@pytest.fixture
def docker(monkeypatch, tmp_path: Path) -> list[list[str]]:
    """Docker as seen by the module: every tag names the driver image's id; `docker save` writes
    a file that records the tag it was given."""
    monkeypatch.setenv("KEP5004_CACHE", str(tmp_path))
    calls: list[list[str]] = []

    def run(cmd: list[str], timeout: float = 0) -> str:
        calls.append(cmd)
        if cmd[:3] == ["docker", "image", "inspect"]:
            return DRIVER_ID + "\n"
        if cmd[:2] == ["docker", "save"]:
            Path(cmd[3]).write_text(json.dumps({cmd[4]: DRIVER_ID}))
            return ""
        raise AssertionError(f"unexpected command {cmd}")

    monkeypatch.setattr(image_archives, "run", run)
    return calls


def test_archive_names_carry_the_repository_the_tag_and_the_image_id() -> None:
    assert (
        image_archives.archive_name(DRIVER, DRIVER_ID)
        == "kep5004_fake-gpu-driver--d1711741ed1a3fe5--7b33d15da505b428.tar"
    )
    assert (
        image_archives.archive_name("localhost:5000/gpu", DRIVER_ID)
        == "localhost_5000_gpu--latest--7b33d15da505b428.tar"
    )


def test_snapshotter_is_read_from_either_config_layout() -> None:
    assert image_archives.snapshotter(CONFIG_V3) == "overlayfs"
    assert image_archives.snapshotter(CONFIG_V2) == "fuse-overlayfs"
    assert image_archives.snapshotter("version = 3\n") == image_archives.DEFAULT_SNAPSHOTTER


def test_only_nodes_without_the_image_import_it_from_one_saved_archive(docker) -> None:
    has, lacks, stale = FakeNode("w1", {DRIVER: DRIVER_ID}), FakeNode("w2"), FakeNode("w3", {DRIVER: "sha256:0ld"})
    image_archives.load("c", [has, lacks, stale], [DRIVER])
    image_archives.load("c", [FakeNode("w4")], [DRIVER])
    assert len([c for c in docker if c[1] == "save"]) == 1
    assert has.imported == []
    for node in (lacks, stale):
        assert node.imported == [
            f"ctr --namespace=k8s.io images import --all-platforms --digests --snapshotter=overlayfs "
            f"{image_archives.IN_NODE}/kep5004_fake-gpu-driver--d1711741ed1a3fe5--7b33d15da505b428.tar >/dev/null"
        ]
        assert node.present[DRIVER] == DRIVER_ID


def test_two_tags_of_one_image_each_reach_the_node(docker) -> None:
    node, second = FakeNode("w1"), DRIVER.replace("d1711741ed1a3fe5", "v2")
    image_archives.load("c", [node], [DRIVER, second])
    assert node.present == {DRIVER: DRIVER_ID, second: DRIVER_ID}


def test_an_import_the_cri_learns_of_late_is_waited_for(docker) -> None:
    node = FakeNode("w1", cri_lag=2)
    image_archives.load("c", [node], [DRIVER])
    assert len(node.imported) == 1 and node.unseen == 0


def test_an_import_that_leaves_the_node_without_the_tag_is_an_error(docker, monkeypatch) -> None:
    node = FakeNode("w1")
    monkeypatch.setattr(image_archives, "CRI_SEES_IMPORT", 1)
    monkeypatch.setattr(node, "sh", lambda script, **_: "" if not script.startswith("containerd") else CONFIG_V3)
    with pytest.raises(image_archives.CommandError, match="waiting for w1: the CRI showing"):
        image_archives.load("c", [node], [DRIVER])


def test_a_new_image_replaces_the_repository_s_older_archive(docker) -> None:
    directory = image_archives.archives_dir()
    directory.mkdir(parents=True)
    older, other = (
        directory / "kep5004_fake-gpu-driver--0123456789abcdef.tar",
        directory / "kep5004_gpu-workload--0123.tar",
    )
    older.write_bytes(b"old")
    other.write_bytes(b"other")
    path = image_archives.ensure_archive(DRIVER, DRIVER_ID)
    assert json.loads(path.read_text()) == {DRIVER: DRIVER_ID} and not older.exists() and other.exists()


def test_only_workers_mount_the_archives() -> None:
    config = render(
        ClusterSpec("dra", KubeVersion(1, 37, 0)), HostFacts(cgroup_v1=False, has_cap_sys_resource=True), "node:x"
    )
    mounts = [n.get("extraMounts") for n in config["nodes"]]
    assert all(m["containerPath"] != image_archives.IN_NODE for m in mounts[0])
    assert (
        mounts[1:]
        == [
            [
                {
                    "hostPath": str(image_archives.archives_dir()),
                    "containerPath": image_archives.IN_NODE,
                    "readOnly": True,
                }
            ]
        ]
        * 2
    )


def test_a_node_s_snapshotter_is_read_once_for_all_its_images(docker) -> None:
    node = FakeNode("w1")
    image_archives.load("c", [node], [DRIVER, DRIVER.replace("fake-gpu-driver", "gpu-workload")])
    assert len(node.imported) == 2 and node.dumps == 1
