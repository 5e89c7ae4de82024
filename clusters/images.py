"""The locally built image tags (written by clusters/images/build-all.sh)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from clusters.paths import IN_CHECKOUT, REPO_ROOT, cache_root
from kube.versions import KubeVersion


class ImagesMissingError(RuntimeError):
    pass


def tags_file() -> Path:
    """The tags this checkout's last `make images` built (clusters/images/build-all.sh names the
    list by the checkout's path); an installed copy, or a checkout that never built, reads the
    last build of any checkout."""
    images = cache_root() / "images"
    own = images / f"tags-{hashlib.sha256(str(REPO_ROOT).encode()).hexdigest()[:12]}.env"
    return own if IN_CHECKOUT and own.exists() else images / "tags.env"


@dataclass(frozen=True)
class BuiltImages:
    tags: dict[str, str]

    @classmethod
    def load(cls) -> "BuiltImages":
        path = tags_file()
        if not path.exists():
            raise ImagesMissingError(f"{path} is missing: build the images first (make images)")
        pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
        return cls({k: v for k, v in pairs})

    def _get(self, key: str) -> str:
        try:
            return self.tags[key]
        except KeyError:
            raise ImagesMissingError(f"no {key} in the built image list: rebuild the images (make images)") from None

    def node(self, version: KubeVersion) -> str:
        return self._get("NODE_IMAGE_" + version.tag.replace(".", "_"))

    def components(self, version: KubeVersion) -> Path:
        """The archive of the version's control-plane component images."""
        return Path(self._get("COMPONENTS_" + version.tag.replace(".", "_")))

    @property
    def workload(self) -> str:
        return self._get("WORKLOAD_IMAGE")

    @property
    def driver(self) -> str:
        return self._get("DRIVER_IMAGE")

    @property
    def suite(self) -> str:
        """The conformance suite itself, for in-cluster runs (conformance/runner/incluster.py)."""
        return self._get("SUITE_IMAGE")
